package window

import (
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Value categories: how min, max, first and last store values of an input type. Signed
// integers, booleans and temporal types are int64; unsigned integers uint64; floats float64;
// strings and binaries string (copied out of the Arrow buffers when stored).
type valueOps[T any] interface {
	batch(a arrow.Array, scratch *[]T) []T // the values of a, zero-copy when possible
	read(a arrow.Array, i int) T
	append(b array.Builder, v T)
	clone(v T) T
}

type i64Ops struct{}
type u64Ops struct{}
type f64Ops struct{}
type strOps struct{}

func reinterpret[T any, U any](v []U) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

func widen[T integer | ~float32 | ~float64, U int64 | uint64 | float64](src []T, scratch *[]U) []U {
	dst := grow(*scratch, len(src))
	for i, v := range src {
		dst[i] = U(v)
	}
	*scratch = dst
	return dst
}

func (i64Ops) batch(a arrow.Array, s *[]int64) []int64 {
	switch a := a.(type) {
	case *array.Int64:
		return a.Int64Values()
	case *array.Timestamp:
		return reinterpret[int64](a.Values())
	case *array.Date64:
		return reinterpret[int64](a.Values())
	case *array.Time64:
		return reinterpret[int64](a.Values())
	case *array.Duration:
		return reinterpret[int64](a.Values())
	case *array.Int32:
		return widen(a.Int32Values(), s)
	case *array.Int16:
		return widen(a.Int16Values(), s)
	case *array.Int8:
		return widen(a.Int8Values(), s)
	case *array.Date32:
		return widen(a.Values(), s)
	case *array.Time32:
		return widen(a.Values(), s)
	case *array.Uint64:
		return reinterpret[int64](a.Uint64Values())
	case *array.Uint32:
		return widen(a.Uint32Values(), s)
	case *array.Uint16:
		return widen(a.Uint16Values(), s)
	case *array.Uint8:
		return widen(a.Uint8Values(), s)
	case *array.Boolean:
		dst := grow(*s, a.Len())
		for i := range dst {
			dst[i] = 0
			if a.Value(i) {
				dst[i] = 1
			}
		}
		*s = dst
		return dst
	}
	panic("window: i64 values of " + a.DataType().String())
}

func (i64Ops) read(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Date64:
		return int64(a.Value(i))
	case *array.Time64:
		return int64(a.Value(i))
	case *array.Duration:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Time32:
		return int64(a.Value(i))
	case *array.Uint64:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Boolean:
		if a.Value(i) {
			return 1
		}
		return 0
	}
	panic("window: i64 value of " + a.DataType().String())
}

func (i64Ops) append(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v)
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v))
	case *array.Date64Builder:
		b.Append(arrow.Date64(v))
	case *array.Time32Builder:
		b.Append(arrow.Time32(v))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(v))
	case *array.BooleanBuilder:
		b.Append(v != 0)
	default:
		panic("window: append int64 to " + b.Type().String())
	}
}

func (i64Ops) clone(v int64) int64 { return v }

func (u64Ops) batch(a arrow.Array, s *[]uint64) []uint64 {
	switch a := a.(type) {
	case *array.Uint64:
		return a.Uint64Values()
	case *array.Uint32:
		return widen(a.Uint32Values(), s)
	case *array.Uint16:
		return widen(a.Uint16Values(), s)
	case *array.Uint8:
		return widen(a.Uint8Values(), s)
	}
	panic("window: u64 values of " + a.DataType().String())
}

func (u64Ops) read(a arrow.Array, i int) uint64 {
	switch a := a.(type) {
	case *array.Uint64:
		return a.Value(i)
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint8:
		return uint64(a.Value(i))
	}
	panic("window: u64 value of " + a.DataType().String())
}

func (u64Ops) append(b array.Builder, v uint64) {
	switch b := b.(type) {
	case *array.Uint64Builder:
		b.Append(v)
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint8Builder:
		b.Append(uint8(v))
	default:
		panic("window: append uint64 to " + b.Type().String())
	}
}

func (u64Ops) clone(v uint64) uint64 { return v }

// batch of f64Ops converts any number to float64 (avg and float sums use it too).
func (f64Ops) batch(a arrow.Array, s *[]float64) []float64 {
	switch a := a.(type) {
	case *array.Float64:
		return a.Float64Values()
	case *array.Float32:
		return widen(a.Float32Values(), s)
	case *array.Int64:
		return widen(a.Int64Values(), s)
	case *array.Int32:
		return widen(a.Int32Values(), s)
	case *array.Int16:
		return widen(a.Int16Values(), s)
	case *array.Int8:
		return widen(a.Int8Values(), s)
	case *array.Uint64:
		return widen(a.Uint64Values(), s)
	case *array.Uint32:
		return widen(a.Uint32Values(), s)
	case *array.Uint16:
		return widen(a.Uint16Values(), s)
	case *array.Uint8:
		return widen(a.Uint8Values(), s)
	}
	panic("window: f64 values of " + a.DataType().String())
}

func (f64Ops) read(a arrow.Array, i int) float64 {
	switch a := a.(type) {
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Int64:
		return float64(a.Value(i))
	}
	return float64(i64Ops{}.read(a, i))
}

func (f64Ops) append(b array.Builder, v float64) {
	switch b := b.(type) {
	case *array.Float64Builder:
		b.Append(v)
	case *array.Float32Builder:
		b.Append(float32(v))
	default:
		panic("window: append float64 to " + b.Type().String())
	}
}

func (f64Ops) clone(v float64) float64 { return v }

func (o strOps) batch(a arrow.Array, s *[]string) []string {
	dst := grow(*s, a.Len())
	for i := range dst {
		dst[i] = o.read(a, i)
	}
	*s = dst
	return dst
}

func (strOps) read(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Binary:
		return unsafeString(a.Value(i))
	case *array.LargeBinary:
		return unsafeString(a.Value(i))
	case *array.BinaryView:
		return unsafeString(a.Value(i))
	}
	panic("window: string values of " + a.DataType().String())
}

func (strOps) append(b array.Builder, v string) {
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v)
	case *array.LargeStringBuilder:
		b.Append(v)
	case *array.StringViewBuilder:
		b.Append(v)
	case *array.BinaryBuilder:
		b.AppendString(v)
	case *array.BinaryViewBuilder:
		b.AppendString(v)
	default:
		panic("window: append string to " + b.Type().String())
	}
}

func (strOps) clone(v string) string { return strings.Clone(v) }

// category of an input type for min/max/first/last: "i64", "u64", "f64", "str" or "".
func category(dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.BOOL,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return "i64"
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return "u64"
	case arrow.FLOAT32, arrow.FLOAT64:
		return "f64"
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return "str"
	}
	return ""
}

func isInteger(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloat(dt arrow.DataType) bool { return dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64 }
