package codec

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBatchBytesCountsDictionary: the stage queues bound batch bytes with BatchBytes, and a
// dictionary column keeps its values in ArrayData.Dictionary(): a batch whose dictionary is
// 1 MiB must count that MiB, not only its 4-byte indices (found by a break test: a producer
// sending a new 21 MB dictionary per batch got 8 of them into each queue).
func TestBatchBytesCountsDictionary(t *testing.T) {
	mem := memory.NewGoAllocator()
	vb := array.NewStringBuilder(mem)
	for i := 0; i < 1024; i++ {
		vb.Append(strings.Repeat("x", 1023) + string(rune('a'+i%26)))
	}
	vals := vb.NewArray()
	defer vals.Release()
	ib := array.NewInt32Builder(mem)
	for i := 0; i < 1024; i++ {
		ib.Append(int32(i))
	}
	idx := ib.NewArray()
	defer idx.Release()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	d := array.NewDictionaryArray(dt, idx, vals)
	defer d.Release()
	sch := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt}}, nil)
	rec := array.NewRecordBatch(sch, []arrow.Array{d}, 1024)
	defer rec.Release()
	if got, min := BatchBytes(rec), int64(1024*1024); got < min {
		t.Fatalf("BatchBytes = %d, want >= %d (the dictionary's values are not counted)", got, min)
	}
}
