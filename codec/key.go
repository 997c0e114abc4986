package codec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/zeebo/xxh3"
)

// Key encoding (docs/protocol.md "Keys"): a key is the concatenation, per key column, of a
// one-byte tag and the value's bytes. Equal values encode equally whatever the integer width
// (int8…int64 all encode as tag int), null is a tag of its own, and an empty string differs
// from null. A value also encodes the same in every physical form of its column: plain,
// dictionary-encoded, run-end encoded, string/binary view or large, sliced or not; and so does
// null, whether a validity bit, a null dictionary index, a null dictionary slot, a null run
// value or a null enclosing struct holds it (Column.IsNull). The encoding is self-describing,
// so state-dump can render keys without knowing the operator. Tags:
//
//	0 null
//	1 int     8 bytes big-endian two's complement (int8…int64, and uint8…uint32)
//	2 uint64  8 bytes big-endian
//	3 float   8 bytes big-endian IEEE 754 of the float64 value (float32 widened; -0 → 0)
//	4 bool    1 byte
//	5 string  uvarint length + UTF-8 bytes
//	6 binary  uvarint length + bytes
//	7 timestamp  1 byte unit (0 s, 1 ms, 2 µs, 3 ns) + 8 bytes big-endian value (UTC)
//	8 date    8 bytes big-endian days since 1970-01-01
//	9 decimal 1 byte scale + 16 bytes big-endian (high, low) of the unscaled 128-bit value
//	10 json   uvarint length + JSON text of a nested value (struct, list, map)
const (
	tagNull byte = iota
	tagInt
	tagUint
	tagFloat
	tagBool
	tagString
	tagBinary
	tagTimestamp
	tagDate
	tagDecimal
	tagJSON
)

// KeyEncoder encodes the key columns of a record batch row by row.
type KeyEncoder struct {
	Paths []Path
}

// NewKeyEncoder resolves the key columns (dot paths) against s. With no paths, every
// top-level column is part of the key. Errors name a missing column.
func NewKeyEncoder(s *arrow.Schema, paths []string) (*KeyEncoder, error) {
	if len(paths) == 0 {
		for _, f := range s.Fields() {
			paths = append(paths, f.Name)
		}
	}
	e := &KeyEncoder{}
	for _, p := range paths {
		rp, err := ResolvePath(s, p)
		if err != nil {
			return nil, err
		}
		e.Paths = append(e.Paths, rp)
	}
	return e, nil
}

// Names returns the key columns as written.
func (e *KeyEncoder) Names() []string {
	out := make([]string, len(e.Paths))
	for i, p := range e.Paths {
		out[i] = p.Name
	}
	return out
}

// Columns returns the key arrays of rec, for repeated AppendRow calls.
func (e *KeyEncoder) Columns(rec arrow.RecordBatch) []KeyColumn {
	cols := make([]KeyColumn, len(e.Paths))
	for i, p := range e.Paths {
		cols[i] = KeyColumn{Path: p, Column: p.Column(rec)}
	}
	return cols
}

// KeyColumn is one key column of one batch (its leaf array and null-carrying ancestors).
type KeyColumn struct {
	Path Path
	Column
}

// AppendRow appends the encoded key of row r to dst. A row that is null at the key column or
// at any struct above it encodes as null.
func AppendRow(dst []byte, cols []KeyColumn, r int) []byte {
	for _, c := range cols {
		if c.IsNull(r) {
			dst = append(dst, tagNull)
			continue
		}
		dst = appendValue(dst, c.Arr, r)
	}
	return dst
}

// AppendRows appends the encoded keys of rows 0 to n-1 to dst, each as AppendRow encodes it,
// and where each ends in dst to ends. A single key column without nulls of binary, string or
// int64 values is encoded by a loop of its own (no per-row type switch and null tests).
func AppendRows(dst []byte, ends []int, cols []KeyColumn, n int) ([]byte, []int) {
	if len(cols) == 1 && !cols[0].HasNulls() {
		switch a := cols[0].Arr.(type) {
		case *array.Binary:
			for r := 0; r < n; r++ {
				dst = appendBytes(dst, tagBinary, a.Value(r))
				ends = append(ends, len(dst))
			}
			return dst, ends
		case *array.String:
			for r := 0; r < n; r++ {
				dst = appendBytes(dst, tagString, []byte(a.Value(r)))
				ends = append(ends, len(dst))
			}
			return dst, ends
		case *array.Int64:
			for r := 0; r < n; r++ {
				dst = appendU64(dst, tagInt, uint64(a.Value(r)))
				ends = append(ends, len(dst))
			}
			return dst, ends
		}
	}
	for r := 0; r < n; r++ {
		dst = AppendRow(dst, cols, r)
		ends = append(ends, len(dst))
	}
	return dst, ends
}

// AppendKeyInt appends v as an int key part, as AppendRow encodes a value of an integer
// column (window state appends count-window slice numbers to keys this way).
func AppendKeyInt(dst []byte, v int64) []byte { return appendU64(dst, tagInt, uint64(v)) }

// AppendKeyString appends v as a string key part, as AppendRow encodes a value of a string
// column (expect keys its counters by expectation name this way).
func AppendKeyString(dst []byte, v string) []byte { return appendBytes(dst, tagString, []byte(v)) }

// AppendKeyTimestamp appends v, a timestamp in unit, as a timestamp key part, as AppendRow
// encodes a value of a timestamp column (window state appends window bounds to keys this way).
func AppendKeyTimestamp(dst []byte, unit arrow.TimeUnit, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, tagTimestamp, byte(unit)), uint64(v))
}

func appendU64(dst []byte, tag byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, tag), v)
}

func appendBytes(dst []byte, tag byte, b []byte) []byte {
	dst = binary.AppendUvarint(append(dst, tag), uint64(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, a arrow.Array, r int) []byte {
	switch a := a.(type) {
	case *array.Int64:
		return appendU64(dst, tagInt, uint64(a.Value(r)))
	case *array.Int32:
		return appendU64(dst, tagInt, uint64(int64(a.Value(r))))
	case *array.Int16:
		return appendU64(dst, tagInt, uint64(int64(a.Value(r))))
	case *array.Int8:
		return appendU64(dst, tagInt, uint64(int64(a.Value(r))))
	case *array.Uint8:
		return appendU64(dst, tagInt, uint64(a.Value(r)))
	case *array.Uint16:
		return appendU64(dst, tagInt, uint64(a.Value(r)))
	case *array.Uint32:
		return appendU64(dst, tagInt, uint64(a.Value(r)))
	case *array.Uint64:
		return appendU64(dst, tagUint, a.Value(r))
	case *array.Float64:
		return appendU64(dst, tagFloat, floatBits(a.Value(r)))
	case *array.Float32:
		return appendU64(dst, tagFloat, floatBits(float64(a.Value(r))))
	case *array.Boolean:
		b := byte(0)
		if a.Value(r) {
			b = 1
		}
		return append(dst, tagBool, b)
	case *array.String:
		return appendBytes(dst, tagString, []byte(a.Value(r)))
	case *array.LargeString:
		return appendBytes(dst, tagString, []byte(a.Value(r)))
	case *array.StringView:
		return appendBytes(dst, tagString, []byte(a.Value(r)))
	case *array.Binary:
		return appendBytes(dst, tagBinary, a.Value(r))
	case *array.LargeBinary:
		return appendBytes(dst, tagBinary, a.Value(r))
	case *array.Timestamp:
		return AppendKeyTimestamp(dst, a.DataType().(*arrow.TimestampType).Unit, int64(a.Value(r)))
	case *array.Date32:
		return appendU64(dst, tagDate, uint64(int64(a.Value(r))))
	case *array.Date64:
		return appendU64(dst, tagDate, uint64(int64(a.Value(r))/86_400_000))
	case *array.Decimal128:
		v := a.Value(r)
		dst = append(dst, tagDecimal, byte(a.DataType().(*arrow.Decimal128Type).Scale))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(dst, v.LowBits())
	case *array.BinaryView:
		return appendBytes(dst, tagBinary, a.Value(r))
	case *array.Dictionary, *array.RunEndEncoded:
		v, i, _ := logicalValue(a, r) // not null: AppendRow tested the row
		return appendValue(dst, v, i)
	}
	b, err := json.Marshal(a.GetOneForMarshal(r))
	if err != nil {
		b = []byte(fmt.Sprintf("%q", a.ValueStr(r)))
	}
	return appendBytes(dst, tagJSON, b)
}

func floatBits(f float64) uint64 {
	if f == 0 {
		f = 0 // -0 and +0 are one key
	}
	if math.IsNaN(f) {
		return 0x7ff8000000000001 // one NaN key
	}
	return math.Float64bits(f)
}

// Hash64 is the shard hash of an encoded key: XXH3-64 with seed 0 over its bytes (the
// xxHash specification, github.com/Cyan4973/xxHash doc/xxhash_spec.md; Python
// xxhash.xxh3_64_intdigest). It is stable across runs, machines and versions: keyby routes
// row → shard = Hash64(key) mod N, and a restart must route every key to the same shard.
func Hash64(key []byte) uint64 { return xxh3.Hash(key) }

// ErrBadKey is returned for bytes that are not a key encoding.
var ErrBadKey = errors.New("not an encoded key")

// errShortKey reports a key whose last part is cut short.
var errShortKey = fmt.Errorf("%w: truncated bytes", ErrBadKey)

// KeyTimestamp is a decoded timestamp key part (UTC). It prints as RFC 3339.
type KeyTimestamp struct {
	Unit  arrow.TimeUnit
	Value arrow.Timestamp
}

func (t KeyTimestamp) String() string {
	return t.Value.ToTime(t.Unit).UTC().Format("2006-01-02T15:04:05.999999999Z")
}

// KeyDate is a decoded date key part (days since 1970-01-01). It prints as YYYY-MM-DD.
type KeyDate arrow.Date32

func (d KeyDate) String() string { return arrow.Date32(d).FormattedString() }

// KeyDecimal is a decoded decimal key part. It prints as its decimal text.
type KeyDecimal struct {
	Num   decimal128.Num
	Scale int32
}

func (d KeyDecimal) String() string { return d.Num.ToString(d.Scale) }

// KeyPart is one part of an encoded key, read by NextKeyPart without copying or allocating:
// its bytes (strings, binaries, JSON) alias the key.
type KeyPart struct {
	tag byte
	aux byte   // timestamp: unit; decimal: scale
	u   uint64 // int, uint, float bits, bool (0/1), date days, timestamp value, decimal low bits
	hi  uint64 // decimal high bits
	b   []byte // string, binary, JSON
}

// NextKeyPart reads the first part of key and returns it with the rest of the key. Errors
// wrap ErrBadKey (an unknown tag, or bytes cut short).
func NextKeyPart(key []byte) (KeyPart, []byte, error) {
	if len(key) == 0 {
		return KeyPart{}, nil, errShortKey
	}
	p := KeyPart{tag: key[0]}
	key = key[1:]
	be := binary.BigEndian
	switch p.tag {
	case tagNull:
	case tagInt, tagUint, tagFloat, tagDate:
		if len(key) < 8 {
			return KeyPart{}, nil, errShortKey
		}
		p.u, key = be.Uint64(key), key[8:]
	case tagBool:
		if len(key) < 1 {
			return KeyPart{}, nil, errShortKey
		}
		if key[0] == 1 {
			p.u = 1
		}
		key = key[1:]
	case tagString, tagBinary, tagJSON:
		n, k := binary.Uvarint(key)
		if k <= 0 || uint64(len(key)-k) < n {
			return KeyPart{}, nil, errShortKey
		}
		p.b, key = key[k:k+int(n)], key[k+int(n):]
	case tagTimestamp:
		if len(key) < 9 {
			return KeyPart{}, nil, errShortKey
		}
		p.aux, p.u, key = key[0], be.Uint64(key[1:]), key[9:]
	case tagDecimal:
		if len(key) < 17 {
			return KeyPart{}, nil, errShortKey
		}
		p.aux, p.hi, p.u, key = key[0], be.Uint64(key[1:]), be.Uint64(key[9:]), key[17:]
	default:
		return KeyPart{}, nil, ErrBadKey
	}
	return p, key, nil
}

// IsNull reports whether the part is a null.
func (p KeyPart) IsNull() bool { return p.tag == tagNull }

// isText reports whether the part is a string, binary or JSON text.
func (p KeyPart) isText() bool { return p.tag == tagString || p.tag == tagBinary || p.tag == tagJSON }

func (p KeyPart) date() KeyDate { return KeyDate(int32(int64(p.u))) }

func (p KeyPart) decimal() decimal128.Num { return decimal128.New(int64(p.hi), p.u) }

// Value returns the part as a Go value (DecodeKey lists the types); strings, binaries and
// JSON are copied.
func (p KeyPart) Value() any {
	switch p.tag {
	case tagInt:
		return int64(p.u)
	case tagUint:
		return p.u
	case tagFloat:
		return math.Float64frombits(p.u)
	case tagDate:
		return p.date()
	case tagBool:
		return p.u == 1
	case tagString:
		return string(p.b)
	case tagBinary:
		return append([]byte(nil), p.b...)
	case tagJSON:
		return json.RawMessage(append([]byte(nil), p.b...))
	case tagTimestamp:
		return KeyTimestamp{Unit: arrow.TimeUnit(p.aux), Value: arrow.Timestamp(int64(p.u))}
	case tagDecimal:
		return KeyDecimal{Num: p.decimal(), Scale: int32(int8(p.aux))}
	}
	return nil
}

// AppendKeyPart appends p to bld, a builder of the key column's type, typed and without
// allocating: integers to any integer builder of the column's width, uint64, floats,
// booleans, strings, binaries and JSON text to string and binary builders, timestamps, dates
// (date32 and date64) and decimals to theirs; a null part appends a null. String builders
// also take any other part as its text (fmt). Errors report a part that does not fit bld.
func AppendKeyPart(bld array.Builder, p KeyPart) error {
	if p.tag == tagNull {
		bld.AppendNull()
		return nil
	}
	ok := true
	switch b := bld.(type) {
	case *array.Int64Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(int64(p.u))
		}
	case *array.Int32Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(int32(int64(p.u)))
		}
	case *array.Int16Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(int16(int64(p.u)))
		}
	case *array.Int8Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(int8(int64(p.u)))
		}
	case *array.Uint32Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(uint32(p.u))
		}
	case *array.Uint16Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(uint16(p.u))
		}
	case *array.Uint8Builder:
		if ok = p.tag == tagInt; ok {
			b.Append(uint8(p.u))
		}
	case *array.Uint64Builder:
		if ok = p.tag == tagUint; ok {
			b.Append(p.u)
		}
	case *array.Float64Builder:
		if ok = p.tag == tagFloat; ok {
			b.Append(math.Float64frombits(p.u))
		}
	case *array.Float32Builder:
		if ok = p.tag == tagFloat; ok {
			b.Append(float32(math.Float64frombits(p.u)))
		}
	case *array.BooleanBuilder:
		if ok = p.tag == tagBool; ok {
			b.Append(p.u == 1)
		}
	case *array.StringBuilder:
		if p.isText() {
			b.BinaryBuilder.Append(p.b)
		} else {
			b.Append(fmt.Sprint(p.Value()))
		}
	case *array.LargeStringBuilder:
		if p.isText() {
			b.BinaryBuilder.Append(p.b)
		} else {
			b.Append(fmt.Sprint(p.Value()))
		}
	case *array.StringViewBuilder:
		if p.isText() {
			b.BinaryViewBuilder.Append(p.b)
		} else {
			b.Append(fmt.Sprint(p.Value()))
		}
	case *array.BinaryBuilder:
		if ok = p.isText(); ok {
			b.Append(p.b)
		}
	case *array.BinaryViewBuilder:
		if ok = p.isText(); ok {
			b.Append(p.b)
		}
	case *array.TimestampBuilder:
		if ok = p.tag == tagTimestamp; ok {
			b.Append(arrow.Timestamp(int64(p.u)))
		}
	case *array.Date32Builder:
		if ok = p.tag == tagDate; ok {
			b.Append(arrow.Date32(p.date()))
		}
	case *array.Date64Builder:
		if ok = p.tag == tagDate; ok {
			b.Append(arrow.Date64(int64(p.date()) * 86_400_000))
		}
	case *array.Decimal128Builder:
		if ok = p.tag == tagDecimal; ok {
			b.Append(p.decimal())
		}
	default:
		return fmt.Errorf("cannot append to %T", bld)
	}
	if !ok {
		v := p.Value()
		return fmt.Errorf("value %v (%T) does not fit %s", v, v, bld.Type())
	}
	return nil
}

// DecodeKey decodes an encoded key into one Go value per column: nil, int64, uint64,
// float64, bool, string, []byte, KeyTimestamp, KeyDate, KeyDecimal, or json.RawMessage for
// nested values. Every value prints readably with fmt. Errors wrap ErrBadKey.
func DecodeKey(b []byte) ([]any, error) {
	var out []any
	for len(b) > 0 {
		p, rest, err := NextKeyPart(b)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Value())
		b = rest
	}
	return out, nil
}

// KeyArrays decodes encoded keys (one per row) into typed Arrow columns, one per key part,
// named by names (key_<i> where names run short). A part's type comes from its first non-null
// value; a part whose values disagree in type becomes a string column of their text. The
// caller releases the arrays.
func KeyArrays(mem memory.Allocator, keys [][]byte, names []string) ([]arrow.Field, []arrow.Array, error) {
	// Pass 1: the width and each part's type.
	var types []arrow.DataType // nil while a part has only nulls
	var consistent []bool
	for i, k := range keys {
		for c := 0; len(k) > 0; c++ {
			p, rest, err := NextKeyPart(k)
			if err != nil {
				return nil, nil, fmt.Errorf("row %d: %w", i, err)
			}
			k = rest
			if c == len(types) {
				types, consistent = append(types, nil), append(consistent, true)
			}
			if p.IsNull() {
				continue
			}
			if t := keyType(p); types[c] == nil {
				types[c] = t
			} else if !arrow.TypeEqual(types[c], t) {
				consistent[c] = false
			}
		}
	}
	// Pass 2: append every part to its column's builder.
	width := len(types)
	fields := make([]arrow.Field, width)
	bs := make([]array.Builder, width)
	for c := range types {
		name := fmt.Sprintf("key_%d", c)
		if c < len(names) && names[c] != "" {
			name = names[c]
		}
		if !consistent[c] || types[c] == nil {
			types[c] = arrow.BinaryTypes.String
		}
		fields[c] = arrow.Field{Name: name, Type: types[c], Nullable: true}
		bs[c] = array.NewBuilder(mem, types[c])
		defer bs[c].Release()
	}
	for _, k := range keys {
		c := 0
		for ; len(k) > 0; c++ {
			p, rest, _ := NextKeyPart(k) // checked in pass 1
			k = rest
			switch b := bs[c].(type) {
			case *array.StringBuilder:
				if p.IsNull() {
					b.AppendNull()
				} else if raw, ok := p.Value().(json.RawMessage); ok {
					b.Append(string(raw)) // a nested value (struct, list, map): its JSON text
				} else {
					// the text of every part, as fmt prints its Value
					b.Append(fmt.Sprint(p.Value()))
				}
			default:
				if err := AppendKeyPart(b, p); err != nil {
					return nil, nil, err
				}
			}
		}
		for ; c < width; c++ {
			bs[c].AppendNull()
		}
	}
	arrs := make([]arrow.Array, width)
	for c, b := range bs {
		arrs[c] = b.NewArray()
	}
	return fields, arrs, nil
}

// keyType is the column type of a non-null part in KeyArrays.
func keyType(p KeyPart) arrow.DataType {
	switch p.tag {
	case tagInt:
		return arrow.PrimitiveTypes.Int64
	case tagUint:
		return arrow.PrimitiveTypes.Uint64
	case tagFloat:
		return arrow.PrimitiveTypes.Float64
	case tagBool:
		return arrow.FixedWidthTypes.Boolean
	case tagBinary:
		return arrow.BinaryTypes.Binary
	case tagTimestamp:
		return &arrow.TimestampType{Unit: arrow.TimeUnit(p.aux), TimeZone: "UTC"}
	case tagDate:
		return arrow.FixedWidthTypes.Date32
	case tagDecimal:
		return &arrow.Decimal128Type{Precision: 38, Scale: int32(int8(p.aux))}
	}
	return arrow.BinaryTypes.String
}
