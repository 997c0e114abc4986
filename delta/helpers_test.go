package delta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var simpleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func logFiles(t testing.TB, root string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(root, LogDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// fixedClock returns a clock that advances by one second per call.
func fixedClock() func() time.Time {
	t0 := time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

func newTestTable(t testing.TB, mem memory.Allocator) *Table {
	tbl := NewTable(t.TempDir(), mem)
	tbl.Now = fixedClock()
	tbl.EngineInfo = "streamkit/test"
	return tbl
}

// appendFile commits one add (creating the table from sc when read is nil), as sink/delta's
// data writer hands them over; the log never opens data files, so the file need not exist.
func appendFile(t testing.TB, tbl *Table, read *Snapshot, create *CreateOptions, sc *arrow.Schema) *CommitResult {
	t.Helper()
	var req CommitRequest
	next := int64(0)
	if read == nil {
		proto, meta, err := NewTableMetadata(sc, *create)
		if err != nil {
			t.Fatalf("new table metadata: %v", err)
		}
		req = CommitRequest{Protocol: proto, Metadata: meta}
	} else {
		req = CommitRequest{Read: read}
		next = read.Version() + 1
	}
	req.Adds = []Add{{Path: fmt.Sprintf("part-%05d.snappy.parquet", next), PartitionValues: map[string]*string{},
		Size: 512, ModificationTime: 1, DataChange: true, Stats: `{"numRecords":2}`}}
	res, err := tbl.Commit(context.Background(), req)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if res.CheckpointErr != nil {
		t.Fatalf("checkpoint: %v", res.CheckpointErr)
	}
	return res
}
