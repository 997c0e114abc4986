package codec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FloorTimestamps converts the timestamp data d to the unit of to, which must be d's unit or
// a coarser one (ns → µs, µs → ms, …), flooring every value as Spark and java.time count an
// instant's coarser unit: the microsecond of −1 ns is −1 (1969-12-31 23:59:59.999999), not 0.
// arrow-go's cast kernel with AllowTimeTruncate divides toward zero instead, which moves
// instants before 1970 forward into the next unit (and day, and year). The result has type to
// (its zone too); for a coarser unit it has offset 0, a new values buffer and d's validity
// bitmap (shared when d has offset 0, else copied), for the same unit d's buffers. It is a
// new reference the caller releases. Floor division cannot overflow, so it never fails.
func FloorTimestamps(mem memory.Allocator, d arrow.ArrayData, to *arrow.TimestampType) arrow.ArrayData {
	div := int64(1)
	for u := d.DataType().(*arrow.TimestampType).Unit; u > to.Unit; u-- {
		div *= 1000
	}
	n, off := d.Len(), d.Offset()
	if div == 1 {
		return array.NewData(to, n, d.Buffers(), nil, d.NullN(), off)
	}
	vals := floorValues[int64](mem, d, div)
	defer vals.Release()
	bm, nulls := realignedValidity(mem, d)
	if bm != nil {
		defer bm.Release()
	}
	return array.NewData(to, n, []*memory.Buffer{bm, vals}, nil, nulls, 0)
}

// FloorDate64 converts Date64 data d (ms since the epoch) to Date32 days, flooring a value
// that is not a whole day into the day that contains it (arrow-go's truncating cast moves
// one before 1970 into the next day). The result is a new reference; it never fails.
func FloorDate64(mem memory.Allocator, d arrow.ArrayData) arrow.ArrayData {
	vals := floorValues[int32](mem, d, 86_400_000)
	defer vals.Release()
	bm, nulls := realignedValidity(mem, d)
	if bm != nil {
		defer bm.Release()
	}
	return array.NewData(arrow.FixedWidthTypes.Date32, d.Len(), []*memory.Buffer{bm, vals}, nil, nulls, 0)
}

// floorValues returns a new buffer of d's int64 values, from d's offset, each floor-divided
// by div (> 0). Null slots get whatever their values give.
func floorValues[T int32 | int64](mem memory.Allocator, d arrow.ArrayData, div int64) *memory.Buffer {
	n, off := d.Len(), d.Offset()
	var src []int64
	if bufs := d.Buffers(); len(bufs) > 1 && bufs[1] != nil {
		src = arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())[off : off+n]
	}
	vals := memory.NewResizableBuffer(mem)
	var dst []T
	switch p := any(&dst).(type) {
	case *[]int32:
		vals.Resize(arrow.Int32Traits.BytesRequired(n))
		*p = arrow.Int32Traits.CastFromBytes(vals.Bytes())
	case *[]int64:
		vals.Resize(arrow.Int64Traits.BytesRequired(n))
		*p = arrow.Int64Traits.CastFromBytes(vals.Bytes())
	}
	for i, v := range src {
		q := v / div
		if v%div < 0 {
			q--
		}
		dst[i] = T(q)
	}
	return vals
}

// realignedValidity returns d's validity bitmap for offset 0 (a new reference, nil when d has
// no nulls) and d's null count.
func realignedValidity(mem memory.Allocator, d arrow.ArrayData) (*memory.Buffer, int) {
	nulls := d.NullN()
	bufs := d.Buffers()
	if nulls == 0 || len(bufs) == 0 || bufs[0] == nil {
		return nil, 0
	}
	if d.Offset() == 0 {
		bufs[0].Retain()
		return bufs[0], nulls
	}
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(bufs[0].Bytes(), d.Offset(), d.Len(), bm.Bytes(), 0)
	return bm, nulls
}
