package delta

import (
	"context"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/expr"
)

// rowSpan is a run of n decoded rows of a file, the first one at file row first, and the
// file's deletion vector (nil: none). Row indexes stay positions in the Parquet file (PROTOCOL.md
// "Deletion Vector Format"): row groups skipped by --where or a resume still count.
type rowSpan struct {
	first int64
	n     int64
	dv    *roaring64.Bitmap
}

// deleted counts the span's rows the deletion vector removes.
func (s rowSpan) deleted() int64 {
	if s.dv == nil || s.n == 0 {
		return 0
	}
	// Rank(x) counts the vector's rows <= x.
	n := s.dv.Rank(uint64(s.first + s.n - 1))
	if s.first > 0 {
		n -= s.dv.Rank(uint64(s.first - 1))
	}
	return int64(n)
}

// keepMask is a boolean array of the span's length, false at its deleted rows.
func (s rowSpan) keepMask(mem memory.Allocator) *array.Boolean {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(s.n)))
	bits := buf.Bytes()
	bitutil.SetBitsTo(bits, 0, s.n, true)
	it := s.dv.Iterator()
	it.AdvanceIfNeeded(uint64(s.first))
	for it.HasNext() {
		v := it.Next()
		if v >= uint64(s.first+s.n) {
			break
		}
		bitutil.ClearBit(bits, int(int64(v)-s.first))
	}
	d := array.NewData(arrow.FixedWidthTypes.Boolean, int(s.n), []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer d.Release()
	return array.NewBooleanData(d)
}

// dropDeleted returns the rows of rec (the span's rows) that the deletion vector keeps, their
// columns copied into buffers from bufs.
func dropDeleted(ctx context.Context, mem, bufs memory.Allocator, rec arrow.RecordBatch, s rowSpan) (arrow.RecordBatch, error) {
	mask := s.keepMask(mem)
	defer mask.Release()
	return expr.FilterBatchInto(compute.WithAllocator(ctx, mem), rec, mask, bufs)
}

// dropDeletedData returns the rows of the columns x (the span's rows: the top-level INT96
// columns, read beside the record reader) that the deletion vector keeps, and releases x.
func dropDeletedData(ctx context.Context, mem memory.Allocator, x []arrow.ArrayData, s rowSpan) ([]arrow.ArrayData, error) {
	if len(x) == 0 || s.deleted() == 0 {
		return x, nil
	}
	fields := make([]arrow.Field, len(x))
	cols := make([]arrow.Array, len(x))
	for k, d := range x {
		fields[k] = arrow.Field{Name: strconv.Itoa(k), Type: d.DataType(), Nullable: true}
		cols[k] = array.MakeFromData(d)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(x[0].Len()))
	for _, c := range cols {
		c.Release()
	}
	releaseData(x)
	kept, err := dropDeleted(ctx, mem, mem, rec, s)
	rec.Release()
	if err != nil {
		return nil, err
	}
	defer kept.Release()
	out := make([]arrow.ArrayData, len(x))
	for k := range out {
		out[k] = kept.Column(k).Data()
		out[k].Retain()
	}
	return out, nil
}

// DropDeletedRows returns the rows of rec, whose first row is row firstRow of its data file,
// that the file's deletion vector dv (see [dl.ReadDeletionVector]) keeps: rec itself,
// retained, when dv deletes none of them; a zero-row batch when it deletes all.
func DropDeletedRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, dv *roaring64.Bitmap, firstRow int64) (arrow.RecordBatch, error) {
	s := rowSpan{first: firstRow, n: rec.NumRows(), dv: dv}
	if s.deleted() == 0 {
		rec.Retain()
		return rec, nil
	}
	return dropDeleted(ctx, mem, mem, rec, s)
}

// fileRow is the file row of the i-th row kept from the span (for error messages).
func (s rowSpan) fileRow(i int) int64 {
	if s.dv == nil {
		return s.first + int64(i)
	}
	row := s.first
	for k := 0; ; row++ {
		if !s.dv.Contains(uint64(row)) {
			if k == i {
				return row
			}
			k++
		}
	}
}
