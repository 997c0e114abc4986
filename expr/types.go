package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Kind is a Spark SQL type family.
type Kind int

// The Spark types this package evaluates, with their Arrow representation.
const (
	KNull      Kind = iota // void: the type of NULL before coercion (arrow null)
	KBool                  // boolean (arrow bool)
	KInt                   // int (arrow int32); tinyint and smallint columns are read as int
	KBigInt                // bigint (arrow int64)
	KDecimal               // decimal(p,s) (arrow decimal128(p,s))
	KDouble                // double (arrow float64); float columns are read as double
	KString                // string (arrow utf8; large_utf8 and string_view are read as utf8)
	KBinary                // binary (arrow binary; large_binary and binary_view are read as binary)
	KDate                  // date (arrow date32, days since the epoch)
	KTimestamp             // timestamp (arrow timestamp[us, UTC]; other units/zones are converted)
	KInterval              // day-time interval (arrow duration[us]); P 1: of whole days (Spark's interval day)
	KArray                 // array<T> (arrow list; large_list and list_view columns are read as list)
	KStruct                // struct<name:T,…> (arrow struct)
	KMap                   // map<K,V> (arrow map)
	KYearMonth             // year-month interval: months (held as arrow int32); P and S are its start and end fields (0 YEAR, 1 MONTH)
)

// Type is a Spark SQL type; P and S are the precision and scale of a decimal. The parts of
// an array, map or struct type are reached through Elem, Key and Fields (types_nested.go).
type Type struct {
	Kind Kind
	P, S int
	nt   *nestedType
}

// The non-parameterised types.
var (
	TNull      = Type{Kind: KNull}
	TBool      = Type{Kind: KBool}
	TInt       = Type{Kind: KInt}
	TBigInt    = Type{Kind: KBigInt}
	TDouble    = Type{Kind: KDouble}
	TString    = Type{Kind: KString}
	TDate      = Type{Kind: KDate}
	TTimestamp = Type{Kind: KTimestamp}
	TInterval  = Type{Kind: KInterval}
	// TIntervalDay is an interval of whole days (INTERVAL n DAY, DATE - DATE): DATE ± it is a
	// date, as in Spark.
	TIntervalDay = Type{Kind: KInterval, P: 1}
	TBinary      = Type{Kind: KBinary}
)

// YearMonth returns the year-month interval type from field start to field end (0 YEAR,
// 1 MONTH): interval year, interval month or interval year to month, as Spark's
// YearMonthIntervalType.
func YearMonth(start, end int) Type { return Type{Kind: KYearMonth, P: start, S: end} }

// Decimal returns decimal(p,s).
func Decimal(p, s int) Type { return Type{Kind: KDecimal, P: p, S: s} }

// String prints the type as Spark's typeof does: int, bigint, decimal(10,2), ...
func (t Type) String() string {
	switch t.Kind {
	case KNull:
		return "void"
	case KBool:
		return "boolean"
	case KInt:
		return "int"
	case KBigInt:
		return "bigint"
	case KDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.P, t.S)
	case KDouble:
		return "double"
	case KString:
		return "string"
	case KBinary:
		return "binary"
	case KDate:
		return "date"
	case KTimestamp:
		return "timestamp"
	case KInterval:
		if t.P == 1 {
			return "interval day"
		}
		return "interval day to second"
	case KYearMonth:
		switch {
		case t.P == 0 && t.S == 0:
			return "interval year"
		case t.P == 1:
			return "interval month"
		}
		return "interval year to month"
	case KArray, KStruct, KMap:
		return t.nt.str
	}
	return "?"
}

func (t Type) numeric() bool {
	return t.Kind == KInt || t.Kind == KBigInt || t.Kind == KDecimal || t.Kind == KDouble
}
func (t Type) integral() bool { return t.Kind == KInt || t.Kind == KBigInt }

// Arrow returns the Arrow type values of t are held in.
func (t Type) Arrow() arrow.DataType {
	switch t.Kind {
	case KNull:
		return arrow.Null
	case KBool:
		return arrow.FixedWidthTypes.Boolean
	case KInt, KYearMonth:
		return arrow.PrimitiveTypes.Int32
	case KBigInt:
		return arrow.PrimitiveTypes.Int64
	case KDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.P), Scale: int32(t.S)}
	case KDouble:
		return arrow.PrimitiveTypes.Float64
	case KString:
		return arrow.BinaryTypes.String
	case KBinary:
		return arrow.BinaryTypes.Binary
	case KDate:
		return arrow.FixedWidthTypes.Date32
	case KTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case KInterval:
		return arrow.FixedWidthTypes.Duration_us
	case KArray, KStruct, KMap:
		return t.nt.arrow
	}
	panic("expr: no arrow type for " + t.String())
}

// FromArrow maps an Arrow column type to the Spark type it is evaluated as; ok is false for
// types the language cannot use.
func FromArrow(dt arrow.DataType) (t Type, ok bool) {
	switch d := dt.(type) {
	case *arrow.NullType:
		return TNull, true
	case *arrow.BooleanType:
		return TBool, true
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return TInt, true
	case *arrow.Int64Type, *arrow.Uint32Type:
		return TBigInt, true
	case *arrow.Decimal128Type:
		return Decimal(int(d.Precision), int(d.Scale)), true
	case *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		return TDouble, true
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return TString, true
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return TBinary, true
	case *arrow.Date32Type, *arrow.Date64Type:
		return TDate, true
	case *arrow.TimestampType:
		return TTimestamp, true
	case *arrow.DurationType:
		return TInterval, true
	case *arrow.MonthIntervalType:
		return YearMonth(1, 1), true
	}
	return nestedFromArrow(dt)
}

// asDecimal is the decimal type an integral type widens to (Spark: int → decimal(10,0),
// bigint → decimal(20,0)).
func asDecimal(t Type) Type {
	switch t.Kind {
	case KInt:
		return Decimal(10, 0)
	case KBigInt:
		return Decimal(20, 0)
	}
	return t
}

// boundedDecimal caps a decimal result type at precision 38 the way Spark does with
// spark.sql.decimalOperations.allowPrecisionLoss=true (DecimalType.adjustPrecisionScale).
func boundedDecimal(p, s int) Type {
	if p <= 38 {
		return Decimal(p, s)
	}
	intDigits := p - s
	minScale := min(s, 6)
	return Decimal(38, max(38-intDigits, minScale))
}

// wider is Spark's findWiderTypeForTwo under ANSI coercion: the type both sides are cast to
// for comparisons, IN, CASE, COALESCE and IF. ok is false when no implicit cast exists.
func wider(a, b Type) (Type, bool) {
	if a == b {
		return a, true
	}
	if a.Kind == KNull {
		return b, true
	}
	if b.Kind == KNull {
		return a, true
	}
	if a.numeric() && b.numeric() {
		switch {
		case a.Kind == KDouble || b.Kind == KDouble:
			return TDouble, true
		case a.Kind == KDecimal || b.Kind == KDecimal:
			da, db := asDecimal(a), asDecimal(b)
			s := max(da.S, db.S)
			return boundedDecimal(max(da.P-da.S, db.P-db.S)+s, s), true
		default:
			return TBigInt, true
		}
	}
	if a.Kind == KDate && b.Kind == KTimestamp || a.Kind == KTimestamp && b.Kind == KDate {
		return TTimestamp, true
	}
	if a.Kind == KInterval && b.Kind == KInterval {
		return TInterval, true
	}
	if a.Kind == KYearMonth && b.Kind == KYearMonth {
		return YearMonth(min(a.P, b.P), max(a.S, b.S)), true
	}
	if a.Kind == KBinary && b.Kind == KString || a.Kind == KString && b.Kind == KBinary {
		return TBinary, true // Spark casts the string to its UTF-8 bytes
	}
	return widerNested(a, b)
}

// comparable is the common type of a binary comparison: wider, plus Spark 4 ANSI's string
// promotion (a string compared with an integral type is cast to bigint, with a double to
// double, with a date or timestamp to that type; a bad string is a CAST_INVALID_INPUT error).
func comparable(a, b Type) (Type, bool) {
	if t, ok := wider(a, b); ok {
		return t, true
	}
	if a.Kind == KString {
		a, b = b, a
	}
	if b.Kind == KString {
		switch a.Kind {
		case KInt, KBigInt:
			return TBigInt, true
		case KDouble, KDecimal:
			return TDouble, true
		case KDate, KTimestamp, KBool:
			return a, true
		}
	}
	return Type{}, false
}
