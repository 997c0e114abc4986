package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
)

var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func idRows(from, to int, p string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := from; i < to; i++ {
		if i > from {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"p":%q}`, i, p)
	}
	b.WriteString("]")
	return b.String()
}

func ids(t testing.TB, rows []string) []int {
	t.Helper()
	var out []int
	for _, r := range rows {
		var v struct{ ID int }
		if err := json.Unmarshal([]byte(r), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.ID)
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// cfg returns a Config for dir with the "unset" defaults and changes applied.
func cfg(dir string, change func(c *Config)) Config {
	c := Config{Table: dir, Version: -1, StartingVersion: -1}
	if change != nil {
		change(&c)
	}
	return c
}

func openSource(t testing.TB, cfg Config, env *stage.Env, committed stage.Position) *Source {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Microsecond
	}
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(context.Background(), env, committed); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// TestFollowSnapshotThenCommits reads the current snapshot, then new commits in order, and
// checks that every position seen can be used to resume and to replay an epoch exactly.
func TestFollowSnapshotThenCommits(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	create := &dl.CreateOptions{PartitionColumns: []string{"p"}}
	appendRows(t, mem, dir, idSchema, create, idRows(0, 5, "a"), idRows(5, 8, "b")) // v0: 2 files
	appendRows(t, mem, dir, idSchema, nil, idRows(8, 10, "a"))                      // v1
	env := testEnv(mem)
	src := openSource(t, cfg(dir, func(c *Config) { c.Follow = true }), env, nil)
	start := src.Position()
	rows, poss, cum := readAll(t, src, nil, 3)
	if got := ids(t, rows); !reflect.DeepEqual(sorted(got), seq(0, 10)) {
		t.Fatalf("snapshot rows %v", got)
	}
	// New commits arrive while following: an append, an empty commit, another append.
	appendRows(t, mem, dir, idSchema, nil, idRows(10, 13, "c"))
	appendRows(t, mem, dir, idSchema, nil)
	appendRows(t, mem, dir, idSchema, nil, idRows(13, 20, "a"), idRows(20, 21, "d"))
	more, poss2, cum2 := readAll(t, src, nil, 3)
	if got := ids(t, more); !reflect.DeepEqual(got, seq(10, 21)) {
		t.Fatalf("followed rows %v, want 10..20 in commit order", got)
	}
	var p position
	json.Unmarshal(src.Position(), &p)
	if p.Version != 5 || p.Initial || p.File != 0 {
		t.Fatalf("position after v4 = %+v, want version 5 file 0", p)
	}
	all, poss, cum := joinReads(start, rows, poss, cum, more, poss2, cum2)
	checkResumes(t, cfg(dir, func(c *Config) { c.Follow = true }), env, all, poss, cum)
	// Replaying a range with different batch sizes splits batches at the recorded rows.
	env2 := testEnv(mem)
	env2.BatchRows = 1000
	r := openSource(t, cfg(dir, func(c *Config) { c.Follow = true }), env2, poss[1])
	ep, _, _ := readAll(t, r, poss[4], 3)
	if got, want := ids(t, ep), ids(t, all[cum[1]:cum[4]]); !reflect.DeepEqual(got, want) {
		t.Fatalf("replay with big batches: %v, want %v", got, want)
	}
}

// joinReads joins two readAll calls made after position start: all the rows, every position
// (start first) and the number of rows read before each.
func joinReads(start stage.Position, rows []string, poss []stage.Position, cum []int, more []string, poss2 []stage.Position, cum2 []int) ([]string, []stage.Position, []int) {
	all := append(rows, more...)
	poss = append(append([]stage.Position{start}, poss...), poss2...)
	cum = append([]int{0}, cum...)
	for _, c := range cum2 {
		cum = append(cum, len(rows)+c)
	}
	return all, poss, cum
}

// checkResumes: every position resumes exactly after the rows read before it, and replaying
// the range between two positions (an epoch) yields exactly the rows between them.
func checkResumes(t *testing.T, conf Config, env *stage.Env, all []string, poss []stage.Position, cum []int) {
	t.Helper()
	for i := range poss {
		r := openSource(t, conf, env, poss[i])
		rest, _, _ := readAll(t, r, nil, 3)
		if got, want := ids(t, rest), ids(t, all[cum[i]:]); !reflect.DeepEqual(got, want) {
			t.Fatalf("resume at %s: %v, want %v", poss[i], got, want)
		}
		if i+1 < len(poss) {
			r2 := openSource(t, conf, env, poss[i])
			ep, _, _ := readAll(t, r2, poss[i+1], 3)
			if got, want := ids(t, ep), ids(t, all[cum[i]:cum[i+1]]); !reflect.DeepEqual(got, want) {
				t.Fatalf("replay %s..%s: %v, want %v", poss[i], poss[i+1], got, want)
			}
		}
	}
}

func sorted(x []int) []int {
	y := append([]int(nil), x...)
	sort.Ints(y)
	return y
}

func TestBoundedVersionsAndStartingVersion(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	appendRows(t, mem, dir, idSchema, &dl.CreateOptions{PartitionColumns: []string{"p"}}, idRows(0, 3, "a"))
	appendRows(t, mem, dir, idSchema, nil, idRows(3, 6, "a"))
	appendRows(t, mem, dir, idSchema, nil, idRows(6, 9, "b"))
	env := testEnv(mem)
	for _, c := range []struct {
		cfg  Config
		want []int
	}{
		{cfg(dir, nil), seq(0, 9)},
		{cfg(dir, func(c *Config) { c.Version = 1 }), seq(0, 6)},
		{cfg(dir, func(c *Config) { c.Version = 0 }), seq(0, 3)},
		{cfg(dir, func(c *Config) { c.Where = "p = 'b'" }), seq(6, 9)},
		{cfg(dir, func(c *Config) { c.StartingVersion = 1 }), seq(3, 9)},
		{cfg(dir, func(c *Config) { c.StartingVersion = 2; c.Follow = true }), seq(6, 9)},
		{cfg(dir, func(c *Config) { c.StartingLatest = true; c.Follow = true }), nil},
	} {
		src := openSource(t, c.cfg, env, nil)
		rows, _, _ := readAll(t, src, nil, 2)
		if got := sorted(ids(t, rows)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.cfg, got, c.want)
		}
	}
	// A bounded read resumed from a checkpoint reads the commits since, up to the latest.
	src := openSource(t, cfg(dir, func(c *Config) { c.Version = 0 }), env, nil)
	readAll(t, src, nil, 2)
	pos := src.Position()
	src2 := openSource(t, cfg(dir, nil), env, pos)
	rows, _, _ := readAll(t, src2, nil, 2)
	if got := ids(t, rows); !reflect.DeepEqual(got, seq(3, 9)) {
		t.Fatalf("available-now rerun: %v", got)
	}
	// Usage errors.
	for _, cfg := range []Config{
		{Table: dir, Version: 1, Timestamp: dlTime(), StartingVersion: -1},
		{Table: dir, Version: 1, StartingVersion: 1},
		{Table: dir, Version: -1, StartingVersion: -1, StartingLatest: true},
	} {
		if _, err := NewSource(cfg); err == nil {
			t.Errorf("NewSource(%+v): no error", cfg)
		}
	}
}

func TestRemovesFailUnlessIgnored(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	ctx := context.Background()
	appendRows(t, mem, dir, idSchema, nil, idRows(0, 3, "a")) // v0
	appendRows(t, mem, dir, idSchema, nil, idRows(3, 6, "a")) // v1
	tbl := dl.NewTable(dir, mem)
	snap, _ := tbl.Snapshot(ctx)
	victim := snap.Files()[0]
	// v2: a delete (remove only).
	if _, err := tbl.Commit(ctx, dl.CommitRequest{Read: snap, Operation: "DELETE",
		Removes: []dl.Remove{{Path: victim.Path, DataChange: true}}}); err != nil {
		t.Fatal(err)
	}
	// v3: an append.
	appendRows(t, mem, dir, idSchema, nil, idRows(6, 7, "a"))
	// v4: a compaction (dataChange=false) is always fine.
	snap, _ = tbl.Snapshot(ctx)
	f := snap.Files()[0]
	if _, err := tbl.Commit(ctx, dl.CommitRequest{Read: snap, Operation: "OPTIMIZE",
		Removes: []dl.Remove{{Path: f.Path, DataChange: false}}, Adds: []dl.Add{{Path: f.Path, PartitionValues: map[string]*string{}, Size: f.Size, DataChange: false, Stats: f.Stats}}}); err != nil {
		t.Fatal(err)
	}
	env := testEnv(mem)
	read := func(cfg Config) ([]int, error) {
		cfg.Table, cfg.StartingVersion, cfg.Version = dir, 1, -1
		src, err := NewSource(cfg)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		if _, err := src.Open(ctx, env, nil); err != nil {
			return nil, err
		}
		var rows []string
		for {
			rec, err := src.Read(ctx, nil)
			if err == io.EOF {
				return ids(t, rows), nil
			}
			if err != nil {
				return ids(t, rows), err
			}
			rows = append(rows, recRows(t, rec)...)
			rec.Release()
		}
	}
	got, err := read(Config{})
	if err == nil || !strings.Contains(err.Error(), "version 2 of") || !strings.Contains(err.Error(), "operation DELETE") || !strings.Contains(err.Error(), "--ignore-deletes") {
		t.Fatalf("delete not refused: %v", err)
	}
	if !reflect.DeepEqual(got, seq(3, 6)) {
		t.Fatalf("rows before the delete: %v", got)
	}
	got, err = read(Config{IgnoreDeletes: true})
	if err != nil || !reflect.DeepEqual(got, seq(3, 7)) {
		t.Fatalf("--ignore-deletes: %v, %v", got, err)
	}
	// v5: an update (remove + add with dataChange).
	snap, _ = tbl.Snapshot(ctx)
	f = snap.Files()[0]
	if _, err := tbl.Commit(ctx, dl.CommitRequest{Read: snap, Operation: "UPDATE",
		Removes: []dl.Remove{{Path: f.Path, DataChange: true}}, Adds: []dl.Add{{Path: f.Path, PartitionValues: map[string]*string{}, Size: f.Size, DataChange: true, Stats: f.Stats}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(Config{IgnoreDeletes: true}); err == nil || !strings.Contains(err.Error(), "--ignore-changes") {
		t.Fatalf("update not refused with --ignore-deletes: %v", err)
	}
	got, err = read(Config{IgnoreChanges: true})
	if err != nil || len(got) <= 4 || !reflect.DeepEqual(got[:4], seq(3, 7)) {
		t.Fatalf("--ignore-changes: %v, %v (want the rewritten file's rows again)", got, err)
	}
}

func TestSchemaChangeWhileFollowing(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	ctx := context.Background()
	appendRows(t, mem, dir, idSchema, nil, idRows(0, 2, "a"))
	env := testEnv(mem)
	src := openSource(t, cfg(dir, func(c *Config) { c.Follow = true }), env, nil)
	readAll(t, src, nil, 2)
	// Add a column.
	tbl := dl.NewTable(dir, mem)
	snap, _ := tbl.Snapshot(ctx)
	wide := arrow.NewSchema(append(idSchema.Fields(), arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), nil)
	st, _, err := dl.MergeSchema(snap.Schema(), wide)
	if err != nil {
		t.Fatal(err)
	}
	m := *snap.Metadata()
	m.SchemaString = st.JSON()
	if _, err := tbl.Commit(ctx, dl.CommitRequest{Read: snap, Metadata: &m}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && err == nil; i++ {
		_, err = src.Read(ctx, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "version 1 changes the table: new column x") {
		t.Fatalf("schema change: %v", err)
	}
	// A restart reads with the new schema, older files with x = null.
	src2 := openSource(t, cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0 }), env, nil)
	rows, _, _ := readAll(t, src2, nil, 2)
	if len(rows) != 2 || !strings.Contains(rows[0], `"x":null`) {
		t.Fatalf("rows after restart %q", rows)
	}
}

func TestMaxFilesPerEpoch(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	for i := 0; i < 5; i++ {
		appendRows(t, mem, dir, idSchema, nil, idRows(i, i+1, "a"))
	}
	src := openSource(t, cfg(dir, func(c *Config) { c.MaxFilesPerEpoch = 2 }), testEnv(mem), nil)
	ctx := context.Background()
	var epochs [][]int
	cur := []int{}
	for {
		rec, err := src.Read(ctx, nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil {
			cur = append(cur, ids(t, recRows(t, rec))...)
			rec.Release()
		}
		if src.EpochFull() {
			epochs = append(epochs, cur)
			cur = []int{}
			src.EpochCut()
		}
	}
	epochs = append(epochs, cur)
	if len(epochs) != 3 || len(epochs[0]) != 2 || len(epochs[1]) != 2 || len(epochs[2]) != 1 {
		t.Fatalf("epochs %v, want files 2+2+1", epochs)
	}
}

func dlTime() (t0 time.Time) { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }

func TestWhereSkipsFilesAndTimestampTravel(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	appendRows(t, mem, dir, idSchema, &dl.CreateOptions{PartitionColumns: []string{"p"}}, idRows(0, 3, "a"), idRows(3, 6, "b"))
	appendRows(t, mem, dir, idSchema, nil, idRows(6, 9, "b"))
	// Delete partition a's data file: a read filtered to b never opens it.
	snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files() {
		if *f.PartitionValues["p"] == "a" {
			p, _ := dl.DecodePath(f.Path)
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := testEnv(mem)
	rows, _, _ := readAll(t, openSource(t, cfg(dir, func(c *Config) { c.Where = "p = 'b'" }), env, nil), nil, 2)
	if got := sorted(ids(t, rows)); !reflect.DeepEqual(got, seq(3, 9)) {
		t.Fatalf("where p = 'b': %v", got)
	}
	src, _ := NewSource(cfg(dir, nil))
	defer src.Close()
	if _, err := src.Open(context.Background(), env, nil); err == nil {
		_, err = src.Read(context.Background(), nil)
		for err == nil {
			_, err = src.Read(context.Background(), nil)
		}
		if !strings.Contains(err.Error(), "listed in the log is missing") {
			t.Fatalf("unfiltered read of a table with a missing file: %v", err)
		}
	}
	// --timestamp: commit 0 at t0, commit 1 at t0 + 1 h.
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for v, mt := range []time.Time{t0, t0.Add(time.Hour)} {
		os.Chtimes(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)), mt, mt)
	}
	rows, _, _ = readAll(t, openSource(t, cfg(dir, func(c *Config) { c.Timestamp = t0.Add(30 * time.Minute); c.Where = "p = 'b'" }), env, nil), nil, 2)
	if got := sorted(ids(t, rows)); !reflect.DeepEqual(got, seq(3, 6)) {
		t.Fatalf("timestamp travel: %v", got)
	}
}

// TestWherePredicatePrunesAndFollows: a Spark SQL --where over a data column and a partition
// column filters the rows of the snapshot and of the followed commits, and the files it rules
// out by their statistics or partition values are never opened (they are deleted from disk
// here, and the reader counts what it opens); positions resume exactly under the filter.
func TestWherePredicatePrunesAndFollows(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	appendRows(t, mem, dir, idSchema, &dl.CreateOptions{PartitionColumns: []string{"p"}}, idRows(0, 5, "a"), idRows(5, 10, "b")) // v0
	appendRows(t, mem, dir, idSchema, nil, idRows(10, 20, "a"))                                                                  // v1
	removeFiles := func(match func(a *dl.Add) bool) {
		t.Helper()
		snap, err := dl.NewTable(dir, mem).Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range snap.Files() {
			if match(f) {
				p, _ := dl.DecodePath(f.Path)
				if err := os.Remove(filepath.Join(dir, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The file of ids 0..4 (p = a) can match neither side of the OR.
	removeFiles(func(a *dl.Add) bool { return a.NumRecords() == 5 && *a.PartitionValues["p"] == "a" })
	where := "id >= 12 OR (p = 'b' AND id % 2 = 0)"
	env := testEnv(mem)
	env.Stats = &stage.Stats{}
	conf := cfg(dir, func(c *Config) { c.Follow = true; c.Where = where })
	src := openSource(t, conf, env, nil)
	start := src.Position()
	rows, poss, cum := readAll(t, src, nil, 3)
	if got := sorted(ids(t, rows)); !reflect.DeepEqual(got, append([]int{6, 8}, seq(12, 20)...)) {
		t.Fatalf("snapshot rows %v", got)
	}
	if n := src.rd.opened.Load(); n != 2 {
		t.Fatalf("opened %d files, want 2 (one pruned)", n)
	}
	// Followed commits: one that matches (ids 20..24), one pruned by statistics and partition
	// (ids 0..3 in p = c), one with a match in the middle of the file.
	appendRows(t, mem, dir, idSchema, nil, idRows(20, 25, "a"))
	appendRows(t, mem, dir, idSchema, nil, idRows(0, 4, "c"))
	removeFiles(func(a *dl.Add) bool { return *a.PartitionValues["p"] == "c" })
	appendRows(t, mem, dir, idSchema, nil, `[{"id":1,"p":"d"},{"id":30,"p":"d"},{"id":2,"p":"d"}]`)
	more, poss2, cum2 := readAll(t, src, nil, 3)
	if got := ids(t, more); !reflect.DeepEqual(got, append(seq(20, 25), 30)) {
		t.Fatalf("followed rows %v", got)
	}
	if n, p := src.rd.opened.Load(), env.Stats.FilesPruned.Load(); n != 4 || p != 2 {
		t.Fatalf("opened %d files, pruned %d; want 4 and 2", n, p)
	}
	all, poss, cum := joinReads(start, rows, poss, cum, more, poss2, cum2)
	checkResumes(t, conf, testEnv(mem), all, poss, cum)
	// A column the predicate reads but --columns leaves out is read for the evaluation only.
	proj := openSource(t, cfg(dir, func(c *Config) { c.Where = "id = 30 OR (id < 7 AND p = 'b')"; c.Columns = []string{"p"} }), testEnv(mem), nil)
	if got := proj.schema.String(); !strings.Contains(got, "p: type=utf8") || strings.Contains(got, "id") {
		t.Fatalf("projected schema %s", got)
	}
	prow, _, _ := readAll(t, proj, nil, 2)
	sort.Strings(prow)
	if want := []string{`{"p":"b"}`, `{"p":"b"}`, `{"p":"d"}`}; !reflect.DeepEqual(prow, want) {
		t.Fatalf("projected rows %v, want %v", prow, want)
	}
}

// TestWherePredicateErrors: errors of the predicate before and while reading.
func TestWherePredicateErrors(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	appendRows(t, mem, dir, idSchema, &dl.CreateOptions{PartitionColumns: []string{"p"}}, idRows(0, 5, "a"))
	for where, want := range map[string]string{
		"idd > 1":          "unknown column `idd` (did you mean `id`?)",
		"id >":             "syntax error at position 5",
		"id + 1":           "must be boolean",
		"p = a AND id > 1": "unknown column `a`",
		"10 / id > 1":      "",
	} {
		src, err := NewSource(cfg(dir, func(c *Config) { c.Where = where }))
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Open(context.Background(), testEnv(mem), nil)
		if want == "" {
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			_, err = src.Read(context.Background(), nil)
			for err == nil {
				_, err = src.Read(context.Background(), nil)
			}
			if !strings.Contains(err.Error(), "[DIVIDE_BY_ZERO]") || !strings.Contains(err.Error(), "row 0") {
				t.Fatalf("%s: %v", where, err)
			}
			src.Close()
			continue
		}
		var ue *stage.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want a usage error with %q", where, err, want)
		}
		src.Close()
	}
}
