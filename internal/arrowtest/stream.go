package arrowtest

import (
	"bytes"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// Stream encodes recs (one schema) as a streamkit stream: the batches, then end=final and
// the end-of-stream marker.
func Stream(t testing.TB, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, recs[0].Schema(), memory.NewGoAllocator())
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteControl(codec.EndControl(codec.Final)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ReadStream decodes a streamkit stream and returns its data batches concatenated into one
// batch (released with the test); control batches are skipped.
func ReadStream(t testing.TB, b []byte) arrow.RecordBatch {
	t.Helper()
	mem := memory.NewGoAllocator()
	rd, err := codec.NewReader(bytes.NewReader(b), mem)
	if err != nil {
		t.Fatalf("decode stream: %v", err)
	}
	defer rd.Release()
	var recs []arrow.RecordBatch
	for {
		m, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decode stream: %v", err)
		}
		if m.Control == nil {
			recs = append(recs, m.Batch)
		}
	}
	tbl := array.NewTableFromRecords(rd.Schema(), recs)
	defer tbl.Release()
	for _, r := range recs {
		r.Release()
	}
	cols := make([]arrow.Array, tbl.NumCols())
	for c := range cols {
		a, err := array.Concatenate(tbl.Column(c).Data().Chunks(), mem)
		if err != nil {
			t.Fatal(err)
		}
		cols[c] = a
	}
	out := array.NewRecordBatch(rd.Schema(), cols, tbl.NumRows())
	for _, a := range cols {
		a.Release()
	}
	t.Cleanup(out.Release)
	return out
}
