package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/csvrow"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/storage"
)

func ddl(t *testing.T, s string) Config {
	t.Helper()
	sc, err := schema.ParseDDL(s)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Schema: sc, CSV: csvrow.Options{Header: true}}
}

func TestIncrementalRunsReadEachFileOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long, v string")
	e.write("a.csv", "id,v\n1,a\n2,b\n", time.Minute)
	e.write("sub/b.json", `{"id":3,"v":"c"}`+"\n", time.Minute)
	got := e.mustRun(cfg, runOpts{})
	want := []string{`{"id":1,"v":"a","_rescued_data":null}`, `{"id":2,"v":"b","_rescued_data":null}`, `{"id":3,"v":"c","_rescued_data":null}`}
	if join(got.rows) != join(want) {
		t.Fatalf("run 1:\n%s\nwant\n%s", join(got.rows), join(want))
	}
	if got.lines[len(got.lines)-1] != "end pause" {
		t.Fatalf("run 1 ends with %q, want end pause", got.lines[len(got.lines)-1])
	}
	// Nothing new: nothing read.
	if got := e.mustRun(cfg, runOpts{}); len(got.rows) != 0 {
		t.Fatalf("run 2 read %q again", got.rows)
	}
	// New files between runs are read once; the old ones are not read again.
	e.write("c.csv", "id,v\n4,d\n", time.Minute)
	e.write("sub/deeper/d.ndjson", `{"id":5,"v":"e"}`+"\n", time.Minute)
	got = e.mustRun(cfg, runOpts{})
	want = []string{`{"id":4,"v":"d","_rescued_data":null}`, `{"id":5,"v":"e","_rescued_data":null}`}
	if join(sorted(got.rows)) != join(want) {
		t.Fatalf("run 3:\n%s\nwant\n%s", join(got.rows), join(want))
	}
}

func TestSameModificationTimeInDifferentListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	mt := e.clock.now().Add(-time.Hour)
	e.write("a.csv", "id\n1\n", 0)
	e.touch("a.csv", mt)
	if got := e.mustRun(cfg, runOpts{}); len(got.rows) != 1 {
		t.Fatalf("run 1: %q", got.rows)
	}
	// b.csv appears later with exactly the same modification time (a copy preserving times,
	// or a coarse clock): a time cutoff would skip it; the file set does not.
	e.write("b.csv", "id\n2\n", 0)
	e.touch("b.csv", mt)
	got := e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":2,"_rescued_data":null}` {
		t.Fatalf("run 2: %q", got.rows)
	}
	// And a file appearing late with an older time than everything read.
	e.write("old.csv", "id\n3\n", 0)
	e.touch("old.csv", mt.Add(-24*time.Hour))
	got = e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":3,"_rescued_data":null}` {
		t.Fatalf("run 3: %q", got.rows)
	}
}

func TestGrowingFileIsLeftUntilStable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	cfg.StableAfter = 2 * time.Second
	e.write("done.csv", "id\n1\n", time.Minute)
	p := e.write("growing.csv", "id\n2\n", 0) // just written
	// While the run waits for it to become stable, the writer appends: it is left for later.
	e.clock.onSleep = func(time.Duration) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString("3\n")
		f.Close()
		e.touch("growing.csv", e.clock.now())
	}
	got := e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":1,"_rescued_data":null}` {
		t.Fatalf("run 1 read %q; the growing file must wait", got.rows)
	}
	// Next run: it is still being written (modified just now) and grows again.
	got = e.mustRun(cfg, runOpts{})
	if len(got.rows) != 0 {
		t.Fatalf("run 2 read %q; the growing file must wait", got.rows)
	}
	// The writer is done; a run starting right after the last write waits StableAfter, sees
	// the same size and reads the whole file.
	e.clock.onSleep = nil
	got = e.mustRun(cfg, runOpts{})
	if join(got.rows) != join([]string{`{"id":2,"_rescued_data":null}`, `{"id":3,"_rescued_data":null}`, `{"id":3,"_rescued_data":null}`}) {
		t.Fatalf("run 3 read %q, want the complete file", got.rows)
	}
	if !strings.Contains(e.log.String(), "left files that are still being written") {
		t.Errorf("no log of the deferred file:\n%s", e.log.String())
	}
}

func TestHiddenAndTemporaryNamesAreSkipped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	e.write("ok.csv", "id\n1\n", time.Minute)
	for _, n := range []string{".hidden.csv", "_SUCCESS", "x.csv.tmp", "y.csv._COPYING_", "z.csv.crdownload", "_temporary/0/part.csv", ".staging/a.csv", "sub/_x.csv", "w.csv~"} {
		e.write(n, "id\n99\n", time.Minute)
	}
	got := e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":1,"_rescued_data":null}` {
		t.Fatalf("got %q", got.rows)
	}
	// Spelled out in the pattern, an underscore directory is read.
	e2 := newEnv(t)
	e2.write("_staging/a.csv", "id\n7\n", time.Minute)
	cfg.Patterns = []string{filepath.Join(e2.dir, "_staging", "*.csv")}
	got = e2.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":7,"_rescued_data":null}` {
		t.Fatalf("literal _staging: got %q", got.rows)
	}
}

func TestPatternsGlobsAndDedup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	e.write("2025/01/a.csv", "id\n1\n", time.Minute)
	e.write("2025/02/b.csv", "id\n2\n", time.Minute)
	e.write("2025/02/c.json", `{"id":3}`+"\n", time.Minute)
	e.write("2024/12/d.csv", "id\n4\n", time.Minute)
	// Overlapping patterns: each file once.
	cfg.Patterns = []string{filepath.Join(e.dir, "2025/**/*.csv"), filepath.Join(e.dir, "2025/02/*"), filepath.Join(e.dir, "nothing/*.csv")}
	got := e.mustRun(cfg, runOpts{noCheckpoint: true})
	want := []string{`{"id":1,"_rescued_data":null}`, `{"id":2,"_rescued_data":null}`, `{"id":3,"_rescued_data":null}`}
	if join(sorted(got.rows)) != join(want) {
		t.Fatalf("got %q", got.rows)
	}
	if got.lines[len(got.lines)-1] != "end final" {
		t.Fatalf("without a checkpoint the run must end final: %q", got.lines)
	}
}

func TestReplayAfterSinkCrashIsExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	var all []string
	for f := 0; f < 4; f++ {
		var b strings.Builder
		b.WriteString("id\n")
		for i := 0; i < 7; i++ {
			id := f*100 + i
			fmt.Fprintf(&b, "%d\n", id)
			all = append(all, fmt.Sprintf(`{"id":%d,"_rescued_data":null}`, id))
		}
		e.write(fmt.Sprintf("f%d.csv", f), b.String(), time.Duration(10-f)*time.Minute)
	}
	// Batches of 3 rows, one clock second per Read, epochs every 2 s: epochs end inside files.
	o := runOpts{batchRows: 3, tick: time.Second, epochInterval: 2 * time.Second, fail: 4}
	s1, _, oerr := e.run(cfg, o)
	if oerr == nil || !strings.Contains(oerr.Error(), "sink crashed") {
		t.Fatalf("sink should crash at epoch 4: %v", oerr)
	}
	// Rows the sink committed: everything before barrier 3.
	var committed []string
	for _, l := range s1.lines {
		if l == "barrier 3" {
			break
		}
		if strings.HasPrefix(l, "{") {
			committed = append(committed, l)
		}
	}
	wal := e.wal()
	if p := wal[2]; p.Row == 0 {
		t.Fatalf("epoch 2 should end inside a file: %+v", p)
	}
	o.fail = 0
	s2 := e.mustRun(cfg, o)
	got := append(append([]string(nil), committed...), s2.rows...)
	if join(got) != join(all) {
		t.Fatalf("committed + replayed rows:\n%s\nwant each row once, in order:\n%s", join(got), join(all))
	}
	// The replay reproduced epoch 4 (uncommitted) exactly as the first run had it.
	first4 := s1.lines[indexOf(s1.lines, "barrier 3")+1:]
	again4 := s2.lines[:indexOf(s2.lines, "barrier 4")]
	if len(first4) == 0 || join(first4) != join(again4) {
		t.Fatalf("epoch 4 replayed as\n%s\nfirst run had\n%s", join(again4), join(first4))
	}
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return len(xs)
}

func TestEpochFileListsAndLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	cfg.MaxFilesPerEpoch = 2
	for i := 0; i < 5; i++ {
		e.write(fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id\n%d\n", i), time.Duration(10-i)*time.Minute)
	}
	got := e.mustRun(cfg, runOpts{})
	if len(got.rows) != 5 {
		t.Fatalf("rows %q", got.rows)
	}
	wal := e.wal()
	var lists []string
	for n := uint64(1); n <= 3; n++ {
		p, ok := wal[n]
		if !ok {
			t.Fatalf("no WAL entry for epoch %d: %v", n, wal)
		}
		var names []string
		for _, f := range p.Files {
			if f.Size <= 0 || f.MTime == 0 || len(f.FP) != 32 {
				t.Errorf("epoch %d file %+v lacks size, mtime or fingerprint", n, f)
			}
			names = append(names, fmt.Sprintf("%d:%s", f.Index, filepath.Base(f.Path)))
		}
		lists = append(lists, strings.Join(names, ","))
	}
	want := "0:f0.csv,1:f1.csv | 2:f2.csv,3:f3.csv | 4:f4.csv"
	if strings.Join(lists, " | ") != want {
		t.Fatalf("epoch file lists %q, want %q", strings.Join(lists, " | "), want)
	}
	if p := wal[3]; p.Next != 5 || p.Row != 0 {
		t.Fatalf("last position %+v", p)
	}

	// Bytes: each file is 4 or 5 bytes; 8 bytes per epoch → 2 files per epoch.
	e2 := newEnv(t)
	cfg2 := ddl(t, "id long")
	cfg2.MaxBytesPerEpoch = 8
	for i := 0; i < 3; i++ {
		e2.write(fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id\n%d\n", i), time.Duration(10-i)*time.Minute)
	}
	got = e2.mustRun(cfg2, runOpts{})
	if n := strings.Count(join(got.lines), "barrier"); n != 2 {
		t.Fatalf("max bytes: %d epochs, want 2: %q", n, got.lines)
	}
}

func TestOnRewrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy Rewrite
		want   string // rows of the second run, or the error
	}{
		{RewriteSkip, ""},
		{RewriteReprocess, `{"id":2,"_rescued_data":null}|{"id":3,"_rescued_data":null}`},
		{RewriteFail, "changed after it was read"},
	} {
		t.Run(fmt.Sprint(tt.policy), func(t *testing.T) {
			e := newEnv(t)
			cfg := ddl(t, "id long")
			cfg.OnRewrite = tt.policy
			e.write("a.csv", "id\n1\n", time.Hour)
			e.write("b.csv", "id\n5\n", time.Hour)
			e.mustRun(cfg, runOpts{})
			// Only touched: same content, ignored under every policy.
			e.touch("b.csv", e.clock.now().Add(-30*time.Minute))
			// Rewritten in place.
			e.write("a.csv", "id\n2\n3\n", time.Minute)
			s, serr, oerr := e.run(cfg, runOpts{})
			if tt.policy == RewriteFail {
				if serr == nil || !strings.Contains(serr.Error(), tt.want) || !strings.Contains(serr.Error(), "a.csv") {
					t.Fatalf("got %v, want an error naming a.csv", serr)
				}
				return
			}
			if serr != nil || oerr != nil {
				t.Fatal(serr, oerr)
			}
			if got := strings.Join(s.rows, "|"); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if tt.policy == RewriteSkip && !strings.Contains(e.log.String(), "changed after it was read") {
				t.Errorf("no warning:\n%s", e.log.String())
			}
			if strings.Count(e.log.String(), "changed after it was read") > 1 {
				t.Errorf("the touched file b.csv was treated as rewritten:\n%s", e.log.String())
			}
			// The skipped versions are recorded: a third run neither reads nor warns again.
			e.log.Reset()
			if s := e.mustRun(cfg, runOpts{}); len(s.rows) != 0 || strings.Contains(e.log.String(), "changed after") {
				t.Fatalf("third run: rows %q\n%s", s.rows, e.log.String())
			}
		})
	}
}

func TestMetadataColumn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	cfg.WithMetadata = true
	p := e.write("a.csv", "id\n1\n\n2\n", time.Minute)
	fi, _ := os.Stat(p)
	got := e.mustRun(cfg, runOpts{keepMeta: true})
	mt := fi.ModTime().UTC().Format("2006-01-02T15:04:05.999999Z")
	want := []string{
		fmt.Sprintf(`{"id":1,"_rescued_data":null,"_metadata":{"byte_offset":3,"file_modification_time":%q,"file_name":"a.csv","file_path":%q,"file_size":8,"line":2,"row_index":0}}`, mt, p),
		fmt.Sprintf(`{"id":2,"_rescued_data":null,"_metadata":{"byte_offset":6,"file_modification_time":%q,"file_name":"a.csv","file_path":%q,"file_size":8,"line":4,"row_index":1}}`, mt, p),
	}
	if join(got.rows) != join(want) {
		t.Fatalf("got\n%s\nwant\n%s", join(got.rows), join(want))
	}
}

func TestSchemaIsFixedByTheFirstRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.json", `{"id":1,"name":"x"}`+"\n", time.Minute)
	got := e.mustRun(Config{}, runOpts{})
	if s := schema.DDL(got.schema); s != "id bigint, name string, _rescued_data string" {
		t.Fatalf("inferred %s", s)
	}
	// A later file disagrees: the schema stays, the value is rescued (not silently widened).
	e.write("b.json", `{"id":"two","name":"y","new":true}`+"\n", time.Minute)
	got = e.mustRun(Config{}, runOpts{})
	if s := schema.DDL(got.schema); s != "id bigint, name string, _rescued_data string" {
		t.Fatalf("second run schema %s", s)
	}
	p := filepath.Join(e.dir, "b.json")
	want := `{"id":null,"name":"y","_rescued_data":"{\"new\":true,\"id\":\"two\",\"_file\":\"` + p + `\"}"}`
	if join(got.rows) != want {
		t.Fatalf("got  %s\nwant %s", join(got.rows), want)
	}
	// Restarting the checkpoint with a --schema that differs is refused.
	_, serr, _ := e.run(ddl(t, "id string"), runOpts{})
	if serr == nil || !strings.Contains(serr.Error(), "checkpoint") {
		t.Fatalf("got %v", serr)
	}
}

func TestInferenceWidensAcrossFilesAndHints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("a.json", `{"id":1,"v":1}`+"\n", 2*time.Minute)
	e.write("b.json", `{"id":2,"v":1.5,"w":"2024-01-01T00:00:00Z"}`+"\n", time.Minute)
	hints, err := schema.ParseHints("id string")
	if err != nil {
		t.Fatal(err)
	}
	got := e.mustRun(Config{Hints: hints}, runOpts{noCheckpoint: true})
	if s := schema.DDL(got.schema); s != "id string, v double, w timestamp, _rescued_data string" {
		t.Fatalf("schema %s", s)
	}
	want := `{"id":"1","v":1,"w":null,"_rescued_data":null}` + "\n" + `{"id":"2","v":1.5,"w":"2024-01-01T00:00:00Z","_rescued_data":null}`
	if join(got.rows) != want {
		t.Fatalf("got\n%s\nwant\n%s", join(got.rows), want)
	}
}

func TestNothingToInferFrom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, serr, _ := e.run(Config{}, runOpts{})
	if serr == nil || !strings.Contains(serr.Error(), "give --schema") {
		t.Fatalf("got %v", serr)
	}
}

func TestFilesLogCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := fileLog{store: localStore(t, dir)}
	var entries []*Entry
	for i := 0; i < 150; i++ {
		first := len(entries)
		entries = append(entries, &Entry{Path: fmt.Sprintf("/x/%d", i), Size: int64(i), MTime: int64(i), FP: "fp"})
		if err := l.append(entries, first); err != nil {
			t.Fatal(err)
		}
	}
	des, _ := os.ReadDir(dir)
	if len(des) >= compactAfter {
		t.Fatalf("%d records after 150 appends: not compacted", len(des))
	}
	l2 := fileLog{store: localStore(t, dir)}
	got, err := l2.load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 || got[149].Path != "/x/149" || got[0].Path != "/x/0" {
		t.Fatalf("reloaded %d entries", len(got))
	}
	// A crash between writing the compacted record and deleting the older ones is harmless.
	if err := l2.append(append(got, &Entry{Path: "/x/150"}), 150); err != nil {
		t.Fatal(err)
	}
	got, err = (&fileLog{store: localStore(t, dir)}).load()
	if err != nil || len(got) != 151 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
}

// localStore is the local store over dir, as Source.Open makes it for a checkpoint on disk.
func localStore(t *testing.T, dir string) storage.Store {
	t.Helper()
	st, err := storage.Local(dir, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTimeZone sets time.Local, so it does not run in parallel.
func TestTimeZone(t *testing.T) {
	// The machine's zone must never leak in: pretend it is New York.
	old := time.Local
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	time.Local = ny
	defer func() { time.Local = old }()
	e := newEnv(t)
	e.write("a.csv", "ts\n2024-07-01 12:00:00\n2024-07-01T12:00:00+02:00\n", time.Minute)
	cfg := ddl(t, "ts timestamp")
	got := e.mustRun(cfg, runOpts{noCheckpoint: true})
	want := `{"ts":"2024-07-01T12:00:00Z","_rescued_data":null}` + "\n" + `{"ts":"2024-07-01T10:00:00Z","_rescued_data":null}`
	if join(got.rows) != want {
		t.Fatalf("UTC default:\n%s\nwant\n%s", join(got.rows), want)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	cfg.Location = paris
	got = e.mustRun(cfg, runOpts{noCheckpoint: true})
	want = `{"ts":"2024-07-01T10:00:00Z","_rescued_data":null}` + "\n" + `{"ts":"2024-07-01T10:00:00Z","_rescued_data":null}`
	if join(got.rows) != want {
		t.Fatalf("--tz Europe/Paris:\n%s\nwant\n%s", join(got.rows), want)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := Config{Patterns: []string{"-"}, Format: "json", Stdin: strings.NewReader(`{"a":1}` + "\n" + `{"a":2,"b":"x"}` + "\n")}
	got := e.mustRun(cfg, runOpts{noCheckpoint: true})
	if join(got.rows) != `{"a":1,"b":null,"_rescued_data":null}`+"\n"+`{"a":2,"b":"x","_rescued_data":null}` {
		t.Fatalf("got %q", got.rows)
	}
	_, serr, _ := e.run(Config{Patterns: []string{"-"}, Format: "json", Stdin: strings.NewReader("{}")}, runOpts{})
	if serr == nil || !strings.Contains(serr.Error(), "stdin") {
		t.Fatalf("stdin with a checkpoint: %v", serr)
	}
	if _, err := New(Config{Patterns: []string{"-"}}); err == nil {
		t.Fatal("stdin without --format accepted")
	}
}

func TestVanishedFileIsSkipped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	cfg.MaxFilesPerEpoch = 1
	e.write("a.csv", "id\n1\n", 2*time.Minute)
	e.write("b.csv", "id\n2\n", time.Minute)
	// Plan both, crash the sink after epoch 1 so b is planned but never committed, delete b.
	_, _, oerr := e.run(cfg, runOpts{fail: 2})
	if oerr == nil {
		t.Fatal("sink should crash")
	}
	os.Remove(filepath.Join(e.dir, "b.csv"))
	got, serr, oerr := e.run(cfg, runOpts{})
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	if len(got.rows) != 0 || !strings.Contains(e.log.String(), "vanished") {
		t.Fatalf("rows %q\n%s", got.rows, e.log.String())
	}
}

// cornerCSV has a BOM at byte 0, CRLF line ends, quoted delimiters, doubled quotes, a quoted
// CRLF, a quoted empty string, a ragged row, a short row, a BOM that is data, and an
// unterminated quote at the end.
const cornerCSV = "\xEF\xBB\xBFid,name,note\r\n" +
	"1,\"a,b\",\"say \"\"hi\"\"\"\r\n" +
	"2,\"multi\r\nline\",x\r\n" +
	"3,\"\",\r\n" +
	"4,ragged,x,extra\r\n" +
	"5,short\r\n" +
	"6,\xEF\xBB\xBFbom-inside,y\r\n" +
	"7,\"unterminated\r\n"

func cornerWant(path string) string {
	return strings.Join([]string{
		`{"id":1,"name":"a,b","note":"say \"hi\"","_rescued_data":null}`,
		`{"id":2,"name":"multi\r\nline","note":"x","_rescued_data":null}`,
		`{"id":3,"name":"","note":null,"_rescued_data":null}`,
		`{"id":4,"name":"ragged","note":"x","_rescued_data":"{\"_c3\":\"extra\",\"_file\":\"` + path + `\"}"}`,
		`{"id":5,"name":"short","note":null,"_rescued_data":null}`,
		`{"id":6,"name":"` + "\xEF\xBB\xBF" + `bom-inside","note":"y","_rescued_data":null}`,
	}, "\n")
}

// TestCSVCornerCasesAtEveryBufferBoundary reads cornerCSV with every read-buffer size from 1
// byte to the whole file, so every quote, CR, LF and delimiter falls on a chunk boundary
// somewhere; the rows and the bad record must not change.
func TestCSVCornerCasesAtEveryBufferBoundary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.write("corner.csv", cornerCSV, time.Minute)
	want := cornerWant(p)
	for size := 1; size <= len(cornerCSV)+1; size++ {
		cfg := ddl(t, "id long, name string, note string")
		cfg.BufferSize = size
		cfg.BadRecords = filepath.Join(t.TempDir(), "bad.ndjson")
		got := e.mustRun(cfg, runOpts{noCheckpoint: true, batchRows: 1 + size%4})
		if join(got.rows) != want {
			t.Fatalf("buffer %d:\n%s\nwant\n%s", size, join(got.rows), want)
		}
		bad, _ := os.ReadFile(cfg.BadRecords)
		wantBad := `{"file":"` + p + `","line":9,"offset":111,"reason":"unterminated quoted field","raw":"7,\"unterminated\r\n"}` + "\n"
		if string(bad) != wantBad {
			t.Fatalf("buffer %d: bad records\n%s\nwant\n%s", size, bad, wantBad)
		}
	}
}

func TestUnknownFormatIsSkippedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	e.write("a.csv", "id\n1\n", time.Minute)
	e.write("README.txt", "hello\n", time.Minute)
	got := e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":1,"_rescued_data":null}` || !strings.Contains(e.log.String(), "README.txt") {
		t.Fatalf("rows %q\n%s", got.rows, e.log.String())
	}
	e.log.Reset()
	e.mustRun(cfg, runOpts{})
	if strings.Contains(e.log.String(), "README.txt") {
		t.Fatalf("warned twice:\n%s", e.log.String())
	}
	// Named literally, it is a usage error.
	if _, err := New(Config{Patterns: []string{filepath.Join(e.dir, "README.txt")}}); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Fatalf("got %v", err)
	}
}

// writeArrow writes an Arrow IPC file with one batch built from JSON rows.
func writeArrow(t *testing.T, path, ddlText, rows string, mtime time.Time) {
	t.Helper()
	sc, err := schema.ParseDDL(ddlText)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(sc))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()
	os.Chtimes(path, mtime, mtime)
}

// TestBinaryFilesConformByName: the first typed file fixes the schema; a later file with a
// castable type, an uncastable column, an extra column and a missing one conforms by name,
// with nothing lost (rescued) — and with an explicit --schema the extra column is not read.
func TestBinaryFilesConformByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := e.clock.now().Add(-time.Hour)
	writeArrow(t, filepath.Join(e.dir, "a.arrow"), "id long, name string, x long", `[{"id":1,"name":"a","x":10}]`, old)
	b := filepath.Join(e.dir, "b.arrow")
	writeArrow(t, b, "id int, x string, extra boolean", `[{"id":2,"x":"notnum","extra":true},{"id":3,"x":null,"extra":null}]`, old.Add(time.Second))
	got := e.mustRun(Config{}, runOpts{noCheckpoint: true})
	want := []string{
		`{"id":1,"name":"a","x":10,"_rescued_data":null}`,
		`{"id":2,"name":null,"x":null,"_rescued_data":"{\"x\":\"notnum\",\"extra\":true,\"_file\":\"` + b + `\"}"}`,
		`{"id":3,"name":null,"x":null,"_rescued_data":null}`,
	}
	if join(got.rows) != join(want) {
		t.Fatalf("inferred:\n%s\nwant\n%s", join(got.rows), join(want))
	}
	got = e.mustRun(ddl(t, "id long, name string"), runOpts{noCheckpoint: true})
	want = []string{`{"id":1,"name":"a","_rescued_data":null}`, `{"id":2,"name":null,"_rescued_data":null}`, `{"id":3,"name":null,"_rescued_data":null}`}
	if join(got.rows) != join(want) {
		t.Fatalf("--schema:\n%s\nwant\n%s", join(got.rows), join(want))
	}
}

// TestChangedBetweenListingAndReading: a planned file rewritten before it is read is not read
// half-old half-new; its new version is planned by a later listing once stable, and read once.
func TestChangedBetweenListingAndReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := ddl(t, "id long")
	cfg.MaxFilesPerEpoch = 1
	e.write("a.csv", "id\n1\n", 2*time.Minute)
	e.write("b.csv", "id\n2\n", time.Minute)
	got := e.mustRun(cfg, runOpts{beforeRead: func(n int) {
		if n == 1 { // a.csv was read; b.csv is planned but not opened yet
			e.write("b.csv", "id\n20\n21\n", 0)
		}
	}})
	if join(got.rows) != `{"id":1,"_rescued_data":null}` || !strings.Contains(e.log.String(), "changed between its listing and its reading") {
		t.Fatalf("run 1: %q\n%s", got.rows, e.log.String())
	}
	e.clock.advance(time.Minute)
	got = e.mustRun(cfg, runOpts{})
	if join(got.rows) != `{"id":20,"_rescued_data":null}`+"\n"+`{"id":21,"_rescued_data":null}` {
		t.Fatalf("run 2: %q\n%s", got.rows, e.log.String())
	}
	if got := e.mustRun(cfg, runOpts{}); len(got.rows) != 0 {
		t.Fatalf("run 3 read %q again", got.rows)
	}
}
