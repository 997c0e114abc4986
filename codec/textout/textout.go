// Package textout writes Arrow values as text: JSON as Spark's to_json writes it, and the text
// of a CSV field as Spark's CSV writer writes it. Every streamkit writer of JSON or CSV
// (write-kafka --value-format json, print, side outputs, state-dump, rescued data of columns
// that do not fit) encodes values here, so that what one writes, the matching reader
// (codec/jsonrow, codec/csvrow) reads back unchanged:
//
//	null                     null (JSON); the null value, by default nothing (CSV)
//	integers, boolean        their decimal / true, false
//	float16/32/64            the shortest decimal that reads back to the same value ("-0" for
//	                         −0.0); NaN, +Inf and −Inf as the strings "NaN", "Infinity" and
//	                         "-Infinity" (Jackson's quoted non-numeric numbers), at every depth
//	decimal                  the exact number with the type's scale (a JSON number)
//	string                   a JSON string (CSV: the text; "" for the empty string)
//	binary                   base64 in JSON; lower-case hex in CSV and tables (Options.Binary
//	                         chooses text, base64 or hex instead)
//	date                     YYYY-MM-DD
//	timestamp                ISO 8601 with as many fraction digits as the value needs, at most
//	                         the unit's (3 ms, 6 µs, 9 ns): with a zone, in the column's zone
//	                         ("Z" for UTC, else ±hh:mm); timestamp_ntz without a zone
//	time                     hh:mm:ss with the fraction the value needs
//	list, struct, map        JSON array, object, object (map keys as their text)
//	dictionary               the value it encodes
//
// Years outside 0000–9999 (a window end at the end of time, 10000-01-01) are written in ISO
// 8601's expanded form, a sign and at least four digits ("+10000-01-01T00:00:00Z",
// "-0001-12-31"), as java.time and Spark write them; textconv reads them.
package textout

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec/rescue"

	"github.com/streamkit/streamkit/codec"
)

// Binary says how binary values (binary, large_binary, binary_view, fixed_size_binary) are
// written, at every depth.
type Binary uint8

const (
	// BinaryDefault writes base64 (RFC 4648, padded) in JSON, as Spark's to_json does, and
	// lower-case hex in a CSV field or a table cell: both read back unambiguously.
	BinaryDefault Binary = iota
	// BinaryText writes a value that is valid UTF-8 without control characters (tab, CR and LF
	// allowed) as that text, as kcat prints keys, and any other value as `\x` and lower-case
	// hex (PostgreSQL's bytea spelling: "\x00000001"). For people: a text value that looks like
	// `\x…` reads the same as a fallback.
	BinaryText
	// BinaryBase64 writes base64 (RFC 4648, padded) everywhere.
	BinaryBase64
	// BinaryHex writes lower-case hex everywhere (in JSON as a string).
	BinaryHex
)

// Options are the choices of a writer that differ from the package's defaults. The zero value
// is the default of AppendJSON and AppendText.
type Options struct {
	// Binary is the spelling of binary values.
	Binary Binary
	// OmitNull leaves a struct's null fields out of JSON (AppendJSONOmitNull).
	OmitNull bool
}

// AppendJSON appends the JSON of row i of a to dst (see the package doc). A struct's null
// fields are written as null.
func AppendJSON(dst []byte, a arrow.Array, i int) []byte { return appendJSON(dst, a, i, Options{}) }

// AppendJSONOmitNull is AppendJSON leaving a struct's null fields out, as Spark's to_json and
// JSON writer do by default (spark.sql.jsonGenerator.ignoreNullFields = true); nulls in arrays
// and map values are kept, as there.
func AppendJSONOmitNull(dst []byte, a arrow.Array, i int) []byte {
	return appendJSON(dst, a, i, Options{OmitNull: true})
}

// AppendJSON is the package's AppendJSON with the choices of o.
func (o Options) AppendJSON(dst []byte, a arrow.Array, i int) []byte { return appendJSON(dst, a, i, o) }

// AppendText is the package's AppendText with the choices of o.
func (o Options) AppendText(dst []byte, a arrow.Array, i int) (out []byte, null bool) {
	return appendText(dst, a, i, o)
}

// binaryValue returns row i of a binary array of any layout; ok is false for other types.
func binaryValue(a arrow.Array, i int) (v []byte, ok bool) {
	switch a := a.(type) {
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	case *array.BinaryView:
		return a.Value(i), true
	case *array.FixedSizeBinary:
		return a.Value(i), true
	}
	return nil, false
}

// appendBinaryJSON appends b as a JSON string in the spelling of o.Binary.
func appendBinaryJSON(dst, b []byte, o Options) []byte {
	switch o.Binary {
	case BinaryText:
		if IsText(b) {
			return rescue.AppendQuoted(dst, string(b))
		}
		dst = append(dst, '"', '\\', '\\', 'x')
		dst = hex.AppendEncode(dst, b)
		return append(dst, '"')
	case BinaryHex:
		dst = append(dst, '"')
		dst = hex.AppendEncode(dst, b)
		return append(dst, '"')
	}
	return appendBase64(dst, b)
}

// appendBinaryText appends b as text in the spelling of o.Binary.
func appendBinaryText(dst, b []byte, o Options) []byte {
	switch o.Binary {
	case BinaryText:
		if IsText(b) {
			return append(dst, b...)
		}
		return hex.AppendEncode(append(dst, '\\', 'x'), b)
	case BinaryBase64:
		return base64.StdEncoding.AppendEncode(dst, b)
	}
	return hex.AppendEncode(dst, b)
}

// IsText reports whether b is valid UTF-8 without control characters (C0, DEL or C1) other
// than tab, CR and LF: bytes that BinaryText shows as they are.
func IsText(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r >= 0x80 && r <= 0x9f {
			return false
		}
		i += size
	}
	return true
}

func appendJSON(dst []byte, a arrow.Array, i int, o Options) []byte {
	if a.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := a.(type) {
	case *array.String:
		return rescue.AppendQuoted(dst, a.Value(i))
	case *array.LargeString:
		return rescue.AppendQuoted(dst, a.Value(i))
	case *array.StringView:
		return rescue.AppendQuoted(dst, a.Value(i))
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		b, _ := binaryValue(a, i)
		return appendBinaryJSON(dst, b, o)
	case *array.Float16:
		return appendFloatJSON(dst, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendFloatJSON(dst, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloatJSON(dst, a.Value(i), 64)
	case *array.Timestamp, *array.Date32, *array.Date64, *array.Time32, *array.Time64:
		dst = append(dst, '"')
		dst, _ = AppendText(dst, a, i)
		return append(dst, '"')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		first := true
		for f := 0; f < a.NumField(); f++ {
			if o.OmitNull && a.Field(f).IsNull(i) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = rescue.AppendQuoted(dst, st.Field(f).Name)
			dst = append(dst, ':')
			dst = appendJSON(dst, a.Field(f), i, o)
		}
		return append(dst, '}')
	case *array.Map:
		// An object, as Spark's to_json writes a map: keys as text.
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		dst = append(dst, '{')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				dst = append(dst, ',')
			}
			if _, ok := keys.(*array.String); ok || keys.IsNull(j) {
				dst = appendJSON(dst, keys, j, o)
			} else {
				k, _ := appendText(nil, keys, j, o)
				dst = rescue.AppendQuoted(dst, string(k))
			}
			dst = append(dst, ':')
			dst = appendJSON(dst, items, j, o)
		}
		return append(dst, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		dst = append(dst, '[')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, vals, j, o)
		}
		return append(dst, ']')
	case *array.Dictionary:
		return appendJSON(dst, a.Dictionary(), a.GetValueIndex(i), o)
	case array.ExtensionArray:
		return appendJSON(dst, a.Storage(), i, o)
	}
	if out, ok := appendScalar(dst, a, i); ok {
		return out
	}
	v, err := json.Marshal(a.GetOneForMarshal(i))
	if err != nil {
		return rescue.AppendQuoted(dst, a.ValueStr(i))
	}
	return append(dst, v...)
}

// AppendText appends the text of row i of a as a CSV field or table cell holds it: strings
// as they are, binary as hex, nested values as their JSON, everything else as in AppendJSON
// without quotes. null reports a null value (nothing is appended).
func AppendText(dst []byte, a arrow.Array, i int) (out []byte, null bool) {
	return appendText(dst, a, i, Options{})
}

func appendText(dst []byte, a arrow.Array, i int, o Options) (out []byte, null bool) {
	if a.IsNull(i) {
		return dst, true
	}
	switch a := a.(type) {
	case *array.String:
		return append(dst, a.Value(i)...), false
	case *array.LargeString:
		return append(dst, a.Value(i)...), false
	case *array.StringView:
		return append(dst, a.Value(i)...), false
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		b, _ := binaryValue(a, i)
		return appendBinaryText(dst, b, o), false
	case *array.Float16:
		return AppendFloat(dst, float64(a.Value(i).Float32()), 32), false
	case *array.Float32:
		return AppendFloat(dst, float64(a.Value(i)), 32), false
	case *array.Float64:
		return AppendFloat(dst, a.Value(i), 64), false
	case *array.Timestamp:
		return AppendTimestamp(dst, int64(a.Value(i)), a.DataType().(*arrow.TimestampType)), false
	case *array.Date32:
		return appendDate(dst, int64(a.Value(i))), false
	case *array.Date64:
		return appendDate(dst, codec.FloorDiv(int64(a.Value(i)), 86_400_000)), false
	case *array.Time32:
		return appendTimeOfDay(dst, int64(a.Value(i)), a.DataType().(*arrow.Time32Type).Unit), false
	case *array.Time64:
		return appendTimeOfDay(dst, int64(a.Value(i)), a.DataType().(*arrow.Time64Type).Unit), false
	case *array.Dictionary:
		return appendText(dst, a.Dictionary(), a.GetValueIndex(i), o)
	case array.ExtensionArray:
		return appendText(dst, a.Storage(), i, o)
	case *array.Struct, array.ListLike:
		return appendJSON(dst, a, i, o), false
	}
	if out, ok := appendScalar(dst, a, i); ok {
		return out, false
	}
	switch v := a.GetOneForMarshal(i).(type) {
	case string:
		return append(dst, v...), false
	case nil:
		return dst, true
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return append(dst, a.ValueStr(i)...), false
		}
		return append(dst, b...), false
	}
}

// appendScalar appends the text of integers, booleans and decimals, which JSON and CSV spell
// alike; ok is false for other types.
func appendScalar(dst []byte, a arrow.Array, i int) ([]byte, bool) {
	switch a := a.(type) {
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i)), true
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), true
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), true
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), true
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), true
	case *array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return append(dst, DecimalText(a, i)...), true
	}
	return dst, false
}

// DecimalText renders a non-null decimal exactly, in plain notation with the type's scale
// ("-0.0000000001", "1.50"); arrow-go's own rendering uses %g ("-1e-10", "1.5"). It returns ""
// for other types.
func DecimalText(col arrow.Array, r int) string {
	dt, ok := col.DataType().(arrow.DecimalType)
	if !ok {
		return ""
	}
	scale := dt.GetScale()
	switch a := col.(type) {
	case *array.Decimal32:
		return a.Value(r).ToString(scale)
	case *array.Decimal64:
		return a.Value(r).ToString(scale)
	case *array.Decimal128:
		return a.Value(r).ToString(scale)
	case *array.Decimal256:
		return a.Value(r).ToString(scale)
	}
	return ""
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// AppendFloat appends v as text: the shortest decimal that reads back to v at bits (32 or
// 64) bits, "-0" for −0.0, and "NaN", "Infinity", "-Infinity" (Spark's and Java's spelling,
// which codec/csvrow and codec/jsonrow read).
func AppendFloat(dst []byte, v float64, bits int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, bits)
}

// appendFloatJSON writes NaN and ±Inf as JSON strings (JSON has no such numbers).
func appendFloatJSON(dst []byte, v float64, bits int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		dst = append(dst, '"')
		dst = AppendFloat(dst, v, bits)
		return append(dst, '"')
	}
	return AppendFloat(dst, v, bits)
}

// unitPerSecond is the number of units of u in one second, and the fraction digits it has.
func unitPerSecond(u arrow.TimeUnit) (per int64, digits int) {
	switch u {
	case arrow.Second:
		return 1, 0
	case arrow.Millisecond:
		return 1e3, 3
	case arrow.Microsecond:
		return 1e6, 6
	}
	return 1e9, 9
}

// AppendTimestamp appends the timestamp v (in t's unit) as ISO 8601 (see the package doc):
// with a zone in that zone ("Z" for UTC or an unknown zone name; an offset that is not a
// whole minute, as local mean times have, is written in UTC), without one for timestamp_ntz.
func AppendTimestamp(dst []byte, v int64, t *arrow.TimestampType) []byte {
	per, digits := unitPerSecond(t.Unit)
	sec, frac := codec.FloorDiv(v, per), v-codec.FloorDiv(v, per)*per
	offset := int64(0) // seconds east of UTC
	if t.TimeZone != "" {
		if loc := location(t.TimeZone); loc != nil {
			_, off := time.Unix(sec, 0).In(loc).Zone()
			if off%60 == 0 {
				offset = int64(off)
			}
		}
	}
	local := sec + offset
	dst = appendDate(dst, codec.FloorDiv(local, 86400))
	dst = append(dst, 'T')
	dst = appendClock(dst, local-codec.FloorDiv(local, 86400)*86400, frac, digits)
	if t.TimeZone == "" {
		return dst
	}
	if offset == 0 {
		return append(dst, 'Z')
	}
	sign := byte('+')
	if offset < 0 {
		sign, offset = '-', -offset
	}
	dst = append(dst, sign)
	dst = append2(dst, int(offset/3600))
	dst = append(dst, ':')
	return append2(dst, int(offset/60%60))
}

// appendClock appends hh:mm:ss of secs (0 ≤ secs < 86400) and the fraction frac of digits
// digits with its trailing zeros removed (nothing when it is 0).
func appendClock(dst []byte, secs, frac int64, digits int) []byte {
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	if frac == 0 {
		return dst
	}
	var buf [9]byte
	for k := digits - 1; k >= 0; k-- {
		buf[k] = byte('0' + frac%10)
		frac /= 10
	}
	n := digits
	for n > 0 && buf[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, buf[:n]...)
}

func appendTimeOfDay(dst []byte, v int64, u arrow.TimeUnit) []byte {
	per, digits := unitPerSecond(u)
	sec := codec.FloorDiv(v, per)
	return appendClock(dst, sec-codec.FloorDiv(sec, 86400)*86400, v-sec*per, digits)
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendDate appends the proleptic Gregorian date of days since 1970-01-01 as YYYY-MM-DD, a
// year outside 0–9999 as a sign and at least four digits (ISO 8601 expanded years).
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	switch {
	case y < 0:
		dst = append(dst, '-')
		y = -y
	case y > 9999:
		dst = append(dst, '+')
	}
	if y < 1000 {
		dst = append(dst, "000"[:3-digitsOf(y)+1]...)
	}
	dst = strconv.AppendInt(dst, y, 10)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d)
}

// digitsOf is the number of decimal digits of 0 ≤ v < 1000 (1 for 0).
func digitsOf(v int64) int {
	switch {
	case v >= 100:
		return 3
	case v >= 10:
		return 2
	}
	return 1
}

// civilFromDays is the inverse of textconv.DaysFromCivil (Howard Hinnant's algorithm).
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

var zones sync.Map // time zone name → *time.Location (nil: UTC or unknown)

// location returns the zone named tz, nil for UTC and names that do not load.
func location(tz string) *time.Location {
	if l, ok := zones.Load(tz); ok {
		return l.(*time.Location)
	}
	var loc *time.Location
	switch tz {
	case "UTC", "Z", "+00:00", "Etc/UTC", "utc":
	default:
		if l, err := time.LoadLocation(tz); err == nil && l != time.UTC {
			loc = l
		} else if off, ok := fixedOffset(tz); ok && off != 0 {
			loc = time.FixedZone(tz, off)
		}
	}
	zones.Store(tz, loc)
	return loc
}

// fixedOffset parses an Arrow fixed-offset zone "±hh:mm" into seconds east of UTC.
func fixedOffset(tz string) (int, bool) {
	if len(tz) != 6 || (tz[0] != '+' && tz[0] != '-') || tz[3] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(tz[1:3])
	m, err2 := strconv.Atoi(tz[4:6])
	if err1 != nil || err2 != nil || h > 23 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if tz[0] == '-' {
		off = -off
	}
	return off, true
}
