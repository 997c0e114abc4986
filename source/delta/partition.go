package delta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/expr"
)

// value is one typed partition value or filter literal. Which field is meaningful depends on
// the column type: i for integers, booleans (0/1), dates (days), timestamps (µs since the
// epoch); f for floats; s for strings and binaries; d for decimals (unscaled at the column's
// scale). null marks a null value.
type value struct {
	null bool
	i    int64
	f    float64
	s    string
	d    decimal128.Num
}

// Timestamp layouts accepted in partition values and filter literals (PROTOCOL.md "Partition
// Value Serialization": "2024-01-31 12:00:00", with up to 6 fractional digits, or ISO 8601
// adjusted to UTC "2024-01-31T12:00:00.000000Z").
var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02",
}

// parseValue parses a serialized partition value (or a filter literal) of the canonical Arrow
// type dt. A nil or empty string is null (PROTOCOL.md: an empty partition value is null).
// Timestamps without an offset are read as UTC (both for timestamp and timestamp_ntz).
func parseValue(dt arrow.DataType, raw *string) (value, error) {
	if raw == nil || (*raw == "" && dt.ID() != arrow.BINARY) {
		return value{null: true}, nil
	}
	s := *raw
	bad := func(err error) (value, error) {
		if err != nil {
			return value{}, fmt.Errorf("%q is not a valid %s: %v", s, typeName(dt), err)
		}
		return value{}, fmt.Errorf("%q is not a valid %s", s, typeName(dt))
	}
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		return value{s: s}, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		bits := map[arrow.Type]int{arrow.INT8: 8, arrow.INT16: 16, arrow.INT32: 32, arrow.INT64: 64}[dt.ID()]
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return bad(err)
		}
		return value{i: v}, nil
	case *arrow.BooleanType:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return value{i: 1}, nil
		case "false":
			return value{i: 0}, nil
		}
		return bad(nil)
	case *arrow.Float32Type, *arrow.Float64Type:
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !math.IsInf(v, 0) {
			return bad(err)
		}
		return value{f: v}, nil
	case *arrow.Date32Type:
		d, err := time.Parse("2006-01-02", strings.TrimSpace(s))
		if err != nil {
			return bad(err)
		}
		return value{i: d.Unix() / 86400}, nil
	case *arrow.TimestampType:
		ts, err := parseTimestamp(s)
		if err != nil {
			return bad(err)
		}
		return value{i: ts.UnixMicro()}, nil
	case *arrow.Decimal128Type:
		n, err := decimal128.FromString(strings.TrimSpace(s), t.Precision, t.Scale)
		if err != nil {
			return bad(err)
		}
		return value{d: n}, nil
	}
	return value{}, fmt.Errorf("partition values of type %s are not supported", dt)
}

func parseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	var first error
	for _, l := range timestampLayouts {
		t, err := time.Parse(l, s)
		if err == nil {
			return t.UTC(), nil
		}
		if first == nil {
			first = err
		}
	}
	return time.Time{}, first
}

// constArray returns an array of n copies of v with type dt.
func constArray(mem memory.Allocator, dt arrow.DataType, v value, n int) arrow.Array {
	if v.null {
		return array.MakeArrayOfNull(mem, dt, n)
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n)
	switch b := b.(type) {
	case *array.StringBuilder:
		b.ReserveData(n * len(v.s))
		for range n {
			b.Append(v.s)
		}
	case *array.BinaryBuilder:
		b.ReserveData(n * len(v.s))
		for range n {
			b.Append([]byte(v.s))
		}
	case *array.Int8Builder:
		for range n {
			b.UnsafeAppend(int8(v.i))
		}
	case *array.Int16Builder:
		for range n {
			b.UnsafeAppend(int16(v.i))
		}
	case *array.Int32Builder:
		for range n {
			b.UnsafeAppend(int32(v.i))
		}
	case *array.Int64Builder:
		for range n {
			b.UnsafeAppend(v.i)
		}
	case *array.BooleanBuilder:
		for range n {
			b.UnsafeAppend(v.i != 0)
		}
	case *array.Float32Builder:
		for range n {
			b.UnsafeAppend(float32(v.f))
		}
	case *array.Float64Builder:
		for range n {
			b.UnsafeAppend(v.f)
		}
	case *array.Date32Builder:
		for range n {
			b.UnsafeAppend(arrow.Date32(v.i))
		}
	case *array.TimestampBuilder:
		for range n {
			b.UnsafeAppend(arrow.Timestamp(v.i))
		}
	case *array.Decimal128Builder:
		for range n {
			b.UnsafeAppend(v.d)
		}
	default:
		panic(fmt.Sprintf("constArray: unsupported type %s", dt))
	}
	return b.NewArray()
}

// compare orders two non-null values of type dt: -1, 0 or 1. NaN sorts above every float
// (as Spark does).
func compare(dt arrow.DataType, a, b value) int {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
		return strings.Compare(a.s, b.s)
	case arrow.FLOAT32, arrow.FLOAT64:
		return expr.CompareDouble(a.f, b.f)
	case arrow.DECIMAL128:
		return a.d.Cmp(b.d)
	}
	switch {
	case a.i < b.i:
		return -1
	case a.i > b.i:
		return 1
	}
	return 0
}

// typeName names the Delta type of a canonical Arrow type, for messages.
func typeName(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *arrow.StringType:
		return "string"
	case *arrow.BinaryType:
		return "binary"
	case *arrow.Int8Type:
		return "byte"
	case *arrow.Int16Type:
		return "short"
	case *arrow.Int32Type:
		return "integer"
	case *arrow.Int64Type:
		return "long"
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.Float32Type:
		return "float"
	case *arrow.Float64Type:
		return "double"
	case *arrow.Date32Type:
		return "date"
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return "timestamp_ntz"
		}
		return "timestamp"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return dt.String()
}
