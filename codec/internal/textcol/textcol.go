// Package textcol holds what codec/csvrow and codec/jsonrow do the same way when they turn
// text values into Arrow columns: the typed builder of a scalar column (one field per kind, so
// a decoder's hot loop appends without an interface call), appends of parsed integers and
// floats at the column's width, timestamp text and µs → unit conversion for timestamp and
// time columns, the type names bad-record reasons use, the rescued-data column of the output
// schema, and the temporal types text infers as. The text itself is parsed by textconv.
package textcol

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec/internal/textconv"
)

// Kind is the decoding kind of a column.
type Kind uint8

// The scalar kinds.
const (
	Bool Kind = iota + 1
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float32
	Float64
	Decimal
	String // string and large_string
	Binary // binary and large_binary
	Fixed  // fixed_size_binary
	Date
	Timestamp    // timestamp with a time zone (an instant)
	TimestampNTZ // timestamp without a time zone (wall clock)
	Time32
	Time64
	Null
	// Nested is the first kind left to a decoder for its own (nested) kinds.
	Nested
)

// Column is the builder of one scalar column, typed by Kind: B is always set, and so is the
// typed builder of the kind (I64 for Int64, Bin for String and Binary, ...).
type Column struct {
	Kind  Kind
	Bits  int   // integers and floats: width in bits
	Prec  int32 // decimals
	Scale int32
	Width int // fixed_size_binary: bytes

	div, mul int64 // timestamps and times: µs are divided by div or multiplied by mul

	B    array.Builder
	Bool *array.BooleanBuilder
	I8   *array.Int8Builder
	I16  *array.Int16Builder
	I32  *array.Int32Builder
	I64  *array.Int64Builder
	U8   *array.Uint8Builder
	U16  *array.Uint16Builder
	U32  *array.Uint32Builder
	U64  *array.Uint64Builder
	F32  *array.Float32Builder
	F64  *array.Float64Builder
	Dec  *array.Decimal128Builder
	Bin  *array.BinaryBuilder // string, large_string, binary, large_binary
	Fix  *array.FixedSizeBinaryBuilder
	Date *array.Date32Builder
	Ts   *array.TimestampBuilder
	T32  *array.Time32Builder
	T64  *array.Time64Builder
}

// Init sets c up for a column of type t built by b (of that type). It returns false when t is
// not a scalar type (nested, or one the text decoders do not read): then only B is set, and
// the kind is left to the caller.
func (c *Column) Init(t arrow.DataType, b array.Builder) bool {
	*c = Column{B: b, Bits: 64}
	switch t := t.(type) {
	case *arrow.BooleanType:
		c.Kind, c.Bool = Bool, b.(*array.BooleanBuilder)
	case *arrow.Int8Type:
		c.Kind, c.I8, c.Bits = Int8, b.(*array.Int8Builder), 8
	case *arrow.Int16Type:
		c.Kind, c.I16, c.Bits = Int16, b.(*array.Int16Builder), 16
	case *arrow.Int32Type:
		c.Kind, c.I32, c.Bits = Int32, b.(*array.Int32Builder), 32
	case *arrow.Int64Type:
		c.Kind, c.I64 = Int64, b.(*array.Int64Builder)
	case *arrow.Uint8Type:
		c.Kind, c.U8, c.Bits = Uint8, b.(*array.Uint8Builder), 8
	case *arrow.Uint16Type:
		c.Kind, c.U16, c.Bits = Uint16, b.(*array.Uint16Builder), 16
	case *arrow.Uint32Type:
		c.Kind, c.U32, c.Bits = Uint32, b.(*array.Uint32Builder), 32
	case *arrow.Uint64Type:
		c.Kind, c.U64 = Uint64, b.(*array.Uint64Builder)
	case *arrow.Float32Type:
		c.Kind, c.F32, c.Bits = Float32, b.(*array.Float32Builder), 32
	case *arrow.Float64Type:
		c.Kind, c.F64 = Float64, b.(*array.Float64Builder)
	case *arrow.Decimal128Type:
		c.Kind, c.Dec, c.Prec, c.Scale = Decimal, b.(*array.Decimal128Builder), t.Precision, t.Scale
	case *arrow.StringType:
		c.Kind, c.Bin = String, b.(*array.StringBuilder).BinaryBuilder
	case *arrow.LargeStringType:
		c.Kind, c.Bin = String, b.(*array.LargeStringBuilder).BinaryBuilder
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		c.Kind, c.Bin = Binary, b.(*array.BinaryBuilder)
	case *arrow.FixedSizeBinaryType:
		c.Kind, c.Fix, c.Width = Fixed, b.(*array.FixedSizeBinaryBuilder), t.ByteWidth
	case *arrow.Date32Type:
		c.Kind, c.Date = Date, b.(*array.Date32Builder)
	case *arrow.TimestampType:
		c.Kind, c.Ts = Timestamp, b.(*array.TimestampBuilder)
		if t.TimeZone == "" {
			c.Kind = TimestampNTZ
		}
		c.div, c.mul = unitFromMicros(t.Unit)
	case *arrow.Time32Type:
		c.Kind, c.T32 = Time32, b.(*array.Time32Builder)
		c.div, c.mul = unitFromMicros(t.Unit)
	case *arrow.Time64Type:
		c.Kind, c.T64 = Time64, b.(*array.Time64Builder)
		c.div, c.mul = unitFromMicros(t.Unit)
	case *arrow.NullType:
		c.Kind = Null
	default:
		return false
	}
	return true
}

// unitFromMicros returns how to convert µs into unit: divide by div, or multiply by mul.
func unitFromMicros(u arrow.TimeUnit) (div, mul int64) {
	switch u {
	case arrow.Second:
		return 1_000_000, 1
	case arrow.Millisecond:
		return 1000, 1
	case arrow.Nanosecond:
		return 1, 1000
	}
	return 1, 1
}

// FromMicros converts µs to the unit of a timestamp or time column, rounding toward the past
// (so instants before 1970 stay before their second).
func (c *Column) FromMicros(us int64) int64 {
	if c.mul != 1 {
		return us * c.mul
	}
	if c.div != 1 {
		q := us / c.div
		if us%c.div < 0 {
			q--
		}
		return q
	}
	return us
}

// AppendInt appends v, which fits Bits, to a signed integer column.
func (c *Column) AppendInt(v int64) {
	switch c.Kind {
	case Int64:
		c.I64.Append(v)
	case Int32:
		c.I32.Append(int32(v))
	case Int16:
		c.I16.Append(int16(v))
	default:
		c.I8.Append(int8(v))
	}
}

// AppendUint appends v, which fits Bits, to an unsigned integer column.
func (c *Column) AppendUint(v uint64) {
	switch c.Kind {
	case Uint64:
		c.U64.Append(v)
	case Uint32:
		c.U32.Append(uint32(v))
	case Uint16:
		c.U16.Append(uint16(v))
	default:
		c.U8.Append(uint8(v))
	}
}

// AppendFloat appends v to a float or double column.
func (c *Column) AppendFloat(v float64) {
	if c.Kind == Float64 {
		c.F64.Append(v)
	} else {
		c.F32.Append(float32(v))
	}
}

// TimestampFromText parses RFC 3339 text (textconv.ParseCivil) for a timestamp column into
// the column's unit (seconds and milliseconds rounded toward the past; nanoseconds keep all
// nine fraction digits): zone-less text is read in loc (textconv.Instant); a timestamp_ntz
// column takes only zone-less text, as UTC. ok is false for other text and for an instant
// the unit cannot hold (nanoseconds: years 1678 to 2261).
func (c *Column) TimestampFromText(b []byte, loc *time.Location) (int64, bool) {
	if c.mul == 1000 { // nanoseconds
		civil, offset, hasZone, ok := textconv.ParseCivilNanos(b)
		switch {
		case !ok:
			return 0, false
		case c.Kind == TimestampNTZ:
			return civil, !hasZone
		case hasZone || loc == nil || loc == time.UTC:
			return civil - offset, true
		}
		// The zone's offset is whole seconds; split at the floored µs so a reading before
		// 1970 stays in its second.
		sub := civil % 1000
		if sub < 0 {
			sub += 1000
		}
		us := textconv.Instant((civil-sub)/1000, 0, false, loc)
		return us*1000 + sub, true
	}
	civil, offset, hasZone, ok := textconv.ParseCivil(b)
	switch {
	case !ok:
		return 0, false
	case c.Kind == TimestampNTZ:
		return c.FromMicros(civil), !hasZone
	}
	return c.FromMicros(textconv.Instant(civil, offset, hasZone, loc)), true
}

// TypeName names t in a bad-record reason: Spark's names for integers and timestamps, Arrow's
// otherwise.
func TypeName(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.Int8Type:
		return "tinyint"
	case *arrow.Int16Type:
		return "smallint"
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "bigint"
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return "timestamp_ntz"
		}
		return "timestamp"
	case *arrow.ListType:
		return "array"
	case *arrow.StructType:
		return "struct (object)"
	case *arrow.MapType:
		return "map (object)"
	}
	return t.String()
}

// WithRescuedColumn returns the fields of s followed by a nullable string column named name
// for rescued data, and its index; a string column of that name already in s is used as it
// is. With none, the fields are returned unchanged and the index is -1. A column of that name
// that is not a string is an error.
func WithRescuedColumn(s *arrow.Schema, name string, none bool) ([]arrow.Field, int, error) {
	fields := append([]arrow.Field(nil), s.Fields()...)
	if none {
		return fields, -1, nil
	}
	idx := -1
	for i, f := range fields {
		if f.Name == name {
			idx = i
		}
	}
	if idx < 0 {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true})
		return fields, len(fields) - 1, nil
	}
	if fields[idx].Type.ID() != arrow.STRING {
		return nil, -1, fmt.Errorf("column %s must be a string to hold rescued data, is %s", name, fields[idx].Type)
	}
	return fields, idx, nil
}

// InferTemporal returns the type text infers as when temporal inference is on (Spark's
// inferTimestamp): date for "YYYY-MM-DD", timestamp (µs, UTC) for other RFC 3339 text, nil
// for anything else.
func InferTemporal(b []byte) arrow.DataType {
	if _, ok := textconv.ParseDate(b); ok {
		return arrow.FixedWidthTypes.Date32
	}
	if _, _, ok := textconv.ParseTimestamp(b, nil); ok {
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	return nil
}
