package keyby

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// takeRows returns the rows of rec at rows (ascending), as compute.Take would, but copies the
// buffers of flat columns directly: fixed-width types of whole bytes, and (large) binary and
// string, with or without nulls — compute.Take's per-row kernels cost the sharding parent
// more than its hashing. Other columns (booleans, nested, dictionaries, views) go through
// compute.TakeArray. The buffers of flat columns come from bufs (they are written in full: a
// Recycler will do), the others from mem.
func takeRows(ctx context.Context, mem, bufs memory.Allocator, rec arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var idx arrow.Array
	defer func() {
		if idx != nil {
			idx.Release()
		}
	}()
	for i, a := range rec.Columns() {
		if cols[i] = takeFlat(bufs, a, rows); cols[i] != nil {
			continue
		}
		if idx == nil {
			b := array.NewInt32Builder(mem)
			b.AppendValues(rows, nil)
			idx = b.NewArray()
			b.Release()
		}
		var err error
		if cols[i], err = compute.TakeArray(ctx, a, idx); err != nil {
			return nil, fmt.Errorf("keyby: split column %s: %w", rec.ColumnName(i), err)
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows))), nil
}

// takeFlat copies rows of a flat array; nil for a type it does not handle.
func takeFlat(mem memory.Allocator, a arrow.Array, rows []int32) arrow.Array {
	d := a.Data()
	n := len(rows)
	var bufs []*memory.Buffer
	switch dt := a.DataType().(type) {
	case *arrow.BinaryType, *arrow.StringType:
		bufs = takeVarBinary[int32](mem, d, rows)
	case *arrow.LargeBinaryType, *arrow.LargeStringType:
		bufs = takeVarBinary[int64](mem, d, rows)
	case *arrow.DictionaryType, arrow.ExtensionType:
		return nil
	case arrow.FixedWidthDataType:
		if dt.BitWidth()%8 != 0 || len(d.Buffers()) != 2 {
			return nil
		}
		bufs = []*memory.Buffer{nil, takeFixed(mem, d, rows, dt.BitWidth()/8)}
	default:
		return nil
	}
	nulls := 0
	if a.NullN() > 0 {
		bufs[0], nulls = takeValidity(mem, a, rows)
	}
	out := array.NewData(a.DataType(), n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer out.Release()
	return array.MakeFromData(out)
}

func takeValidity(mem memory.Allocator, a arrow.Array, rows []int32) (*memory.Buffer, int) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(rows)))))
	bits := buf.Bytes()
	clear(bits)
	nulls := 0
	for i, r := range rows {
		if a.IsValid(int(r)) {
			bitutil.SetBit(bits, i)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

func takeFixed(mem memory.Allocator, d arrow.ArrayData, rows []int32, w int) *memory.Buffer {
	src := d.Buffers()[1].Bytes()[d.Offset()*w:]
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(rows) * w)
	dst := buf.Bytes()
	switch w {
	case 8:
		gather(castSlice[uint64](dst), castSlice[uint64](src), rows)
	case 4:
		gather(castSlice[uint32](dst), castSlice[uint32](src), rows)
	case 2:
		gather(castSlice[uint16](dst), castSlice[uint16](src), rows)
	case 1:
		gather(dst, src, rows)
	default:
		for i, r := range rows {
			copy(dst[i*w:(i+1)*w], src[int(r)*w:])
		}
	}
	return buf
}

func gather[T any](dst, src []T, rows []int32) {
	for i, r := range rows {
		dst[i] = src[r]
	}
}

// castSlice views b as a slice of T (Arrow buffers are 64-byte aligned; offsets keep the
// element alignment).
func castSlice[T uint16 | uint32 | uint64 | int32 | int64](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

func takeVarBinary[O int32 | int64](mem memory.Allocator, d arrow.ArrayData, rows []int32) []*memory.Buffer {
	offs := castSlice[O](d.Buffers()[1].Bytes())[d.Offset():]
	var data []byte
	if b := d.Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	var size O
	for _, r := range rows {
		size += offs[r+1] - offs[r]
	}
	ob := memory.NewResizableBuffer(mem)
	var zero O
	ob.Resize((len(rows) + 1) * int(unsafe.Sizeof(zero)))
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(size))
	outOffs, out := castSlice[O](ob.Bytes()), db.Bytes()
	var at O
	for i, r := range rows {
		outOffs[i] = at
		from, n := offs[r], offs[r+1]-offs[r]
		if n <= 16 && int(at)+16 <= len(out) && int(from)+16 <= len(data) {
			// Short values (ids) as one 16-byte move instead of a call to memmove; the bytes
			// past the value are overwritten by the next ones.
			*(*[16]byte)(out[at:]) = *(*[16]byte)(data[from:])
			at += n
			continue
		}
		at += O(copy(out[at:], data[from:from+n]))
	}
	outOffs[len(rows)] = at
	return []*memory.Buffer{nil, ob, db}
}
