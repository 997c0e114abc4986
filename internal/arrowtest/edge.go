// Package arrowtest builds Arrow test data full of the values text encodings get wrong, and
// compares Arrow values exactly, for the round-trip tests of every writer/reader pair
// (codec/textout, interop).
package arrowtest

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The edge values, one per row (row r takes value r mod 8, nested values shifted).
var (
	// Floats64: NaN, ±Inf, −0.0, the extremes.
	Floats64 = []float64{1.5, math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-300, math.MaxFloat64}
	// Strings: the empty string (≠ null), CSV specials, a null-value look-alike.
	Strings = []string{"", "a,b", `q"uote`, " lead", "NA", "line\nbreak", "ünï", "x"}
	// Micros (µs since 1970): 2001-01-01T00:01:00, 1 µs before 1970, the end of time
	// (10000-01-01, a window end), year -1, and small values.
	Micros = []int64{978307260_000000, -1, 253402300800_000000, -62198755200_000000, 0, 1, 86399_999999, 1_500000}
	// Nanos (ns since 1970): nine fraction digits, 1 ns before 1970.
	Nanos = []int64{1699999999_123456789, -1, 0, 1, 999_999_999, -999_999_999, 1_000000000, 1700000000_000000001}
	// Days since 1970: 0001-01-01, 1969-12-31, 10000-01-01.
	Days = []int32{-719162, -1, 0, 2932897, 19000, 1, 59, 60}
)

// EdgeRecord returns rows rows of schema s filled with the edge values of each column's type
// (nested columns recursively); in the last row every nullable top-level column is null.
// Types without edge values panic.
func EdgeRecord(mem memory.Allocator, s *arrow.Schema, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for r := 0; r < rows; r++ {
		for c, f := range s.Fields() {
			if r == rows-1 && f.Nullable {
				b.Field(c).AppendNull()
				continue
			}
			appendEdge(b.Field(c), r+c)
		}
	}
	return b.NewRecordBatch()
}

func appendEdge(b array.Builder, r int) {
	k := r % 8
	switch b := b.(type) {
	case *array.Float64Builder:
		b.Append(Floats64[k])
	case *array.Float32Builder:
		b.Append(float32(Floats64[k]))
	case *array.StringBuilder:
		b.Append(Strings[k])
	case *array.BinaryBuilder:
		b.Append([]byte(Strings[k]))
	case *array.Int64Builder:
		b.Append([]int64{math.MinInt64, math.MaxInt64, 0, -1, 1, 2, 3, 4}[k])
	case *array.Int32Builder:
		b.Append([]int32{math.MinInt32, math.MaxInt32, 0, -1, 1, 2, 3, 4}[k])
	case *array.BooleanBuilder:
		b.Append(k%2 == 0)
	case *array.Date32Builder:
		b.Append(arrow.Date32(Days[k]))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(int64(k*7919 - 20000)))
	case *array.TimestampBuilder:
		switch b.Type().(*arrow.TimestampType).Unit {
		case arrow.Nanosecond:
			b.Append(arrow.Timestamp(Nanos[k]))
		case arrow.Microsecond:
			b.Append(arrow.Timestamp(Micros[k]))
		case arrow.Millisecond:
			b.Append(arrow.Timestamp(Micros[k] / 1000))
		default:
			b.Append(arrow.Timestamp(Micros[k] / 1_000_000))
		}
	case *array.StructBuilder:
		b.Append(true)
		for f := 0; f < b.NumField(); f++ {
			appendEdge(b.FieldBuilder(f), r+1+f)
		}
	case *array.MapBuilder:
		b.Append(true)
		appendEdge(b.KeyBuilder(), r)
		appendEdge(b.ItemBuilder(), r+3)
	case *array.ListBuilder:
		b.Append(true)
		appendEdge(b.ValueBuilder(), r)
		b.ValueBuilder().AppendNull()
		appendEdge(b.ValueBuilder(), r+2)
	default:
		panic(fmt.Sprintf("arrowtest: no edge values for %T", b))
	}
}

// SameValue reports whether row i of a and row j of b hold the same value: floats bit for
// bit (any NaN equals any NaN; −0.0 differs from 0), nested values element by element,
// everything else as array.SliceEqual (so types must match).
func SameValue(a, b arrow.Array, i, j int) bool {
	if a.IsNull(i) || b.IsNull(j) {
		return a.IsNull(i) == b.IsNull(j)
	}
	switch x := a.(type) {
	case *array.Float64:
		y, ok := b.(*array.Float64)
		return ok && sameFloat(x.Value(i), y.Value(j))
	case *array.Float32:
		y, ok := b.(*array.Float32)
		return ok && sameFloat(float64(x.Value(i)), float64(y.Value(j)))
	case *array.Struct:
		y, ok := b.(*array.Struct)
		if !ok || y.NumField() != x.NumField() {
			return false
		}
		for f := 0; f < x.NumField(); f++ {
			if !SameValue(x.Field(f), y.Field(f), i, j) {
				return false
			}
		}
		return true
	case *array.Map:
		y, ok := b.(*array.Map)
		return ok && sameRanges(x, y, i, j, func(p, q int) bool {
			return SameValue(x.Keys(), y.Keys(), p, q) && SameValue(x.Items(), y.Items(), p, q)
		})
	case array.ListLike:
		y, ok := b.(array.ListLike)
		return ok && sameRanges(x, y, i, j, func(p, q int) bool { return SameValue(x.ListValues(), y.ListValues(), p, q) })
	}
	return arrow.TypeEqual(a.DataType(), b.DataType()) && array.SliceEqual(a, int64(i), int64(i+1), b, int64(j), int64(j+1))
}

func sameRanges(x, y array.ListLike, i, j int, same func(p, q int) bool) bool {
	s1, e1 := x.ValueOffsets(i)
	s2, e2 := y.ValueOffsets(j)
	if e1-s1 != e2-s2 {
		return false
	}
	for k := int64(0); k < e1-s1; k++ {
		if !same(int(s1+k), int(s2+k)) {
			return false
		}
	}
	return true
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}
