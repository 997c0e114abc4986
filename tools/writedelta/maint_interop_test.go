package writedelta

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestMaintenanceInterop covers table maintenance through the streamkit binary and checks the
// tables with delta-rs, DuckDB and Spark (+ DESCRIBE HISTORY): expired log files cleaned up
// after checkpoints (and delta history/optimize/vacuum on the cleaned table), one writer per
// flow (the sidecar lock), and partitioning by a nested field.
func TestMaintenanceInterop(t *testing.T) {
	peertest.Python(t)
	peertest.Binary(t)
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	var spark *sparkServer
	if os.Getenv("STREAMKIT_SPARK") == "0" {
		t.Log("STREAMKIT_SPARK=0: Spark checks skipped")
	} else if sparkInstalled(t) {
		spark = startSpark(t)
	} else {
		requireSpark(t)
	}
	var entries []manifestEntry
	t.Run("log cleanup", func(t *testing.T) { entries = append(entries, logCleanupTables(t, mem, dir)...) })
	t.Run("flow lock", func(t *testing.T) { entries = append(entries, flowLockTable(t, mem, dir)) })
	t.Run("nested partition", func(t *testing.T) { entries = append(entries, nestedPartitionTable(t, mem, dir)) })

	manifest := writeManifest(t, filepath.Join(dir, "manifest.json"), entries)
	t.Run("delta-rs and DuckDB", func(t *testing.T) {
		out, err := runPy(t, "check", manifest)
		t.Log(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("delta_interop.py check: %v", err)
		}
	})
	if spark == nil {
		return
	}
	t.Run("spark", func(t *testing.T) {
		res, err := spark.call(map[string]any{"cmd": "check", "manifest": manifest})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res["results"].([]any) {
			t.Log(r)
		}
		if n := res["failed"].(float64); n > 0 {
			t.Fatalf("%v tables failed in Spark", n)
		}
	})
}

// runEpochs feeds write-delta the id rows of epochs first..last (10 rows each: ids 10·e ..
// 10·e+9), each followed by its barrier, then end=final, and returns its stderr.
func runEpochs(t *testing.T, mem memory.Allocator, first, last int, args ...string) string {
	t.Helper()
	p := startWD(t, mem, idSchema, append([]string{"--log-level", "info"}, args...)...)
	for e := first; e <= last; e++ {
		r := idBatch(mem, 10*e, 10*e+10)
		p.rec(r).barrier(uint64(e))
		r.Release()
	}
	if err := p.finish(codec.Final); err != nil {
		t.Fatal(err)
	}
	return p.stderr.String()
}

// idsFile writes the expected rows of epochs first..last to an Arrow file.
func idsFile(t *testing.T, mem memory.Allocator, path string, first, last int) string {
	r := idBatch(mem, 10*first, 10*last+10)
	defer r.Release()
	return writeArrowFile(t, path, idSchema, r)
}

// logNames lists the versioned files of the table's _delta_log (commits, checkpoints, crc).
func logNames(t *testing.T, root string) (commits, checkpoints []string) {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(root, delta.LogDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		switch n := e.Name(); {
		case strings.HasSuffix(n, ".checkpoint.parquet"):
			checkpoints = append(checkpoints, n)
		case len(n) == 25 && strings.HasSuffix(n, ".json"):
			commits = append(commits, n)
		}
	}
	return commits, checkpoints
}

// ageLogFiles sets the modification time of the log files of versions ≤ upTo to at.
func ageLogFiles(t *testing.T, root string, upTo int64, at time.Time) {
	t.Helper()
	es, _ := os.ReadDir(filepath.Join(root, delta.LogDir))
	for _, e := range es {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "%020d.", &v); err == nil && len(e.Name()) > 20 && v <= upTo {
			if err := os.Chtimes(filepath.Join(root, delta.LogDir, e.Name()), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func runTool(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := peertest.Run(t, nil, nil, args...)
	if code != 0 {
		t.Fatalf("streamkit %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return string(out)
}

type historyJSON struct {
	Version int64 `json:"version"`
	Oldest  int64 `json:"oldestCommit"`
	Commits []struct {
		Version   int64  `json:"version"`
		Operation string `json:"operation"`
	} `json:"commits"`
	Flows []struct {
		AppID   string `json:"appId"`
		Version int64  `json:"version"`
	} `json:"flows"`
}

func readHistoryJSON(t *testing.T, root string) historyJSON {
	t.Helper()
	var h historyJSON
	if err := json.Unmarshal([]byte(runTool(t, "delta", "history", root, "--format", "json")), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// logCleanupTables: a table with delta.logRetentionDuration=interval 1 days whose first
// versions are made 3 days old loses them at the next checkpoint, and keeps working with delta
// history, optimize and vacuum; a table whose files are all within the (default) retention
// keeps every log file.
func logCleanupTables(t *testing.T, mem memory.Allocator, dir string) []manifestEntry {
	root, ck := filepath.Join(dir, "cleaned"), filepath.Join(dir, "ck-cleaned")
	args := []string{root, "--flow", "clean", "--checkpoint", ck,
		"--table-property", "delta.logRetentionDuration=interval 1 days", "--table-property", "delta.checkpointInterval=5"}
	runEpochs(t, mem, 1, 18, args...) // versions 0..17, checkpoints 5, 10, 15
	ageLogFiles(t, root, 12, time.Now().Add(-3*24*time.Hour))
	c0, k0 := logNames(t, root)
	log := runEpochs(t, mem, 19, 30, args...) // versions 18..29, checkpoints 20, 25: cleanup
	c1, k1 := logNames(t, root)
	t.Logf("cleaned table: before the run %d commits + %d checkpoints; after 12 more commits: %d commits (%s..%s) + %d checkpoints %v",
		len(c0), len(k0), len(c1), c1[0], c1[len(c1)-1], len(k1), k1)
	if !strings.Contains(log, "deleted expired Delta log files") {
		t.Errorf("no cleanup logged:\n%s", log)
	}
	// Checkpoint 10 is the newest one older than the cut-off: versions 0..9 go.
	if len(c1) != 20 || c1[0] != "00000000000000000010.json" || len(k1) != 4 || k1[0] != "00000000000000000010.checkpoint.parquet" {
		t.Fatalf("after cleanup: commits %v checkpoints %v", c1, k1)
	}
	h := readHistoryJSON(t, root)
	if h.Oldest != 10 || h.Version != 29 || len(h.Commits) != 20 || len(h.Flows) != 1 || h.Flows[0].Version != 30 {
		t.Fatalf("history after cleanup: oldest %d version %d, %d commits, flows %+v", h.Oldest, h.Version, len(h.Commits), h.Flows)
	}
	runTool(t, "delta", "optimize", root)                            // version 30 (a checkpoint, cleanup again)
	runTool(t, "delta", "vacuum", root, "--retain", "0h", "--force") // versions 31, 32
	h = readHistoryJSON(t, root)
	ops := map[string]int{}
	for _, c := range h.Commits {
		ops[c.Operation]++
	}
	if h.Oldest != 10 || h.Version != 32 || ops["OPTIMIZE"] != 1 || ops["VACUUM START"] != 1 || ops["VACUUM END"] != 1 {
		t.Fatalf("history after optimize+vacuum: oldest %d version %d ops %v", h.Oldest, h.Version, ops)
	}
	if files := parquetFiles(t, root); len(files) != 1 {
		t.Errorf("after optimize + vacuum: %d data files, want 1", len(files))
	}
	out := runTool(t, "delta", "cleanup-log", root, "--dry-run")
	if !strings.Contains(out, "dry run: 0 log files before checkpoint 10") {
		t.Errorf("cleanup-log --dry-run: %s", out)
	}
	cleaned := manifestEntry{Name: "log-cleaned+optimize+vacuum", Table: root, Key: "id", Readers: allReaders, MinVersions: 23,
		Expected: []string{idsFile(t, mem, filepath.Join(dir, "cleaned.arrow"), 1, 30)}}

	// Within retention (default 30 days; files 10 days old): everything stays.
	root2 := filepath.Join(dir, "retained")
	args2 := []string{root2, "--flow", "keep", "--checkpoint", filepath.Join(dir, "ck-retained"), "--table-property", "delta.checkpointInterval=5"}
	runEpochs(t, mem, 1, 18, args2...)
	ageLogFiles(t, root2, 17, time.Now().Add(-10*24*time.Hour))
	runEpochs(t, mem, 19, 23, args2...)
	c2, k2 := logNames(t, root2)
	t.Logf("retained table: %d commits + %d checkpoints", len(c2), len(k2))
	if len(c2) != 23 || len(k2) != 4 {
		t.Fatalf("within retention: commits %v checkpoints %v", c2, k2)
	}
	retained := manifestEntry{Name: "log-within-retention", Table: root2, Key: "id", Readers: allReaders, MinVersions: 23,
		Expected: []string{idsFile(t, mem, filepath.Join(dir, "retained.arrow"), 1, 23)}}
	return []manifestEntry{cleaned, retained}
}

// flowLockTable: a second write-delta of a flow that is running fails at once naming the
// holder; a second checkpoint of the flow is refused until --flow-takeover; the sidecar lock
// survives vacuum and does not bother the readers.
func flowLockTable(t *testing.T, mem memory.Allocator, dir string) manifestEntry {
	root := filepath.Join(dir, "locked")
	ckA, ckB := filepath.Join(dir, "ck-lockA"), filepath.Join(dir, "ck-lockB")
	p1 := startWD(t, mem, idSchema, root, "--flow", "shared", "--checkpoint", ckA)
	r := idBatch(mem, 10, 20)
	p1.rec(r).barrier(1)
	r.Release()
	for deadline := time.Now().Add(30 * time.Second); !exists(filepath.Join(root, delta.LogDir, "00000000000000000000.json")); {
		if time.Now().After(deadline) {
			t.Fatalf("first writer did not commit: %s", p1.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	second := newStream(t, mem, idSchema).ids(500, 510).barrier(1).end(codec.Final)
	for _, extra := range [][]string{{"--checkpoint", filepath.Join(dir, "ck-lockC")}, nil} {
		start := time.Now()
		_, stderr, code := peertest.Run(t, nil, second, append([]string{"write-delta", root, "--flow", "shared"}, extra...)...)
		took := time.Since(start)
		want := fmt.Sprintf(`flow "shared" of table %s is in use by write-delta (pid %d`, root, p1.cmd.Process.Pid)
		if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "checkpoint "+ckA) || took > 10*time.Second {
			t.Fatalf("second writer of a running flow %v: exit %d after %s\n%s\nwant %q", extra, code, took, stderr, want)
		}
		t.Logf("second writer refused after %s: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr))
	}
	r = idBatch(mem, 20, 30)
	p1.rec(r).barrier(2)
	r.Release()
	if err := p1.finish(codec.Final); err != nil {
		t.Fatal(err)
	}
	// The same checkpoint again: fine.
	runEpochs(t, mem, 3, 4, root, "--flow", "shared", "--checkpoint", ckA)
	// Another checkpoint for the flow: refused.
	in := newStream(t, mem, idSchema).ids(50, 60).barrier(5).end(codec.Final)
	_, stderr, code := peertest.Run(t, nil, in, "write-delta", root, "--flow", "shared", "--checkpoint", ckB)
	if code != 2 || !strings.Contains(stderr, `flow "shared" of table `+root+" belongs to checkpoint "+ckA) || !strings.Contains(stderr, "--flow-takeover") {
		t.Fatalf("second checkpoint: exit %d\n%s", code, stderr)
	}
	t.Logf("second checkpoint refused: %s", strings.TrimSpace(stderr))
	// --flow-takeover moves it; then the first checkpoint is the stranger.
	runEpochs(t, mem, 5, 6, root, "--flow", "shared", "--checkpoint", ckB, "--flow-takeover")
	in = newStream(t, mem, idSchema).ids(70, 80).barrier(7).end(codec.Final)
	if _, stderr, code := peertest.Run(t, nil, in, "write-delta", root, "--flow", "shared", "--checkpoint", ckA); code != 2 || !strings.Contains(stderr, "belongs to checkpoint "+ckB) {
		t.Fatalf("old checkpoint after takeover: exit %d\n%s", code, stderr)
	}
	lock := delta.FlowLockPath(root, "shared")
	var rec delta.FlowRecord
	if b, err := os.ReadFile(lock); err != nil || json.Unmarshal(b, &rec) != nil || rec.Owner == nil || rec.Owner.Checkpoint != ckB || rec.TableID == "" {
		t.Fatalf("lock file %s: %+v %v", lock, rec, err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(lock, old, old)
	runTool(t, "delta", "vacuum", root, "--retain", "0h", "--force")
	if !exists(lock) {
		t.Fatal("vacuum deleted the flow lock")
	}
	// delta-rs' vacuum leaves it alone too.
	py := fmt.Sprintf("from deltalake import DeltaTable\nprint(DeltaTable(%q).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False))", root)
	out := peertest.RunPython(t, peertest.Python(t), py)
	if !exists(lock) {
		t.Fatalf("delta-rs vacuum deleted the flow lock\n%s", out)
	}
	return manifestEntry{Name: "flow-lock", Table: root, Key: "id", Readers: allReaders,
		Expected: []string{idsFile(t, mem, filepath.Join(dir, "locked.arrow"), 1, 6)}}
}

var regionSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "value", Type: arrow.StructOf(
		arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	), Nullable: true},
}, nil)

var regionOut = arrow.NewSchema(append(regionSchema.Fields(), arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}), nil)

// regionRows returns rows id0..id0+n-1 as input and as expected output (with the promoted
// region column): special characters, empty, null regions and null structs.
func regionRows(t *testing.T, mem memory.Allocator, id0, n int) (in, want arrow.RecordBatch) {
	regions := []string{`"eu"`, `"A/A"`, `"B B"`, `"R&D"`, `"50%"`, `"é"`, `""`, "null"}
	var rin, rout []string
	for id := id0; id < id0+n; id++ {
		reg := regions[id%len(regions)]
		if id%11 == 3 {
			rin = append(rin, fmt.Sprintf(`{"id":%d,"value":null}`, id))
			rout = append(rout, fmt.Sprintf(`{"id":%d,"value":null,"region":null}`, id))
			continue
		}
		rin = append(rin, fmt.Sprintf(`{"id":%d,"value":{"region":%s,"amount":%d}}`, id, reg, id*3))
		rout = append(rout, fmt.Sprintf(`{"id":%d,"value":{"region":%s,"amount":%d},"region":%s}`, id, reg, id*3, reg))
	}
	return fromJSON(t, mem, regionSchema, rin), fromJSON(t, mem, regionOut, rout)
}

// nestedPartitionTable: --partition-by value.region partitions by a top-level copy of the
// field; a later run without --partition-by fills it the same way.
func nestedPartitionTable(t *testing.T, mem memory.Allocator, dir string) manifestEntry {
	root := filepath.Join(dir, "nested-partition")
	in1, want1 := regionRows(t, mem, 0, 60)
	in2, want2 := regionRows(t, mem, 60, 40)
	defer in1.Release()
	defer in2.Release()
	defer want1.Release()
	defer want2.Release()
	writeDelta(t, mem, regionSchema, [][]arrow.RecordBatch{{in1}}, root, "--flow", "n", "--partition-by", "value.region")
	writeDelta(t, mem, regionSchema, [][]arrow.RecordBatch{{in2}}, root, "--flow", "n2")
	s := snapshot(t, root)
	if pc := s.PartitionColumns(); len(pc) != 1 || pc[0] != "region" || s.Metadata().Configuration["streamkit.partitionColumn.region"] != "value.region" {
		t.Fatalf("partitioning %v, configuration %v", pc, s.Metadata().Configuration)
	}
	for _, d := range []string{"region=A%2FA", "region=__HIVE_DEFAULT_PARTITION__", "region=eu"} {
		if !exists(filepath.Join(root, d)) {
			t.Errorf("no partition directory %s", d)
		}
	}
	return manifestEntry{Name: "nested-partition-by", Table: root, Key: "id", Readers: allReaders, EmptyAsNull: []string{"region"},
		Expected: []string{writeArrowFile(t, filepath.Join(dir, "nested-partition.arrow"), regionOut, want1, want2)}}
}
