package readfiles_test

// End-to-end tests of the built binary: `streamkit read-files … | streamkit print …` as a
// user runs it (cron loops, kill -9, bad inputs, time zones).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// shell runs script with sh in dir and returns stdout, stderr and the exit code.
func shell(t *testing.T, dir string, env []string, script string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SK="+peertest.Binary(t)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func write(t *testing.T, path, data string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestCronLoop runs read-files | print from "cron" 20 times while files keep arriving (some
// with equal modification times, some nested, some still fresh, some hidden or temporary) and
// checks that every row is printed exactly once: `sort | uniq -d` is empty, counts match.
func TestCronLoop(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	want := 0
	script := `"$SK" read-files --progress off --checkpoint ck/read --stable-after 300ms 'in/**/*.csv' 'in/**/*.ndjson' 2>>err.log | "$SK" print --checkpoint ck/print --format json >> out.ndjson`
	for run := 0; run < 20; run++ {
		for k := 0; k < 1+rng.Intn(3); k++ {
			name := fmt.Sprintf("in/d%d/f%02d_%d", rng.Intn(3), run, k)
			mt := base.Add(time.Duration(run/3) * time.Second) // several files share a time
			if rng.Intn(4) == 0 {
				mt = time.Time{} // just written: read after --stable-after
			}
			var b strings.Builder
			n := 1 + rng.Intn(50)
			if k%2 == 0 {
				b.WriteString("id,run\n")
				for i := 0; i < n; i++ {
					fmt.Fprintf(&b, "%d_%d_%d,%d\n", run, k, i, run)
				}
				write(t, filepath.Join(dir, name+".csv"), b.String(), mt)
			} else {
				for i := 0; i < n; i++ {
					fmt.Fprintf(&b, `{"id":"%d_%d_%d","run":%d}`+"\n", run, k, i, run)
				}
				write(t, filepath.Join(dir, name+".ndjson"), b.String(), mt)
			}
			want += n
		}
		// Files that must never be read.
		write(t, filepath.Join(dir, fmt.Sprintf("in/.hidden%d.csv", run)), "id,run\nhidden,0\n", base)
		write(t, filepath.Join(dir, fmt.Sprintf("in/x%d.csv.tmp", run)), "id,run\ntmp,0\n", base)
		_, _, code := shell(t, dir, nil, script)
		if code != 0 {
			log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
			t.Fatalf("run %d exit %d\n%s", run, code, log)
		}
	}
	dups, _, code := shell(t, dir, nil, `sort out.ndjson | uniq -d`)
	if code != 0 || dups != "" {
		t.Fatalf("rows printed twice:\n%s", dups)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "out.ndjson"))
	lines := nonEmptyLines(string(out))
	if len(lines) != want {
		t.Fatalf("%d rows printed, want %d", len(lines), want)
	}
	for _, l := range lines {
		if strings.Contains(l, "hidden") || strings.Contains(l, "tmp") || !strings.Contains(l, `"_rescued_data":null`) {
			t.Fatalf("unexpected row %s", l)
		}
	}
}

// rowsUpTo returns the data rows printed before the barrier of epoch c (none when that
// barrier was not printed).
func rowsUpTo(lines []string, c uint64) []string {
	var rows []string
	stop := fmt.Sprintf(`{"_control":"barrier","epoch":%d}`, c)
	for _, l := range lines {
		if l == stop {
			return rows
		}
		if !strings.HasPrefix(l, `{"_control"`) {
			rows = append(rows, l)
		}
	}
	return nil
}

// TestKill9Restart kills read-files (or print) with SIGKILL in the middle of a run, restarts
// the pipeline, and checks that the rows of the committed epochs plus the restarted run's
// rows are every row exactly once: nothing read twice downstream of the committed epoch,
// nothing skipped.
func TestKill9Restart(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 loop")
	}
	dir := t.TempDir()
	bin := peertest.Binary(t)
	old := time.Now().Add(-time.Hour)
	var all []string
	for f := 0; f < 200; f++ {
		var b strings.Builder
		b.WriteString("id,f\n")
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&b, "%d,%d\n", f*1000+i, f)
			all = append(all, fmt.Sprintf(`{"id":%d,"f":%d,"_rescued_data":null}`, f*1000+i, f))
		}
		write(t, filepath.Join(dir, "in", fmt.Sprintf("f%03d.csv", f)), b.String(), old.Add(time.Duration(f)*time.Millisecond))
	}
	// Each run replays from the committed epoch: the first barrier it prints is prev+1, so
	// the rows it printed before the barrier of the epoch committed when it ended are exactly
	// the rows of the epochs it committed.
	var kept []string
	var prev uint64
	rng := rand.New(rand.NewSource(1))
	for round := 0; ; round++ {
		kill := round < 6
		killSink := round%2 == 1
		lines, code := runPipeline(t, bin, dir, kill, killSink, 2000+rng.Intn(30000))
		// print writes its commit marker into read-files' directory first, then its own; a
		// kill in between leaves read-files' marker ahead — and that one decides the replay.
		// Either way the epoch's rows were printed (print flushes before committing).
		c, err := state.Committed(filepath.Join(dir, "ck", "read"))
		if err != nil {
			t.Fatal(err)
		}
		if !kill && code != 0 {
			t.Fatalf("final run exit %d", code)
		}
		if c > prev {
			kept = append(kept, rowsUpTo(lines, c)...)
		}
		t.Logf("round %d: kill %v (sink %v): committed epoch %d → %d, %d rows printed, %d kept so far", round, kill, killSink, prev, c, len(lines), len(kept))
		prev = c
		if !kill {
			break
		}
	}
	if len(kept) != len(all) {
		count := map[string]int{}
		for _, r := range kept {
			var v struct{ F int }
			json.Unmarshal([]byte(r), &v)
			count[fmt.Sprint(v.F)]++
		}
		var odd []string
		for f := 0; f < 200; f++ {
			if n := count[fmt.Sprint(f)]; n != 1000 {
				odd = append(odd, fmt.Sprintf("f%03d:%d", f, n))
			}
		}
		t.Fatalf("%d rows delivered in committed epochs, want %d; files with other counts: %v", len(kept), len(all), odd)
	}
	sort.Strings(kept)
	sort.Strings(all)
	for i := range all {
		if kept[i] != all[i] {
			t.Fatalf("row %d: got %s, want %s (a row was read twice or skipped)", i, kept[i], all[i])
		}
	}
}

// runPipeline runs read-files | print --show-control; with kill it SIGKILLs read-files (or
// print when killSink) once print has written killAfter lines. It returns print's output
// lines and whether the unkilled run failed.
func runPipeline(t *testing.T, bin, dir string, kill, killSink bool, killAfter int) ([]string, int) {
	t.Helper()
	src := exec.Command(bin, "read-files", "--progress", "off", "--checkpoint", "ck/read", "--stable-after", "0",
		"--max-files-per-epoch", "3", "--epoch-interval", "20ms", "--batch-rows", "100", "in/*.csv")
	snk := exec.Command(bin, "print", "--progress", "off", "--checkpoint", "ck/print", "--format", "json", "--show-control")
	src.Dir, snk.Dir = dir, dir
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var serr1, serr2 bytes.Buffer
	src.Stdout, src.Stderr = pw, &serr1
	snk.Stdin, snk.Stdout, snk.Stderr = pr, outW, &serr2
	if err := src.Start(); err != nil {
		t.Fatal(err)
	}
	if err := snk.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	pr.Close()
	outW.Close()
	var lines []string
	sc := bufio.NewScanner(outR)
	killed := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if kill && !killed && len(lines) >= killAfter {
			victim := src
			if killSink {
				victim = snk
			}
			victim.Process.Kill()
			killed = true
		}
	}
	outR.Close()
	e1, e2 := src.Wait(), snk.Wait()
	code := 0
	if !kill && (e1 != nil || e2 != nil) {
		t.Logf("read-files: %v\n%s\nprint: %v\n%s", e1, serr1.String(), e2, serr2.String())
		code = 1
	}
	if kill && !killed {
		t.Logf("the run ended before %d lines; nothing killed", killAfter)
	}
	return lines, code
}

// TestBadInputs: bad inputs give exit codes and messages naming the file and line; nothing
// panics.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write(t, filepath.Join(dir, "broken.ndjson"), `{"id":1}`+"\n"+`{"id":2,`+"\n"+`{"id":3}`+"\n", old)
	write(t, filepath.Join(dir, "typed.csv"), "id,v\n1,2\n2,x\n", old)
	write(t, filepath.Join(dir, "quote.csv"), "id,v\n1,\"open\n", old)
	write(t, filepath.Join(dir, "bad.csv.gz"), "\x1f\x8b\x08\x00garbage-garbage-garbage", old)
	write(t, filepath.Join(dir, "trunc.parquet"), "PAR1\x00\x00\x00", old)
	write(t, filepath.Join(dir, "notes.txt"), "hello\n", old)
	tests := []struct {
		name   string
		script string
		code   int
		want   []string // substrings of stderr
	}{
		{"failfast json", `"$SK" read-files --mode failfast --schema 'id long' broken.ndjson`, 1, []string{"broken.ndjson", "line 2", "failfast"}},
		{"failfast csv mistyped", `"$SK" read-files --mode failfast --schema 'id long, v long' typed.csv`, 1, []string{"typed.csv", "line 3", "v"}},
		{"permissive counts", `"$SK" read-files --schema 'id long' --bad-records bad.ndjson broken.ndjson quote.csv`, 0, []string{"bad_records=2", "bad.ndjson"}},
		{"corrupt gzip", `"$SK" read-files --schema 'id long' bad.csv.gz`, 1, []string{"bad.csv.gz"}},
		{"truncated parquet", `"$SK" read-files trunc.parquet`, 1, []string{"trunc.parquet"}},
		{"unknown format", `"$SK" read-files --schema 'a string' notes.txt`, 2, []string{"notes.txt", "--format"}},
		{"no pattern", `"$SK" read-files`, 2, []string{"PATTERN"}},
		{"bad mode", `"$SK" read-files --mode lenient x.csv`, 2, []string{"--mode"}},
		{"local tz", `"$SK" read-files --tz Local x.csv`, 2, []string{"--tz"}},
		{"bad schema", `"$SK" read-files --schema 'id lung' x.csv`, 2, []string{"--schema"}},
		{"missing schema file", `"$SK" read-files --schema @nope.ddl x.csv`, 2, []string{"nope.ddl"}},
		{"bad rewrite", `"$SK" read-files --on-rewrite maybe x.csv`, 2, []string{"--on-rewrite"}},
		{"bad glob", `"$SK" read-files 'in/[a'`, 2, []string{"in/[a"}},
		{"no files to infer", `"$SK" read-files 'none/*.csv'`, 1, []string{"--schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := shell(t, dir, nil, tt.script+" > /dev/null")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("panic:\n%s", stderr)
			}
		})
	}
	// The bad-records file: one NDJSON object per record with file, line, offset, reason, raw.
	b, err := os.ReadFile(filepath.Join(dir, "bad.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range nonEmptyLines(string(b)) {
		var r struct {
			File   string `json:"file"`
			Line   int64  `json:"line"`
			Offset int64  `json:"offset"`
			Reason string `json:"reason"`
			Raw    string `json:"raw"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad-records line %q: %v", l, err)
		}
		if r.Reason == "" {
			t.Errorf("no reason: %s", l)
		}
		got = append(got, fmt.Sprintf("%s:%d@%d %q", filepath.Base(r.File), r.Line, r.Offset, r.Raw))
	}
	want := []string{`broken.ndjson:2@9 "{\"id\":2,"`, `quote.csv:2@5 "1,\"open\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("bad records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTimeZoneNeverTheMachines: the same input gives identical output under TZ=UTC and
// TZ=America/New_York, with and without --tz.
func TestTimeZoneNeverTheMachines(t *testing.T) {
	dir := t.TempDir()
	old := time.Date(2024, 11, 3, 5, 30, 0, 0, time.UTC) // around a New York DST change
	write(t, filepath.Join(dir, "a.csv"), "ts,d\n2024-11-03 01:30:00,2024-11-03\n2024-03-10T02:30:00,2024-03-10\n2024-07-01T12:00:00+02:00,2024-07-01\n", old)
	write(t, filepath.Join(dir, "b.ndjson"), `{"ts":"2024-11-03 01:30:00","d":"2024-11-03"}`+"\n", old)
	outputs := map[string]string{}
	for _, tz := range []string{"UTC", "America/New_York"} {
		for _, flag := range []string{"", "--tz America/Chicago"} {
			out, stderr, code := shell(t, dir, []string{"TZ=" + tz},
				`"$SK" read-files --progress off --with-metadata `+flag+` '*.csv' '*.ndjson' | "$SK" print --format json`)
			if code != 0 {
				t.Fatalf("TZ=%s %s: exit %d\n%s", tz, flag, code, stderr)
			}
			outputs[tz+flag] = out
		}
	}
	if outputs["UTC"] != outputs["America/New_York"] || outputs["UTC--tz America/Chicago"] != outputs["America/New_York--tz America/Chicago"] {
		t.Fatalf("output depends on the machine's zone:\n%v", outputs)
	}
	if !strings.Contains(outputs["UTC"], `"ts":"2024-11-03T01:30:00Z"`) || !strings.Contains(outputs["UTC--tz America/Chicago"], `"ts":"2024-11-03T06:30:00Z"`) {
		t.Fatalf("zone-less timestamps not read in UTC / --tz:\n%s\n%s", outputs["UTC"], outputs["UTC--tz America/Chicago"])
	}
	if !strings.Contains(outputs["UTC"], `"file_modification_time":"2024-11-03T05:30:00Z"`) {
		t.Fatalf("modification time not in UTC:\n%s", outputs["UTC"])
	}
}

// TestFollow: --follow picks up files as they arrive; SIGINT finishes the epoch, ends with
// end=pause and exit code 130; the next run reads only what arrived since.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	bin := peertest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src := exec.CommandContext(ctx, bin, "read-files", "--progress", "off", "--follow", "--poll-interval", "50ms", "--stable-after", "100ms",
		"--epoch-interval", "100ms", "--checkpoint", "ck/read", "--schema", "id long", "in/**/*.csv")
	snk := exec.CommandContext(ctx, bin, "print", "--progress", "off", "--checkpoint", "ck/print", "--format", "json", "--show-control")
	src.Dir, snk.Dir = dir, dir
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	var serr bytes.Buffer
	src.Stdout, src.Stderr = pw, &serr
	snk.Stdin, snk.Stdout, snk.Stderr = pr, outW, &serr
	if err := src.Start(); err != nil {
		t.Fatal(err)
	}
	if err := snk.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	pr.Close()
	outW.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %s\n%s", want, serr.String())
				}
				if l == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s after 20 s\n%s", want, serr.String())
			}
		}
	}
	write(t, filepath.Join(dir, "in", "a.csv"), "id\n1\n", time.Time{})
	waitFor(`{"id":1,"_rescued_data":null}`)
	write(t, filepath.Join(dir, "in", "sub", "b.csv"), "id\n2\n", time.Time{})
	waitFor(`{"id":2,"_rescued_data":null}`)
	src.Process.Signal(os.Interrupt)
	waitFor(`{"_control":"end","end":"pause"}`)
	err1, err2 := src.Wait(), snk.Wait()
	// An interrupted end travels downstream: both stages exit 130.
	var ee1, ee2 *exec.ExitError
	if !errors.As(err1, &ee1) || ee1.ExitCode() != 130 || !errors.As(err2, &ee2) || ee2.ExitCode() != 130 {
		t.Fatalf("read-files %v, print %v; want both exit 130\n%s", err1, err2, serr.String())
	}
	// The next (available-now) run reads only the new file.
	write(t, filepath.Join(dir, "in", "c.csv"), "id\n3\n", time.Now().Add(-time.Minute))
	out, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --checkpoint ck/read --schema 'id long' 'in/**/*.csv' | "$SK" print --checkpoint ck/print --format json`)
	if code != 0 || strings.TrimSpace(out) != `{"id":3,"_rescued_data":null}` {
		t.Fatalf("exit %d, output %q\n%s", code, out, stderr)
	}
}

// TestCSVCornerCases reads a CSV with a BOM, CRLF, quoted delimiters, doubled quotes, quoted
// newlines, ragged and short rows and an unterminated quote through the tool, plain and
// gzip-compressed, with several read-buffer sizes (source/files varies it over every byte).
func TestCSVCornerCases(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	csv := "\xEF\xBB\xBFid,name,note\r\n" +
		"1,\"a,b\",\"say \"\"hi\"\"\"\r\n" +
		"2,\"multi\r\nline\",x\r\n" +
		"3,\"\",\r\n" +
		"4,ragged,x,extra\r\n" +
		"5,short\r\n" +
		"7,\"unterminated\r\n"
	write(t, filepath.Join(dir, "c.csv"), csv, old)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(csv))
	zw.Close()
	write(t, filepath.Join(dir, "z.csv.gz"), gz.String(), old)
	rows := func(path string) string {
		return strings.Join([]string{
			`{"id":1,"name":"a,b","note":"say \"hi\"","_rescued_data":null}`,
			`{"id":2,"name":"multi\r\nline","note":"x","_rescued_data":null}`,
			`{"id":3,"name":"","note":null,"_rescued_data":null}`,
			`{"id":4,"name":"ragged","note":"x","_rescued_data":"{\"_c3\":\"extra\",\"_file\":\"` + path + `\"}"}`,
			`{"id":5,"name":"short","note":null,"_rescued_data":null}`,
		}, "\n") + "\n"
	}
	for _, file := range []string{"c.csv", "z.csv.gz"} {
		for _, buf := range []string{"1", "5", "0"} {
			out, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --read-buffer `+buf+` --schema 'id long, name string, note string' `+file+` | "$SK" print --format json`)
			if code != 0 {
				t.Fatalf("%s buffer %s: exit %d\n%s", file, buf, code, stderr)
			}
			if want := rows(filepath.Join(dir, file)); out != want {
				t.Fatalf("%s buffer %s:\n%s\nwant\n%s", file, buf, out, want)
			}
			if !strings.Contains(stderr, "bad_records=1") || !strings.Contains(stderr, "line=8") {
				t.Errorf("%s: the unterminated quote is not reported with its line:\n%s", file, stderr)
			}
		}
	}
	// dropmalformed: rows whose field count differs from the header's are bad records too.
	out, stderr, code := shell(t, dir, nil, `"$SK" read-files --progress off --mode dropmalformed --bad-records bad.ndjson --schema 'id long, name string, note string' c.csv | "$SK" print --format json`)
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(stderr, "bad_records=3") {
		t.Fatalf("dropmalformed: exit %d\n%s\n%s", code, out, stderr)
	}
}
