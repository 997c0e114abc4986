package writedelta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

func TestEpochsBecomeCommitsWithTxn(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	in := newStream(t, mem, idSchema).ids(0, 5).ids(5, 7).barrier(1).barrier(2).ids(7, 10).barrier(3).end(codec.Pause)
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f1"}, filepath.Join(dir, "ck"), in)

	s := snapshot(t, root)
	if s.Version() != 1 {
		t.Fatalf("version %d, want 1 (epochs 1 and 3 one commit each; epoch 2 had no rows: none)", s.Version())
	}
	if v, ok := s.TxnVersion("f1"); !ok || v != 3 {
		t.Fatalf("txn version %d %v, want 3", v, ok)
	}
	tbl := delta.NewTable(root, nil)
	for v, want := range []struct {
		epoch int64
		adds  int
		rows  string
	}{{1, 1, "7"}, {3, 1, "3"}} {
		acts, err := tbl.ReadCommit(int64(v))
		if err != nil {
			t.Fatal(err)
		}
		var txns, adds int
		for _, a := range acts {
			if a.Txn != nil {
				txns++
				if a.Txn.AppID != "f1" || a.Txn.Version != want.epoch || a.Txn.LastUpdated == nil {
					t.Errorf("version %d: txn %+v, want f1/%d", v, *a.Txn, want.epoch)
				}
			}
			if a.Add != nil {
				adds++
			}
		}
		ci := acts[0].CommitInfo
		if ci == nil || ci.Operation != "STREAMING UPDATE" || ci.OperationParameters["epochId"] != fmt.Sprint(want.epoch) ||
			ci.OperationParameters["queryId"] != "f1" || ci.OperationMetrics["numOutputRows"] != want.rows || !ci.IsBlindAppend {
			t.Errorf("version %d: commitInfo %+v", v, ci)
		}
		if txns != 1 || adds != want.adds {
			t.Errorf("version %d: %d txn, %d adds; want 1, %d", v, txns, adds, want.adds)
		}
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 10)) {
		t.Fatalf("ids %v", got)
	}
}

func TestReplayedEpochsAreSkippedWithoutDataFiles(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root, ck := filepath.Join(dir, "t"), filepath.Join(dir, "ck")
	first := newStream(t, mem, idSchema).ids(0, 10).barrier(1).ids(10, 20).barrier(2).ids(20, 30).barrier(3).end(codec.Pause)
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, first)
	files := parquetFiles(t, root)
	if len(files) != 3 {
		t.Fatalf("%d data files, want 3", len(files))
	}

	// A crash after the table commit of epoch 3 but before its commit marker: the checkpoint
	// says 2, so the source replays epoch 3, then continues with 4.
	if err := os.Remove(filepath.Join(ck, "commits", state.EpochName(3)+".json")); err != nil {
		t.Fatal(err)
	}
	replay := newStream(t, mem, idSchema).ids(20, 30).barrier(3).ids(30, 35).barrier(4).end(codec.Pause)
	log := mustRun(t, deltasink.StreamConfig{Table: root}, ck, replay)
	if !strings.Contains(log, "epoch already committed to the table: skipped") {
		t.Errorf("no skip logged:\n%s", log)
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 35)) {
		t.Fatalf("ids %v", got)
	}
	if got := parquetFiles(t, root); len(got) != 4 {
		t.Fatalf("data files %v: the replayed epoch must not write one", got)
	}

	// A deterministic producer without a checkpoint replays everything from epoch 1: all
	// committed epochs are skipped (held in memory, never written), epoch 5 is new.
	all := newStream(t, mem, idSchema).ids(0, 10).barrier(1).ids(10, 20).barrier(2).ids(20, 30).barrier(3).
		ids(30, 35).barrier(4).ids(35, 40).barrier(5).end(codec.Pause)
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, all)
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 40)) {
		t.Fatalf("ids %v", got)
	}
	if got := parquetFiles(t, root); len(got) != 5 {
		t.Fatalf("data files %v, want 5", got)
	}
	if v, _ := snapshot(t, root).TxnVersion(readFlow(t, ck)); v != 5 {
		t.Fatalf("txn %d", v)
	}
}

func TestReplaySpillsBeyondHoldLimitAndDeletesFiles(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	ck := filepath.Join(dir, "ck")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).ids(0, 100).barrier(1).end(codec.Final))
	// A crash between the table commit and the checkpoint's: the checkpoint lost epoch 1's
	// commit record, so epoch 1 comes again and may be committed already: its rows are held;
	// with a tiny hold limit they spill into a data file that is deleted when epoch 1 turns
	// out to be committed already.
	if err := os.RemoveAll(filepath.Join(ck, state.CommitsDir)); err != nil {
		t.Fatal(err)
	}
	in := newStream(t, mem, idSchema).ids(0, 50).ids(50, 100).barrier(1).ids(100, 110).barrier(2).end(codec.Final)
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", HoldBytes: 1}, ck, in)
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 110)) {
		t.Fatalf("ids %v", got)
	}
	if got := parquetFiles(t, root); len(got) != 2 {
		t.Fatalf("data files %v, want 2 (the spilled file of the skipped epoch is deleted)", got)
	}
}

func readFlow(t testing.TB, ck string) string {
	t.Helper()
	var rec deltasink.FlowFileRecord
	if err := state.ReadJSON(filepath.Join(ck, deltasink.FlowFile), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Flow
}

func TestFlowIDKeptInCheckpoint(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root, ck := filepath.Join(dir, "t"), filepath.Join(dir, "ck")
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(0, 1).barrier(1).end(codec.Pause))
	flow := readFlow(t, ck)
	if len(flow) != 36 {
		t.Fatalf("generated flow %q, want a UUID", flow)
	}
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(1, 2).barrier(2).end(codec.Pause))
	s := snapshot(t, root)
	if len(s.Txns()) != 1 {
		t.Fatalf("txns %v: a restart must keep the flow", s.Txns())
	}
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "other"}, ck, newStream(t, mem, idSchema).end(codec.Pause))
	var ue *stage.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "belongs to flow") {
		t.Fatalf("other --flow: %v", err)
	}
	_, err = run(t, deltasink.StreamConfig{Table: filepath.Join(dir, "t2")}, ck, newStream(t, mem, idSchema).end(codec.Pause))
	if err == nil || !strings.Contains(err.Error(), "other options") {
		t.Fatalf("other table: %v", err)
	}
	// Committed epochs but the flow file lost: refuse rather than re-commit under a new flow.
	os.Remove(filepath.Join(ck, deltasink.FlowFile))
	_, err = run(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).end(codec.Pause))
	if err == nil || !strings.Contains(err.Error(), "--flow") {
		t.Fatalf("lost flow file: %v", err)
	}
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: flow}, ck, newStream(t, mem, idSchema).ids(2, 3).barrier(3).end(codec.Pause))
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 3)) {
		t.Fatalf("ids %v", got)
	}
}

func TestCheckpointAheadOfTableIsRefused(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root, ck := filepath.Join(dir, "t"), filepath.Join(dir, "ck")
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(0, 1).barrier(1).end(codec.Pause))
	os.RemoveAll(root)
	_, err := run(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(1, 2).barrier(2).end(codec.Pause))
	if err == nil || !strings.Contains(err.Error(), "records epoch 1 as committed") {
		t.Fatalf("got %v", err)
	}
}

func TestNoCheckpointWarnsAndCommits(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	log := mustRun(t, deltasink.StreamConfig{Table: root}, "", newStream(t, mem, idSchema).ids(0, 3).barrier(1).end(codec.Final))
	if !strings.Contains(log, "cannot be exactly-once") {
		t.Errorf("no warning:\n%s", log)
	}
	mustRun(t, deltasink.StreamConfig{Table: root}, "", newStream(t, mem, idSchema).ids(3, 6).barrier(1).end(codec.Final))
	s := snapshot(t, root)
	if len(s.Txns()) != 2 {
		t.Fatalf("txns %v: each run without checkpoint has its own flow", s.Txns())
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 6)) {
		t.Fatalf("ids %v", got)
	}
}

func TestTrailingRows(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root, ck := filepath.Join(dir, "t"), filepath.Join(dir, "ck")
	// A foreign producer: rows, then the EOS marker (end=final), no barrier at all.
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(0, 4).eos())
	s := snapshot(t, root)
	if v, _ := s.TxnVersion(readFlow(t, ck)); v != 1 || s.Version() != 0 {
		t.Fatalf("txn %d version %d, want epoch 1 at version 0", v, s.Version())
	}
	if c, _ := state.Committed(ck); c != 1 {
		t.Fatalf("own commit marker %d, want 1", c)
	}
	// The next foreign run is new data: epoch 2.
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(4, 6).eos())
	// Rows after the last barrier of a streamkit stream ending with final: a final epoch.
	mustRun(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(6, 7).barrier(3).ids(7, 9).end(codec.Final))
	if v, _ := snapshot(t, root).TxnVersion(readFlow(t, ck)); v != 4 {
		t.Fatalf("txn %d, want 4", v)
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 9)) {
		t.Fatalf("ids %v", got)
	}
	// ... but before end=pause they are an error, and nothing of them stays on disk.
	before := parquetFiles(t, root)
	_, err := run(t, deltasink.StreamConfig{Table: root}, ck, newStream(t, mem, idSchema).ids(9, 10).barrier(5).ids(10, 12).end(codec.Pause))
	if err == nil || !strings.Contains(err.Error(), "2 rows arrived after the last barrier") {
		t.Fatalf("pause with trailing rows: %v", err)
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 10)) {
		t.Fatalf("ids %v", got)
	}
	if got := parquetFiles(t, root); len(got) != len(before)+1 {
		t.Fatalf("data files %v", got)
	}
}

func TestEmptyStreamCreatesTable(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, PartitionBy: []string{"s"}}, "", newStream(t, mem, idSchema).end(codec.Final))
	s := snapshot(t, root)
	if s.Version() != 0 || s.NumFiles() != 0 || len(s.Txns()) != 0 {
		t.Fatalf("version %d files %d txns %v", s.Version(), s.NumFiles(), s.Txns())
	}
	if got := s.Schema().String(); got != "struct<id:long,s:string>" || s.PartitionColumns()[0] != "s" {
		t.Fatalf("schema %s partitioned by %v", got, s.PartitionColumns())
	}
	// An empty first epoch creates the table too, with the txn.
	root2 := filepath.Join(t.TempDir(), "t2")
	mustRun(t, deltasink.StreamConfig{Table: root2, Flow: "f"}, "", newStream(t, mem, idSchema).barrier(1).end(codec.Final))
	if v, ok := snapshot(t, root2).TxnVersion("f"); !ok || v != 1 {
		t.Fatalf("txn %d %v", v, ok)
	}
}

func TestMergeSchemaAndDiff(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "ck") // runs resuming flow "f" need its checkpoint
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).ids(0, 2).barrier(1).end(codec.Final))

	wide := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "extra", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "nested", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
	in := func() []byte {
		return newStream(t, mem, wide).json(`[{"id":7,"extra":"2024-02-01","nested":{"x":1}}]`).barrier(2).end(codec.Final)
	}
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, in())
	if err == nil || !strings.Contains(err.Error(), "+ extra: date (not in the table)") ||
		!strings.Contains(err.Error(), "+ nested: struct<x:long>") || !strings.Contains(err.Error(), "--merge-schema") {
		t.Fatalf("got %v", err)
	}
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", MergeSchema: true}, ck, in())
	s := snapshot(t, root)
	if got := s.Schema().String(); got != "struct<id:long,s:string,extra:date,nested:struct<x:long>>" {
		t.Fatalf("merged schema %s", got)
	}
	acts, _ := delta.NewTable(root, nil).ReadCommit(s.Version())
	if acts[1].MetaData == nil {
		t.Fatalf("the evolving commit carries no metaData: %+v", acts[1])
	}

	// A type that cannot be converted: the diff names it.
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	_, err = run(t, deltasink.StreamConfig{Table: root, Flow: "f", MergeSchema: true}, ck, newStream(t, mem, bad).end(codec.Final))
	if err == nil || !strings.Contains(err.Error(), "~ id: table long, input string (cannot be converted)") {
		t.Fatalf("got %v", err)
	}
}

func TestMergeSchemaRelaxesNullability(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	// A table whose id column is NOT NULL (as Spark creates from a non-nullable source).
	p, m, err := delta.NewTableMetadata(idSchema, delta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.SchemaString = strings.Replace(m.SchemaString, `"name":"id","type":"long","nullable":true`, `"name":"id","type":"long","nullable":false`, 1)
	if _, err := delta.NewTable(root, nil).Commit(context.Background(), delta.CommitRequest{Protocol: p, Metadata: m}); err != nil {
		t.Fatal(err)
	}
	in := func() []byte {
		return newStream(t, mem, idSchema).json(`[{"id":null,"s":"x"}]`).barrier(1).end(codec.Final)
	}
	if _, err := run(t, deltasink.StreamConfig{Table: root, Flow: "f"}, "", in()); err == nil || !strings.Contains(err.Error(), "not nullable") {
		t.Fatalf("null into NOT NULL: %v", err)
	}
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", MergeSchema: true}, "", in())
	if f := snapshot(t, root).Schema().Field("id"); !f.Nullable {
		t.Fatal("id still NOT NULL")
	}
}

func TestUnsupportedTypeNamesColumn(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Duration_s})},
	}, nil)
	root := filepath.Join(t.TempDir(), "t")
	_, err := run(t, deltasink.StreamConfig{Table: root}, "", newStream(t, mem, sc).end(codec.Final))
	if err == nil || !strings.Contains(err.Error(), "column st.d") || !errors.Is(err, delta.ErrUnsupportedType) {
		t.Fatalf("got %v", err)
	}
	if exists(root) {
		t.Fatal("a refused stream must not create the table")
	}
}

// nanoSchema has a nanosecond timestamp column, which Delta cannot store without truncation.
var nanoSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
}, nil)

// nanoInput is one epoch of nanoSchema whose timestamp has digits below the microsecond.
func nanoInput(t testing.TB, mem memory.Allocator) []byte {
	return newStream(t, mem, nanoSchema).json(`[{"id":1,"ts":"2024-01-01T00:00:00.123456789Z"}]`).barrier(1).end(codec.Final)
}

func TestTimestampPrecision(t *testing.T) {
	mem := newMem(t)
	in := func() []byte { return nanoInput(t, mem) }
	root := filepath.Join(t.TempDir(), "t")
	_, err := run(t, deltasink.StreamConfig{Table: root}, "", in())
	if err == nil || !strings.Contains(err.Error(), "column ts") || !strings.Contains(err.Error(), "nanosecond") {
		t.Fatalf("got %v", err)
	}
	mustRun(t, deltasink.StreamConfig{Table: root, TruncateTimestamps: true}, "", in())
	tbl := readParquet(t, filepath.Join(root, parquetFiles(t, root)[0]))
	defer tbl.Release()
	ts := tbl.Column(1).Data().Chunk(0).(*array.Timestamp)
	if ts.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond || ts.Value(0)%1_000_000 != 123456 {
		t.Fatalf("stored %v %v", ts.DataType(), ts.Value(0))
	}
}

func TestOverwriteReplacesContents(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "a"}, "", newStream(t, mem, idSchema).ids(0, 10).barrier(1).end(codec.Final))
	in := newStream(t, mem, idSchema).ids(100, 103).barrier(1).barrier(2).ids(200, 202).barrier(3).end(codec.Final)
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "b", Mode: deltasink.ModeOverwrite}, "", in)
	if got := tableIDs(t, root); !equalIDs(got, seq(200, 202)) {
		t.Fatalf("ids %v, want the last non-empty epoch only", got)
	}
	s := snapshot(t, root)
	acts, _ := delta.NewTable(root, nil).ReadCommit(1)
	var removes int
	for _, a := range acts {
		if a.Remove != nil {
			removes++
			if !a.Remove.DataChange || a.Remove.Size == nil || a.Remove.DeletionTimestamp == nil {
				t.Errorf("remove %+v", *a.Remove)
			}
		}
	}
	if removes != 1 || acts[0].CommitInfo.IsBlindAppend || acts[0].CommitInfo.OperationParameters["outputMode"] != "Complete" {
		t.Errorf("overwrite commit: %d removes, commitInfo %+v", removes, acts[0].CommitInfo)
	}
	if v, _ := s.TxnVersion("b"); v != 3 {
		t.Errorf("txn %d", v)
	}
}

func TestWithConstantColumns(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "n", Type: arrow.PrimitiveTypes.Int32}}, nil)
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, "", newStream(t, mem, sc).json(`[{"id":1,"n":5}]`).barrier(1).end(codec.Final))
	in := newStream(t, mem, idSchema).ids(2, 2000).ids(2000, 5000).barrier(1).end(codec.Final)
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "g", MergeSchema: true, With: []deltasink.Constant{{Name: "n", Value: "42"}, {Name: "src", Value: "stream"}}}, "", in)
	s := snapshot(t, root)
	if got := s.Schema().String(); got != "struct<id:long,n:integer,s:string,src:string>" {
		t.Fatalf("schema %s", got)
	}
	for _, f := range parquetFiles(t, root) {
		tbl := readParquet(t, filepath.Join(root, f))
		if tbl.NumRows() > 1 {
			n := tbl.Column(tbl.Schema().FieldIndices("n")[0]).Data()
			src := tbl.Column(tbl.Schema().FieldIndices("src")[0]).Data()
			for _, ch := range n.Chunks() {
				for i, v := range ch.(*array.Int32).Int32Values() {
					if v != 42 || ch.IsNull(i) {
						t.Fatalf("n = %d", v)
					}
				}
			}
			for _, ch := range src.Chunks() {
				sa := ch.(*array.String)
				for i := 0; i < sa.Len(); i++ {
					if sa.Value(i) != "stream" {
						t.Fatalf("src = %q", sa.Value(i))
					}
				}
			}
			if tbl.NumRows() != 4998 {
				t.Fatalf("%d rows", tbl.NumRows())
			}
		}
		tbl.Release()
	}
	_, err := run(t, deltasink.StreamConfig{Table: root, Flow: "h", With: []deltasink.Constant{{Name: "n", Value: "many"}}}, "", newStream(t, mem, idSchema).end(codec.Final))
	if err == nil || !strings.Contains(err.Error(), "--with n=many") {
		t.Fatalf("bad constant: %v", err)
	}
	_, err = run(t, deltasink.StreamConfig{Table: root, Flow: "h", With: []deltasink.Constant{{Name: "ID", Value: "1"}}}, "", newStream(t, mem, idSchema).end(codec.Final))
	if err == nil || !strings.Contains(err.Error(), "already has a column") {
		t.Fatalf("clashing constant: %v", err)
	}
}

func TestExistingTableChecks(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "ck") // runs resuming flow "f" need its checkpoint
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", PartitionBy: []string{"s"}, Properties: map[string]string{"delta.appendOnly": "true"}}, ck,
		newStream(t, mem, idSchema).ids(0, 3).barrier(1).end(codec.Final))
	for _, tc := range []struct {
		cfg  deltasink.StreamConfig
		want string
	}{
		{deltasink.StreamConfig{PartitionBy: []string{"id"}}, "is partitioned by [s]"},
		{deltasink.StreamConfig{Mode: deltasink.ModeOverwrite}, "append-only"},
		{deltasink.StreamConfig{Properties: map[string]string{"delta.enableChangeDataFeed": "true"}}, "changing delta.enableChangeDataFeed"},
	} {
		tc.cfg.Table = root
		_, err := run(t, tc.cfg, "", newStream(t, mem, idSchema).end(codec.Final))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// A safe property change is committed as a metadata update with the next epoch.
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f", Properties: map[string]string{"delta.checkpointInterval": "3", "owner": "me"}}, ck,
		newStream(t, mem, idSchema).ids(3, 4).barrier(2).end(codec.Final))
	conf := snapshot(t, root).Metadata().Configuration
	if conf["delta.checkpointInterval"] != "3" || conf["owner"] != "me" || conf["delta.appendOnly"] != "true" {
		t.Fatalf("configuration %v", conf)
	}
}

// protocolTable writes a version-0 commit with the given protocol line.
func protocolTable(t *testing.T, root, protocol string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, delta.LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	commit := `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE","operationParameters":{}}}
` + protocol + `
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"s\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}}
`
	if err := os.WriteFile(filepath.Join(root, delta.LogDir, "00000000000000000000.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestForeignFeaturesRefused(t *testing.T) {
	mem := newMem(t)
	for _, tc := range []struct{ protocol, want string }{
		{`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":["rowTracking","domainMetadata"]}}`, `writer feature "rowTracking"`},
		{`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["futureFeature"],"writerFeatures":["futureFeature"]}}`, `reader feature "futureFeature"`},
		{`{"protocol":{"minReaderVersion":4,"minWriterVersion":7}}`, "reader version 4"},
		{`{"protocol":{"minReaderVersion":1,"minWriterVersion":8}}`, "writer version 8"},
	} {
		root := filepath.Join(t.TempDir(), "t")
		protocolTable(t, root, tc.protocol)
		_, err := run(t, deltasink.StreamConfig{Table: root}, "", newStream(t, mem, idSchema).ids(0, 1).barrier(1).end(codec.Final))
		if err == nil || !errors.Is(err, delta.ErrUnsupportedProtocol) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.protocol, err, tc.want)
		}
		if n := len(parquetFiles(t, root)); n != 0 {
			t.Errorf("%d data files written into a refused table", n)
		}
	}
}

// TestConcurrentFlowsInProcess runs several writers with different flows on one new table at
// the same time: one creates it, the others join, every epoch lands exactly once.
func TestConcurrentFlowsInProcess(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "t")
	const flows, epochs, rows = 4, 15, 3
	inputs := make([][]byte, flows)
	for f := range inputs {
		s := newStream(t, mem, idSchema)
		for e := 1; e <= epochs; e++ {
			base := (f*epochs + e - 1) * rows
			s.ids(base, base+rows).barrier(uint64(e))
		}
		inputs[f] = s.end(codec.Pause)
	}
	var wg sync.WaitGroup
	errs := make([]error, flows)
	logs := make([]string, flows)
	for f := 0; f < flows; f++ {
		wg.Add(1)
		go func(f int) {
			defer wg.Done()
			logs[f], errs[f] = run(t, deltasink.StreamConfig{Table: root}, filepath.Join(dir, fmt.Sprintf("ck%d", f)), inputs[f])
		}(f)
	}
	wg.Wait()
	for f, err := range errs {
		if err != nil {
			t.Fatalf("flow %d: %v\n%s", f, err, logs[f])
		}
	}
	s := snapshot(t, root)
	if s.Version() != flows*epochs-1 || len(s.Txns()) != flows {
		t.Fatalf("version %d txns %v", s.Version(), s.Txns())
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, flows*epochs*rows)) {
		t.Fatalf("ids %v", got)
	}
}

func TestParallelWriters(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	s := newStream(t, mem, idSchema)
	for i := 0; i < 20; i++ {
		s.ids(i*100, (i+1)*100)
	}
	in := s.barrier(1).ids(2000, 2001).barrier(2).end(codec.Final)
	small := func(w *deltasink.StreamWriter) { w.SetLaneThreshold(1000) }
	if log, err := run(t, deltasink.StreamConfig{Table: root, Writers: 3}, "", in, small); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 2001)) {
		t.Fatalf("ids %v", got)
	}
	acts, _ := delta.NewTable(root, nil).ReadCommit(0)
	adds := 0
	for _, a := range acts {
		if a.Add != nil {
			adds++
		}
	}
	if adds != 3 {
		t.Fatalf("epoch 1 wrote %d files, want 3 (one per writer)", adds)
	}
	// A write error in a lane (nanosecond digits) fails the epoch and deletes its files.
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}}}, nil)
	bad := newStream(t, mem, sc)
	for i := 0; i < 10; i++ {
		bad.json(fmt.Sprintf(`[{"id":%d,"ts":"2024-01-01T00:00:00Z"},{"id":%d,"ts":"2024-01-01T00:00:00.000000%dZ"}]`, 2*i, 2*i+1, i%2))
	}
	root2 := filepath.Join(t.TempDir(), "t2")
	_, err := run(t, deltasink.StreamConfig{Table: root2, Writers: 3}, "", bad.barrier(1).end(codec.Final), func(w *deltasink.StreamWriter) { w.SetLaneThreshold(10) })
	if err == nil || !strings.Contains(err.Error(), "nanosecond") {
		t.Fatalf("got %v", err)
	}
	if n := len(parquetFiles(t, root2)); n != 0 {
		t.Fatalf("%d data files left after a failed epoch", n)
	}
}

func TestShardFlows(t *testing.T) {
	mem := newMem(t)
	root := filepath.Join(t.TempDir(), "t")
	for i := 0; i < 2; i++ {
		t.Setenv(stage.EnvShard, fmt.Sprint(i))
		mustRun(t, deltasink.StreamConfig{Table: root, Flow: "orders"}, "", newStream(t, mem, idSchema).ids(i*10, i*10+10).barrier(1).end(codec.Final))
	}
	txns := snapshot(t, root).Txns()
	if _, ok := txns["orders-shard-0"]; !ok || len(txns) != 2 {
		t.Fatalf("txns %v, want one flow per shard", txns)
	}
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 20)) {
		t.Fatalf("ids %v", got)
	}
}

// A run that fails before its first commit — malformed input (a timestamp with nanoseconds
// and no --truncate-timestamps) or a truncated stream (the upstream died) — creates no table,
// so it must leave no _streamkit/flows/*.lock behind: a directory holding only that looks like
// a table to nobody and blocks nothing, it is litter. A root it created goes too; a root that
// existed (empty) stays, empty. A later good run still creates the table.
func TestFailedFirstEpochLeavesNoLock(t *testing.T) {
	mem := newMem(t)
	sc := nanoSchema
	nanos := func() []byte { return nanoInput(t, mem) }
	truncated := func() []byte {
		// rows, then the bytes stop before their barrier: no end batch, no end-of-stream marker
		return newStream(t, mem, sc).json(`[{"id":1,"ts":"2024-01-01T00:00:00.123456Z"}]`).buf.Bytes()
	}
	for _, c := range []struct {
		name  string
		input func() []byte
		want  string
	}{
		{"nanoseconds", nanos, "nanosecond"},
		{"truncated", truncated, "without an end-of-stream marker"},
	} {
		for _, existing := range []bool{false, true} {
			for _, ckpt := range []bool{false, true} {
				name := fmt.Sprintf("%s/existing=%v/checkpoint=%v", c.name, existing, ckpt)
				base := t.TempDir()
				root := filepath.Join(base, "t")
				if existing {
					if err := os.Mkdir(root, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				dir := ""
				if ckpt {
					dir = filepath.Join(base, "ck")
				}
				log, err := run(t, deltasink.StreamConfig{Table: root}, dir, c.input())
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: got %v\n%s", name, err, log)
				}
				entries, statErr := os.ReadDir(root)
				switch {
				case !existing && !errors.Is(statErr, os.ErrNotExist):
					t.Fatalf("%s: the table root %s was left behind (%v)", name, root, entries)
				case existing && (statErr != nil || len(entries) > 0):
					t.Fatalf("%s: the existing directory was not left as it was: %v %v", name, entries, statErr)
				}
				good := newStream(t, mem, sc).json(`[{"id":1,"ts":"2024-01-01T00:00:00.123456Z"}]`).barrier(1).end(codec.Final)
				if log, err := run(t, deltasink.StreamConfig{Table: root, Flow: "good"}, filepath.Join(base, "ck2"), good); err != nil {
					t.Fatalf("%s: a good run after the failed one: %v\n%s", name, err, log)
				}
				if !exists(delta.FlowLockPath(root, "good")) || !equalIDs(tableIDs(t, root), []int64{1}) {
					t.Fatalf("%s: a table's flow lock is kept", name)
				}
			}
		}
	}
}

// Epochs without rows make no Delta commit, yet their commit markers are written: a restart
// whose checkpoint is ahead of the table's txn (by those empty epochs) resumes, and an idle
// run adds no table version.
func TestEmptyEpochsNoCommitRestart(t *testing.T) {
	mem := newMem(t)
	dir := t.TempDir()
	root, ck := filepath.Join(dir, "t"), filepath.Join(dir, "ck")
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).ids(0, 3).barrier(1).barrier(2).barrier(3).end(codec.Pause))
	if v := snapshot(t, root).Version(); v != 0 {
		t.Fatalf("version %d after epochs 2-3 without rows, want 0", v)
	}
	if c, _ := state.Committed(ck); c != 3 {
		t.Fatalf("checkpoint committed %d, want 3", c)
	}
	// Idle again, then rows.
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).barrier(4).ids(3, 5).barrier(5).barrier(6).end(codec.Pause))
	s := snapshot(t, root)
	if v, _ := s.TxnVersion("f"); s.Version() != 1 || v != 5 {
		t.Fatalf("version %d txn %d, want 1 and 5", s.Version(), v)
	}
	mustRun(t, deltasink.StreamConfig{Table: root, Flow: "f"}, ck, newStream(t, mem, idSchema).barrier(7).end(codec.Pause))
	if got := tableIDs(t, root); !equalIDs(got, seq(0, 5)) {
		t.Fatalf("ids %v", got)
	}
}
