package backfill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/deltatest"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
)

var evSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var t0 = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// evRows renders rows with the given ids; ts = t0 + id minutes.
func evRows(ids ...int) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf(`{"id":%d,"ts":%q,"v":"v%d"}`, id, t0.Add(time.Duration(id)*time.Minute).Format(time.RFC3339), id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// commitRows appends rows (JSON for schema sc) as one commit, creating the table if needed;
// with txn set it records {appId, version} like a streaming flow.
func commitRows(t testing.TB, mem memory.Allocator, dir string, sc *arrow.Schema, txn *dl.Txn, js string) int64 {
	t.Helper()
	ctx := context.Background()
	tbl := dl.NewTable(dir, mem)
	var req dl.CommitRequest
	var meta *dl.Metadata
	if ok, _ := tbl.Exists(); ok {
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Read, meta = snap, snap.Metadata()
	} else {
		p, m, err := dl.NewTableMetadata(sc, dl.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req.Protocol, req.Metadata, meta = p, m, m
	}
	w, err := deltasink.NewDataWriter(dl.NewTable(dir, nil).Store(), meta, deltasink.WriterOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if req.Adds, err = w.Close(); err != nil {
		t.Fatal(err)
	}
	req.Txn = txn
	res, err := tbl.Commit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Version
}

var liveSchema = arrow.NewSchema(append(evSchema.Fields(), arrow.Field{Name: "record_source", Type: arrow.BinaryTypes.String, Nullable: true}), nil)

func liveRows(ids ...int) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf(`{"id":%d,"ts":%q,"v":"v%d","record_source":"stream"}`, id, t0.Add(time.Duration(id)*time.Minute).Format(time.RFC3339), id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// tableRows reads the table and returns (id, record_source) pairs sorted, and the version.
// tableRows returns the target's rows as "id" or "id:record_source", in id order, and its
// version.
func tableRows(t testing.TB, mem memory.Allocator, dir string) ([]string, int64) {
	t.Helper()
	return deltatest.IDRows(t, mem, dir)
}

// csvFiles makes the CSV files matched by patterns, read with schema sc, cfg's source, with
// read-files' defaults (as backfill --from without decoding flags: a header line).
func csvFiles(cfg *Config, sc *arrow.Schema, patterns ...string) {
	fc := files.Config{Schema: sc}
	fc.CSV.Header = true
	cfg.SetFiles(fc, patterns)
}

func ids(rows []string) []int {
	var out []int
	for _, r := range rows {
		var x int
		fmt.Sscan(strings.Split(r, ":")[0], &x)
		out = append(out, x)
	}
	return out
}

func baseCfg(t testing.TB, mem memory.Allocator, src, dst, flow string) Config {
	return Config{FromDelta: src, FromVersion: -1, To: dst, Flow: flow, Mem: mem, Progress: "off",
		Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestBackfillRunsOnce(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	commitRows(t, mem, src, evSchema, nil, evRows(span(0, 5)...))
	commitRows(t, mem, src, evSchema, nil, evRows(span(5, 10)...))
	cfg := baseCfg(t, mem, src, dst, "hist")
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, v := tableRows(t, mem, dst)
	if !reflect.DeepEqual(ids(rows), span(0, 10)) || v != 0 {
		t.Fatalf("after the first run: %v at version %d", rows, v)
	}
	snap, _ := dl.NewTable(dst, mem).Snapshot(ctx)
	if tv, ok := snap.TxnVersion("hist"); !ok || tv != 1 {
		t.Fatalf("txn %d %v", tv, ok)
	}
	// Second run: a no-op, exit 0, nothing committed.
	var logs bytes.Buffer
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, v := tableRows(t, mem, dst); v != 0 {
		t.Fatalf("second run committed version %d", v)
	}
	if !strings.Contains(logs.String(), "already done") {
		t.Fatalf("no message: %s", logs.String())
	}
	// --rerun appends again with txn version 2.
	cfg.Rerun = true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, v = tableRows(t, mem, dst)
	snap, _ = dl.NewTable(dst, mem).Snapshot(ctx)
	if tv, _ := snap.TxnVersion("hist"); len(rows) != 20 || v != 1 || tv != 2 {
		t.Fatalf("rerun: %d rows, version %d, txn %d", len(rows), v, tv)
	}
}

func TestBackfillDedupAgainstLiveRows(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	// The live flow already wrote ids 5..9 (record_source=stream).
	commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 1}, liveRows(span(5, 10)...))
	// The backfill source has 0..7, and 2 and 6 twice.
	commitRows(t, mem, src, evSchema, nil, evRows(append(span(0, 8), 2, 6)...))
	cfg := baseCfg(t, mem, src, dst, "hist")
	cfg.DedupCols = []string{"id"}
	cfg.With = []KV{{"record_source", "backfill"}}
	var plan bytes.Buffer
	cfg.Plan, cfg.Stdout = true, &plan
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var p struct {
		WouldWrite  bool `json:"would_write"`
		RowsToWrite int  `json:"rows_to_write"`
		Dedup       struct {
			TargetKeys int `json:"target_keys"`
			Hits       int `json:"key_hits_in_target"`
			Dups       int `json:"duplicates_in_source"`
		} `json:"dedup"`
		Source struct {
			Rows     int `json:"rows"`
			NumFiles int `json:"num_files"`
		} `json:"source"`
	}
	if err := json.Unmarshal(plan.Bytes(), &p); err != nil {
		t.Fatalf("%v: %s", err, plan.String())
	}
	if !p.WouldWrite || p.RowsToWrite != 5 || p.Dedup.TargetKeys != 5 || p.Dedup.Hits != 4 || p.Dedup.Dups != 1 || p.Source.Rows != 10 || p.Source.NumFiles != 1 {
		t.Fatalf("plan %s", plan.String())
	}
	if _, v := tableRows(t, mem, dst); v != 0 {
		t.Fatal("--plan committed")
	}
	if n := countParquet(dst); n != 1 {
		t.Fatalf("--plan wrote data files: %d parquet files", n)
	}
	cfg.Plan, cfg.Stdout = false, io.Discard
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, _ := tableRows(t, mem, dst)
	want := []string{"0:backfill", "1:backfill", "2:backfill", "3:backfill", "4:backfill", "5:stream", "6:stream", "7:stream", "8:stream", "9:stream"}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v\nwant %v", rows, want)
	}
	// Without columns the key is every source column (constants excluded): the live rows have
	// the same id, ts and v, so nothing is added on a rerun.
	cfg.DedupCols, cfg.Dedup, cfg.Rerun = nil, true, true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if rows2, _ := tableRows(t, mem, dst); !reflect.DeepEqual(rows2, want) {
		t.Fatalf("all-column dedup added rows: %v", rows2)
	}
}

// raceSetup makes a source of ids 0..n-1 and a backfill config (flow hist, record_source =
// backfill, --dedup-cols id with dedup) into dst, after target(dst, mem) when not nil.
func raceSetup(t *testing.T, dedup bool, n int, target func(dst string, mem memory.Allocator)) (memory.Allocator, context.Context, string, Config) {
	mem := newMem(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	if target != nil {
		target(dst, mem)
	}
	commitRows(t, mem, src, evSchema, nil, evRows(span(0, n)...))
	cfg := baseCfg(t, mem, src, dst, "hist")
	cfg.With = []KV{{"record_source", "backfill"}}
	if dedup {
		cfg.DedupCols = []string{"id"}
	}
	return mem, context.Background(), dst, cfg
}

// TestBackfillConcurrentLiveCommit commits a live flow's rows between the backfill's read of
// the target and its commit: without overlapping keys both flows' rows are present once; with
// a shared key the backfill's copy is dropped and the commit retried.
func TestBackfillConcurrentLiveCommit(t *testing.T) {
	for _, dedup := range []bool{false, true} {
		t.Run(fmt.Sprintf("dedup=%v", dedup), func(t *testing.T) {
			mem, ctx, dst, cfg := raceSetup(t, dedup, 10, func(dst string, mem memory.Allocator) {
				commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 1}, liveRows(100, 101))
			})
			once := false
			testHookBeforeCommit = func() {
				// Two live epochs land while the backfill is about to commit; the second
				// shares id 7 with the backfill.
				if !once {
					once = true
					commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 2}, liveRows(102, 107))
					commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 3}, liveRows(103, 7))
				}
			}
			defer func() { testHookBeforeCommit = nil }()
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			rows, _ := tableRows(t, mem, dst)
			var want []string
			for i := 0; i < 10; i++ {
				if dedup && i == 7 {
					continue
				}
				want = append(want, fmt.Sprintf("%d:backfill", i))
			}
			want = append(want, "7:stream", "100:stream", "101:stream", "102:stream", "103:stream", "107:stream")
			sort.Slice(want, func(i, j int) bool { return deltatest.IDLess(want[i], want[j]) })
			if !reflect.DeepEqual(rows, want) {
				t.Fatalf("rows %v\nwant %v", rows, want)
			}
			snap, _ := dl.NewTable(dst, mem).Snapshot(ctx)
			if tv, _ := snap.TxnVersion("hist"); tv != 1 {
				t.Fatalf("txn %d", tv)
			}
			if tv, _ := snap.TxnVersion("live"); tv != 3 {
				t.Fatalf("live txn %d", tv)
			}
			// No orphan files of the rewritten attempt are left behind.
			if onDisk := countParquet(dst); onDisk != snap.NumFiles() {
				t.Fatalf("%d parquet files on disk, %d live", onDisk, snap.NumFiles())
			}
		})
	}
}

// TestBackfillLosesTableCreation: the target does not exist; a live flow's first commit
// creates it between the backfill's read and its commit (the backfill meant to create it). The
// backfill joins that table instead of failing ("created concurrently"), with dedup dropping
// the key the live flow committed (issue #26).
func TestBackfillLosesTableCreation(t *testing.T) {
	for _, dedup := range []bool{false, true} {
		t.Run(fmt.Sprintf("dedup=%v", dedup), func(t *testing.T) {
			mem, ctx, dst, cfg := raceSetup(t, dedup, 5, nil)
			once := false
			testHookBeforeCommit = func() {
				if !once {
					once = true
					commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 1}, liveRows(100, 3))
				}
			}
			defer func() { testHookBeforeCommit = nil }()
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			rows, _ := tableRows(t, mem, dst)
			want := []string{"0:backfill", "1:backfill", "2:backfill", "3:backfill", "3:stream", "4:backfill", "100:stream"}
			if dedup {
				want = []string{"0:backfill", "1:backfill", "2:backfill", "3:stream", "4:backfill", "100:stream"}
			}
			if !reflect.DeepEqual(rows, want) {
				t.Fatalf("rows %v\nwant %v", rows, want)
			}
			snap, _ := dl.NewTable(dst, mem).Snapshot(ctx)
			if tv, _ := snap.TxnVersion("hist"); tv != 1 || snap.Version() != 1 {
				t.Fatalf("txn %d version %d, want 1 and 1", tv, snap.Version())
			}
		})
	}
}

func TestBackfillOverlapCheck(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	// Live rows from t0+100 min; a non-live row earlier (must be ignored by --stream-filter).
	commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 1}, liveRows(100, 130))
	commitRows(t, mem, dst, liveSchema, nil, `[{"id":1,"ts":"2024-06-01T00:01:00Z","v":"x","record_source":"other"}]`)
	commitRows(t, mem, src, evSchema, nil, evRows(span(0, 130)...)) // backfill max t0+129 min
	cfg := baseCfg(t, mem, src, dst, "hist")
	cfg.DedupCols = []string{"id"}
	cfg.With = []KV{{"record_source", "backfill"}}
	cfg.OverlapCol, cfg.StreamFilter = "ts", []KV{{"record_source", "stream"}}
	cfg.MinOverlap = "1h" // overlap is 29 min
	err := Run(ctx, cfg)
	var ce *stage.ChildExitError
	if !errors.As(err, &ce) || stage.ExitCode(err) != 3 || !strings.Contains(err.Error(), "overlaps the live rows by 29m0s only") {
		t.Fatalf("overlap 29m < 1h: %v (exit %d)", err, stage.ExitCode(err))
	}
	if _, v := tableRows(t, mem, dst); v != 1 {
		t.Fatal("committed despite the overlap check")
	}
	// The plan says the same and writes nothing.
	var plan bytes.Buffer
	cfg.Plan, cfg.Stdout = true, &plan
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var p struct {
		WouldWrite bool        `json:"would_write"`
		Overlap    planOverlap `json:"overlap"`
	}
	json.Unmarshal(plan.Bytes(), &p)
	if p.WouldWrite || p.Overlap.OK || p.Overlap.Overlap != "29m0s" || p.Overlap.LiveMin != "2024-06-01T01:40:00Z" ||
		p.Overlap.BackfillMax != "2024-06-01T02:09:00Z" || p.Overlap.LiveRows != 2 {
		t.Fatalf("plan: %s", plan.String())
	}
	cfg.Plan, cfg.Stdout = false, io.Discard
	// A gap: the backfill ends before the live rows start.
	cfg.MinOverlap = "0"
	cfg.FromWhere = ""
	gapSrc := filepath.Join(base, "gap")
	commitRows(t, mem, gapSrc, evSchema, nil, evRows(span(0, 50)...))
	gcfg := cfg
	gcfg.FromDelta = gapSrc
	if err := Run(ctx, gcfg); stage.ExitCode(err) != 3 || !strings.Contains(err.Error(), "ends 51m0s before the live rows start") {
		t.Fatalf("gap: %v", err)
	}
	// After the deadline (counted from the first live commit) it runs anyway.
	gcfg.OverlapDeadline = 48 * time.Hour
	if err := Run(ctx, gcfg); stage.ExitCode(err) != 3 || !strings.Contains(err.Error(), "it will run anyway after the deadline") {
		t.Fatalf("before the deadline: %v", err)
	}
	gcfg.Now = func() time.Time { return time.Now().Add(49 * time.Hour) }
	var stderr bytes.Buffer
	gcfg.Stderr = &stderr
	if err := Run(ctx, gcfg); err != nil {
		t.Fatalf("after the deadline: %v", err)
	}
	if !strings.Contains(stderr.String(), "running anyway") {
		t.Fatalf("no message: %q", stderr.String())
	}
	// Enough overlap: runs (the other flow name: hist has not run).
	cfg.MinOverlap = "20m"
	cfg.Flow = "hist2"
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, _ := tableRows(t, mem, dst)
	if len(rows) != 130+1 {
		t.Fatalf("%d rows", len(rows))
	}
}

func TestBackfillLockAndUsage(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	commitRows(t, mem, src, evSchema, nil, evRows(1, 2))
	l, err := lockFlow(ctx, dl.NewTable(dst, nil), "hist", 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseCfg(t, mem, src, dst, "hist")
	if err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), `flow "hist" is already running (flow "hist" of table`) {
		t.Fatalf("second run while locked: %v", err)
	}
	cfg.LockWait = 300 * time.Millisecond
	go func() { time.Sleep(100 * time.Millisecond); l.Release() }()
	if err := Run(ctx, cfg); err != nil {
		t.Fatalf("--lock-wait: %v", err)
	}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.FromDelta = "" }, "give --from PATTERN or --from-delta"},
		{func(c *Config) { c.Flow = "" }, "--flow NAME is required"},
		{func(c *Config) { c.MinOverlap = "1h" }, "need --overlap-col"},
		{func(c *Config) { c.With = []KV{{"id", "1"}}; c.Rerun = true }, "the source already has a column id"},
		{func(c *Config) { c.DedupCols = []string{"nope"}; c.Rerun = true }, "--dedup-cols"},
		{func(c *Config) { c.FromDelta = dst; c.Rerun = true }, "same table"},
		{func(c *Config) { c.PartitionBy = []string{"v"}; c.Rerun = true }, "partitioned by []"},
	} {
		cfg := baseCfg(t, mem, src, dst, "hist")
		c.change(&cfg)
		err := Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}

func TestBackfillRefusesUnsafeSource(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	os.MkdirAll(filepath.Join(src, "_delta_log"), 0o755)
	schema := `{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}`
	log := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"` + schema + `","partitionColumns":[],"configuration":{},"createdTime":1}}
{"add":{"path":"../../etc/passwd","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`
	os.WriteFile(filepath.Join(src, "_delta_log", "00000000000000000000.json"), []byte(log), 0o644)
	err := Run(ctx, baseCfg(t, mem, src, dst, "hist"))
	if err == nil || !errors.Is(err, dl.ErrUnsafePath) {
		t.Fatalf("unsafe source path: %v", err)
	}
}

// countParquet counts the data files under a table directory.
func countParquet(dir string) int {
	n := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, _ error) error {
		if strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			n++
		}
		return nil
	})
	return n
}

func TestBackfillFromFiles(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	dst := filepath.Join(base, "dst")
	os.MkdirAll(filepath.Join(base, "in"), 0o755)
	os.WriteFile(filepath.Join(base, "in", "a.csv"), []byte("id,ts,v\n1,2024-06-01T00:01:00Z,v1\n2,2024-06-01T00:02:00Z,v2\n"), 0o644)
	os.WriteFile(filepath.Join(base, "in", "b.csv"), []byte("id,ts,v\n2,2024-06-01T00:02:00Z,v2\n3,2024-06-01T00:03:00Z,v3\n"), 0o644)
	commitRows(t, mem, dst, liveSchema, &dl.Txn{AppID: "live", Version: 1}, liveRows(3))
	cfg := baseCfg(t, mem, "", dst, "files")
	csvFiles(&cfg, evSchema, filepath.Join(base, "in", "*.csv"))
	cfg.DedupCols = []string{"id"}
	cfg.With = []KV{{"record_source", "backfill"}}
	var plan bytes.Buffer
	cfg.Plan, cfg.Stdout = true, &plan
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Source planSource `json:"source"`
		Dedup  planDedup  `json:"dedup"`
	}
	json.Unmarshal(plan.Bytes(), &p)
	if p.Source.Kind != "files" || p.Source.NumFiles != 2 || p.Source.Rows != 4 || p.Dedup.HitsInTarget != 1 || p.Dedup.DuplicatesInSource != 1 {
		t.Fatalf("plan %s", plan.String())
	}
	cfg.Plan, cfg.Stdout = false, io.Discard
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, _ := tableRows(t, mem, dst)
	if want := []string{"1:backfill", "2:backfill", "3:stream"}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}

func TestBackfillDedupDotPath(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "user", Type: arrow.StructOf(arrow.Field{Name: "uid", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, nil)
	commitRows(t, mem, dst, sc, nil, `[{"id":100,"user":{"uid":1,"name":"a"}}]`)
	commitRows(t, mem, src, sc, nil, `[{"id":1,"user":{"uid":1,"name":"x"}},{"id":2,"user":{"uid":2,"name":"y"}},{"id":3,"user":{"uid":2,"name":"z"}},{"id":4,"user":null}]`)
	cfg := baseCfg(t, mem, src, dst, "dot")
	cfg.DedupCols = []string{"user.uid"}
	var progress bytes.Buffer
	cfg.Progress, cfg.Stderr = "json", &progress
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rows, _ := tableRows(t, mem, dst)
	if want := []string{"2", "4", "100"}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	var last map[string]any
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("progress %q: %v", progress.String(), err)
	}
	if last["final"] != true || last["rows_read"].(float64) != 4 || last["rows_written"].(float64) != 2 || last["duplicates_skipped"].(float64) != 2 {
		t.Fatalf("final progress %v", last)
	}
}

// TestBackfillFromFilesOverlapBeforeDedup: with --from files the overlap check measures the
// backfill's own max of the column, as with --from-delta — not the max of the rows left after
// --dedup-cols dropped those the live flow already wrote. The overlapping rows are exactly the
// ones a live flow has written, so measuring after dedup made the check fail for ever.
func TestBackfillFromFilesOverlapBeforeDedup(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	dst := filepath.Join(base, "dst")
	os.MkdirAll(filepath.Join(base, "in"), 0o755)
	csv := func(name string, ids []int) {
		var b strings.Builder
		b.WriteString("id,ts,v\n")
		for _, id := range ids {
			fmt.Fprintf(&b, "%d,%s,v%d\n", id, t0.Add(time.Duration(id)*time.Minute).Format(time.RFC3339), id)
		}
		os.WriteFile(filepath.Join(base, "in", name), []byte(b.String()), 0o644)
	}
	csv("hist.csv", span(0, 130))   // backfill max t0+129 min
	csv("live.csv", span(100, 130)) // all of it already live
	commitRows(t, mem, dst, evSchema, &dl.Txn{AppID: "live", Version: 1}, evRows(span(100, 130)...))
	for _, c := range []struct {
		file, flow string
		want       []int
	}{
		{"hist.csv", "hist", span(0, 130)},  // overlap 29 min ≥ 20 min: runs, writes 0..99
		{"live.csv", "again", span(0, 130)}, // every row already there: runs, writes nothing
	} {
		cfg := baseCfg(t, mem, "", dst, c.flow)
		csvFiles(&cfg, evSchema, filepath.Join(base, "in", c.file))
		cfg.DedupCols = []string{"id"}
		cfg.OverlapCol, cfg.MinOverlap = "ts", "20m"
		if err := Run(ctx, cfg); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		rows, _ := tableRows(t, mem, dst)
		if got := ids(rows); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: ids %v, want %v", c.file, got, c.want)
		}
	}
}

// A backfill into a new target that fails before its commit (here: a data file of the source
// table is corrupt) creates no table and must leave no _streamkit/flows/*.lock behind: the
// target it created goes again; a target directory that existed (empty) stays, empty.
func TestBackfillFailureLeavesNoLock(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	for _, existing := range []bool{false, true} {
		base := t.TempDir()
		src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
		commitRows(t, mem, src, evSchema, nil, evRows(span(0, 5)...))
		files, _ := filepath.Glob(filepath.Join(src, "*.parquet"))
		if len(files) != 1 {
			t.Fatalf("source files %v", files)
		}
		if err := os.WriteFile(files[0], []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
		if existing {
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := Run(ctx, baseCfg(t, mem, src, dst, "hist")); err == nil {
			t.Fatal("a corrupt source file was not an error")
		}
		entries, err := os.ReadDir(dst)
		switch {
		case !existing && !errors.Is(err, os.ErrNotExist):
			t.Fatalf("the target %s was left behind: %v", dst, entries)
		case existing && (err != nil || len(entries) > 0):
			t.Fatalf("existing target not left empty: %v %v", entries, err)
		}
	}
}

// TestBackfillTruncateTimestamps: nanosecond timestamps of the source (a CSV read as
// timestamp[ns]) fail the run with a message naming --truncate-timestamps, and with
// TruncateTimestamps they are floored to µs as write-delta floors them (−1 ns is
// 1969-12-31 23:59:59.999999, not 1970).
func TestBackfillTruncateTimestamps(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	base := t.TempDir()
	dst := filepath.Join(base, "dst")
	os.MkdirAll(filepath.Join(base, "in"), 0o755)
	os.WriteFile(filepath.Join(base, "in", "a.csv"), []byte("id,ts\n1,1969-12-31T23:59:59.999999999Z\n2,2024-06-01T00:00:00.000001001Z\n"), 0o644)
	nsSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	cfg := baseCfg(t, mem, "", dst, "ns")
	csvFiles(&cfg, nsSchema, filepath.Join(base, "in", "*.csv"))
	err := Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "--truncate-timestamps") {
		t.Fatalf("nanosecond digits without truncation: %v, want an error naming --truncate-timestamps", err)
	}
	cfg.TruncateTimestamps = true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	snap, err := dl.NewTable(dst, mem).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range snap.Files() {
		fh, err := os.Open(filepath.Join(dst, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(ctx, fh, nil, pqarrow.ArrowReadProperties{}, mem)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids := tbl.Column(0).Data().Chunk(0).(*array.Int64)
		ts := tbl.Column(1).Data().Chunk(0).(*array.Timestamp)
		unit := tbl.Schema().Field(1).Type.(*arrow.TimestampType).Unit
		for i := 0; i < ids.Len(); i++ {
			got = append(got, fmt.Sprintf("%d %s", ids.Value(i), ts.Value(i).ToTime(unit).UTC().Format("2006-01-02T15:04:05.000000000")))
		}
		tbl.Release()
	}
	sort.Strings(got)
	want := []string{"1 1969-12-31T23:59:59.999999000", "2 2024-06-01T00:00:00.000001000"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
