package expr

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The hand-written loops below compute into Go slices and wrap them as Arrow arrays without
// a builder: one allocation per output buffer, no per-value append calls.

// outBuf is an output column under construction: values of one fixed-width Go type and a
// validity bitmap (nil while every row is valid).
type outBuf[T any] struct {
	vals  []T
	valid []byte
	nulls int
}

func newOut[T any](n int) *outBuf[T] { return &outBuf[T]{vals: make([]T, n)} }

func (o *outBuf[T]) setNull(i int) {
	if o.valid == nil {
		o.valid = make([]byte, bitutil.BytesForBits(int64(len(o.vals))))
		for j := range o.valid {
			o.valid[j] = 0xff
		}
	}
	bitutil.ClearBit(o.valid, i)
	o.nulls++
}

func (o *outBuf[T]) array(t Type) arrow.Array {
	n := len(o.vals)
	var vb *memory.Buffer
	if o.valid != nil {
		vb = memory.NewBufferBytes(o.valid)
	}
	var raw []byte
	if n > 0 {
		var z T
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&o.vals[0])), n*int(unsafe.Sizeof(z)))
	}
	if t.Kind == KBool {
		panic("expr: boolean output through outBuf")
	}
	d := array.NewData(t.Arrow(), n, []*memory.Buffer{vb, memory.NewBufferBytes(raw)}, nil, o.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// boolOut is a boolean output column: value and validity bitmaps.
type boolOut struct {
	n     int
	bits  []byte
	valid []byte
	nulls int
}

func newBoolOut(n int) *boolOut {
	return &boolOut{n: n, bits: make([]byte, bitutil.BytesForBits(int64(n)))}
}
func (o *boolOut) set(i int, v bool) {
	if v {
		bitutil.SetBit(o.bits, i)
	}
}
func (o *boolOut) setNull(i int) {
	if o.valid == nil {
		o.valid = make([]byte, bitutil.BytesForBits(int64(o.n)))
		for j := range o.valid {
			o.valid[j] = 0xff
		}
	}
	bitutil.ClearBit(o.valid, i)
	o.nulls++
}
func (o *boolOut) array() arrow.Array {
	var vb *memory.Buffer
	if o.valid != nil {
		vb = memory.NewBufferBytes(o.valid)
	}
	d := array.NewData(arrow.FixedWidthTypes.Boolean, o.n, []*memory.Buffer{vb, memory.NewBufferBytes(o.bits)}, nil, o.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// strOut is a utf8 output column.
type strOut struct {
	offs  []int32
	data  []byte
	valid []byte
	nulls int
	n     int
}

func newStrOut(n, sizeHint int) *strOut {
	o := &strOut{offs: make([]int32, 1, n+1), data: make([]byte, 0, sizeHint), n: n}
	return o
}
func (o *strOut) append(s string) {
	o.data = append(o.data, s...)
	o.offs = append(o.offs, int32(len(o.data)))
}
func (o *strOut) appendBytes(b []byte) {
	o.data = append(o.data, b...)
	o.offs = append(o.offs, int32(len(o.data)))
}
func (o *strOut) appendNull() {
	i := len(o.offs) - 1
	if o.valid == nil {
		o.valid = make([]byte, bitutil.BytesForBits(int64(o.n)))
		for j := range o.valid {
			o.valid[j] = 0xff
		}
	}
	bitutil.ClearBit(o.valid, i)
	o.nulls++
	o.offs = append(o.offs, int32(len(o.data)))
}
func (o *strOut) array() arrow.Array { return o.arrayOf(arrow.BinaryTypes.String) }

// arrayOf is the column as an Arrow array of dt (utf8 or binary).
func (o *strOut) arrayOf(dt arrow.DataType) arrow.Array {
	var vb *memory.Buffer
	if o.valid != nil {
		vb = memory.NewBufferBytes(o.valid)
	}
	offs := unsafe.Slice((*byte)(unsafe.Pointer(&o.offs[0])), len(o.offs)*4)
	d := array.NewData(dt, o.n, []*memory.Buffer{vb, memory.NewBufferBytes(offs), memory.NewBufferBytes(o.data)}, nil, o.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// valuesOf returns the value slice of a fixed-width array (int32, int64, float64, date32,
// timestamp, duration, decimal128).
func i32s(a arrow.Array) []int32 {
	switch a := a.(type) {
	case *array.Int32:
		return a.Int32Values()
	case *array.Date32:
		return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(a.Date32Values()))), a.Len())
	case *array.MonthInterval:
		return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(a.MonthIntervalValues()))), a.Len())
	}
	panic("expr: not an int32 column: " + a.DataType().String())
}
func i64s(a arrow.Array) []int64 {
	switch a := a.(type) {
	case *array.Int64:
		return a.Int64Values()
	case *array.Timestamp:
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(a.TimestampValues()))), a.Len())
	case *array.Duration:
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(a.DurationValues()))), a.Len())
	}
	panic("expr: not an int64 column: " + a.DataType().String())
}
func f64s(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() }
func decs(a arrow.Array) []decimal128.Num {
	return a.(*array.Decimal128).Values()
}

// nullMask reports per row whether it is null (false everywhere when the array has no nulls).
func isNull(a arrow.Array, i int) bool { return a.NullN() > 0 && a.IsNull(i) }

// activeAt reports whether row i is one whose errors count (nil: every row).
func activeAt(active []bool, i int) bool { return active == nil || active[i] }
