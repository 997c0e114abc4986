package codec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Key encoding (docs/protocol.md "Keys"): a key is the concatenation, per key column, of a
// one-byte tag and the value's bytes. Equal values encode equally whatever the integer width
// (int8…int64 all encode as tag int), null is a tag of its own, and an empty string differs
// from null. The encoding is self-describing, so state-dump can render keys without knowing
// the operator. Tags:
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
		unit := byte(a.DataType().(*arrow.TimestampType).Unit)
		return binary.BigEndian.AppendUint64(append(dst, tagTimestamp, unit), uint64(a.Value(r)))
	case *array.Date32:
		return appendU64(dst, tagDate, uint64(int64(a.Value(r))))
	case *array.Date64:
		return appendU64(dst, tagDate, uint64(int64(a.Value(r))/86_400_000))
	case *array.Decimal128:
		v := a.Value(r)
		dst = append(dst, tagDecimal, byte(a.DataType().(*arrow.Decimal128Type).Scale))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(dst, v.LowBits())
	case *array.Dictionary:
		return appendValue(dst, a.Dictionary(), a.GetValueIndex(r))
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

// Hash64 is the shard hash of an encoded key: 64-bit FNV-1a over its bytes. It is stable
// across runs, machines and versions (keyby routes row → shard = Hash64(key) mod N).
func Hash64(key []byte) uint64 {
	h := fnv.New64a()
	h.Write(key)
	return h.Sum64()
}

// ErrBadKey is returned by DecodeKey for bytes that are not a key encoding.
var ErrBadKey = errors.New("not an encoded key")

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

// DecodeKey decodes an encoded key into one Go value per column: nil, int64, uint64,
// float64, bool, string, []byte, KeyTimestamp, KeyDate, KeyDecimal, or json.RawMessage for
// nested values. Every value prints readably with fmt.
func DecodeKey(b []byte) ([]any, error) {
	var out []any
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		need := func(n int) error {
			if len(b) < n {
				return ErrBadKey
			}
			return nil
		}
		switch tag {
		case tagNull:
			out = append(out, nil)
		case tagInt, tagUint, tagFloat, tagDate:
			if err := need(8); err != nil {
				return nil, err
			}
			v := binary.BigEndian.Uint64(b)
			b = b[8:]
			switch tag {
			case tagInt:
				out = append(out, int64(v))
			case tagUint:
				out = append(out, v)
			case tagFloat:
				out = append(out, math.Float64frombits(v))
			default:
				out = append(out, KeyDate(int32(int64(v))))
			}
		case tagBool:
			if err := need(1); err != nil {
				return nil, err
			}
			out = append(out, b[0] == 1)
			b = b[1:]
		case tagString, tagBinary, tagJSON:
			n, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < n {
				return nil, ErrBadKey
			}
			v := b[k : k+int(n)]
			b = b[k+int(n):]
			switch tag {
			case tagString:
				out = append(out, string(v))
			case tagBinary:
				out = append(out, append([]byte(nil), v...))
			default:
				out = append(out, json.RawMessage(append([]byte(nil), v...)))
			}
		case tagTimestamp:
			if err := need(9); err != nil {
				return nil, err
			}
			unit := arrow.TimeUnit(b[0])
			v := arrow.Timestamp(int64(binary.BigEndian.Uint64(b[1:])))
			b = b[9:]
			out = append(out, KeyTimestamp{Unit: unit, Value: v})
		case tagDecimal:
			if err := need(17); err != nil {
				return nil, err
			}
			scale := int32(int8(b[0]))
			hi, lo := int64(binary.BigEndian.Uint64(b[1:])), binary.BigEndian.Uint64(b[9:])
			b = b[17:]
			out = append(out, KeyDecimal{Num: decimal128.New(hi, lo), Scale: scale})
		default:
			return nil, ErrBadKey
		}
	}
	return out, nil
}

// KeyArrays decodes encoded keys (one per row) into typed Arrow columns, one per key part,
// named by names (key_<i> where names run short). A part's type comes from its first non-null
// value; a part whose values disagree in type becomes a string column of their text. The
// caller releases the arrays.
func KeyArrays(mem memory.Allocator, keys [][]byte, names []string) ([]arrow.Field, []arrow.Array, error) {
	rows := make([][]any, len(keys))
	width := 0
	for i, k := range keys {
		v, err := DecodeKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("row %d: %w", i, err)
		}
		rows[i] = v
		width = max(width, len(v))
	}
	fields := make([]arrow.Field, width)
	arrs := make([]arrow.Array, width)
	for c := 0; c < width; c++ {
		name := fmt.Sprintf("key_%d", c)
		if c < len(names) && names[c] != "" {
			name = names[c]
		}
		var typ arrow.DataType = arrow.Null
		consistent := true
		for _, r := range rows {
			if c >= len(r) || r[c] == nil {
				continue
			}
			t := keyType(r[c])
			if typ == arrow.Null {
				typ = t
			} else if !arrow.TypeEqual(typ, t) {
				consistent = false
			}
		}
		if !consistent || typ == arrow.Null {
			typ = arrow.BinaryTypes.String
		}
		b := array.NewBuilder(mem, typ)
		for _, r := range rows {
			if c >= len(r) || r[c] == nil {
				b.AppendNull()
				continue
			}
			appendKeyPart(b, r[c], consistent)
		}
		fields[c] = arrow.Field{Name: name, Type: typ, Nullable: true}
		arrs[c] = b.NewArray()
		b.Release()
	}
	return fields, arrs, nil
}

func keyType(v any) arrow.DataType {
	switch v := v.(type) {
	case int64:
		return arrow.PrimitiveTypes.Int64
	case uint64:
		return arrow.PrimitiveTypes.Uint64
	case float64:
		return arrow.PrimitiveTypes.Float64
	case bool:
		return arrow.FixedWidthTypes.Boolean
	case []byte:
		return arrow.BinaryTypes.Binary
	case KeyTimestamp:
		return &arrow.TimestampType{Unit: v.Unit, TimeZone: "UTC"}
	case KeyDate:
		return arrow.FixedWidthTypes.Date32
	case KeyDecimal:
		return &arrow.Decimal128Type{Precision: 38, Scale: v.Scale}
	}
	return arrow.BinaryTypes.String
}

func appendKeyPart(b array.Builder, v any, typed bool) {
	if !typed {
		b.(*array.StringBuilder).Append(fmt.Sprint(v))
		return
	}
	switch v := v.(type) {
	case int64:
		b.(*array.Int64Builder).Append(v)
	case uint64:
		b.(*array.Uint64Builder).Append(v)
	case float64:
		b.(*array.Float64Builder).Append(v)
	case bool:
		b.(*array.BooleanBuilder).Append(v)
	case []byte:
		b.(*array.BinaryBuilder).Append(v)
	case KeyTimestamp:
		b.(*array.TimestampBuilder).Append(v.Value)
	case KeyDate:
		b.(*array.Date32Builder).Append(arrow.Date32(v))
	case KeyDecimal:
		b.(*array.Decimal128Builder).Append(v.Num)
	case string:
		b.(*array.StringBuilder).Append(v)
	default:
		b.(*array.StringBuilder).Append(fmt.Sprint(v))
	}
}
