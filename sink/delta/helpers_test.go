package delta

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/arrowtest"
)

func newMem(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func recFromJSON(t testing.TB, mem memory.Allocator, sc *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(js))
	if err != nil {
		t.Fatalf("record from JSON: %v", err)
	}
	return rec
}

// fixedClock returns a clock that advances by one second per call.
func fixedClock() func() time.Time {
	t0 := time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

// appendBatches writes recs as one commit (creating the table from sc when read is nil).
func appendBatches(t testing.TB, tbl *delta.Table, read *delta.Snapshot, create *delta.CreateOptions, sc *arrow.Schema, opts WriterOptions, txn *delta.Txn, recs ...arrow.RecordBatch) *delta.CommitResult {
	t.Helper()
	var proto *delta.Protocol
	var meta *delta.Metadata
	if read == nil {
		var err error
		proto, meta, err = delta.NewTableMetadata(sc, *create)
		if err != nil {
			t.Fatalf("new table metadata: %v", err)
		}
	} else {
		meta = read.Metadata()
	}
	w, err := NewDataWriter(tbl.Store(), meta, opts)
	if err != nil {
		t.Fatalf("new data writer: %v", err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatalf("close writer: %v", err)
	}
	var req delta.CommitRequest
	if read == nil {
		req = delta.CommitRequest{Protocol: proto, Metadata: meta, Adds: adds, Txn: txn}
	} else {
		req = delta.CommitRequest{Read: read, Adds: adds, Txn: txn}
	}
	res, err := tbl.Commit(context.Background(), req)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if res.CheckpointErr != nil {
		t.Fatalf("checkpoint: %v", res.CheckpointErr)
	}
	return res
}

// writeIPCFile writes recs (which must share a schema) to an Arrow IPC file.
func writeIPCFile(t testing.TB, path string, _ memory.Allocator, recs ...arrow.RecordBatch) {
	t.Helper()
	arrowtest.WriteFile(t, path, recs...)
}

func logFiles(t testing.TB, root string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(root, delta.LogDir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
