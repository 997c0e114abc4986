package codec

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A column of Arrow's null type (select 'NULL AS x', pyarrow's pa.null()) reads back: arrow-go
// reads it with no buffers, which array.Validate alone would refuse.
func TestNullTypeColumnRoundTrips(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.Null, Nullable: true}}, nil)
	col := array.MakeArrayOfNull(mem, arrow.Null, 3)
	rec := array.NewRecordBatch(s, []arrow.Array{col}, 3)
	col.Release()
	var buf bytes.Buffer
	w := NewWriter(&buf, s, mem)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.WriteControl(EndControl(Final)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := NewReader(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	m, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Batch.Release()
	if m.Batch.NumRows() != 3 || m.Batch.Column(0).NullN() != 3 {
		t.Errorf("got %d rows, %d nulls; want 3, 3", m.Batch.NumRows(), m.Batch.Column(0).NullN())
	}
}
