package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"

	"github.com/streamkit/streamkit/codec"
)

// valueCodec (count_distinct's value sets) encodes non-null values of one Arrow type to bytes and decodes them back into a
// builder of the same type. Fixed-width types are their little-endian bytes (floats with -0
// and NaN normalised, so equal numbers give equal bytes); variable-width types are a uvarint
// length and the bytes.
type valueCodec struct {
	dt     arrow.DataType // value type (dictionaries unwrapped)
	width  int            // fixed width in bytes; 0 = variable
	append func(dst []byte, a arrow.Array, i int) []byte
	decode func(b []byte, bld array.Builder) ([]byte, error)
}

var errShortKey = fmt.Errorf("decode key: truncated bytes")

func newValueCodec(dt arrow.DataType) (*valueCodec, error) {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		inner, err := newValueCodec(d.ValueType)
		if err != nil {
			return nil, err
		}
		return &valueCodec{dt: inner.dt, width: inner.width, decode: inner.decode,
			append: func(dst []byte, a arrow.Array, i int) []byte {
				da := a.(*array.Dictionary)
				return inner.append(dst, da.Dictionary(), da.GetValueIndex(i))
			}}, nil
	}
	c := &valueCodec{dt: dt}
	switch dt.ID() {
	case arrow.BOOL:
		c.width = 1
		c.append = func(dst []byte, a arrow.Array, i int) []byte {
			if a.(*array.Boolean).Value(i) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}
	case arrow.FLOAT32:
		c.width = 4
		c.append = func(dst []byte, a arrow.Array, i int) []byte {
			v := a.(*array.Float32).Value(i)
			if v == 0 {
				v = 0
			} else if v != v {
				v = float32(math.NaN())
			}
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case arrow.FLOAT64:
		c.width = 8
		c.append = func(dst []byte, a arrow.Array, i int) []byte {
			v := a.(*array.Float64).Value(i)
			if v == 0 {
				v = 0
			} else if v != v {
				v = math.NaN()
			}
			return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		}
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION,
		arrow.DECIMAL128, arrow.FIXED_SIZE_BINARY, arrow.FLOAT16:
		w := dt.(arrow.FixedWidthDataType).BitWidth() / 8
		c.width = w
		c.append = func(dst []byte, a arrow.Array, i int) []byte {
			d := a.Data()
			raw := d.Buffers()[1].Bytes()
			j := (d.Offset() + i) * w
			return append(dst, raw[j:j+w]...)
		}
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW:
		c.append = func(dst []byte, a arrow.Array, i int) []byte {
			var b []byte
			switch x := a.(type) {
			case *array.String:
				b = unsafeBytes(x.Value(i))
			case *array.LargeString:
				b = unsafeBytes(x.Value(i))
			case *array.StringView:
				b = unsafeBytes(x.Value(i))
			case *array.Binary:
				b = x.Value(i)
			case *array.LargeBinary:
				b = x.Value(i)
			case *array.BinaryView:
				b = x.Value(i)
			}
			dst = binary.AppendUvarint(dst, uint64(len(b)))
			return append(dst, b...)
		}
	default:
		return nil, fmt.Errorf("%w: type %s is not supported here", ErrPath, dt)
	}
	c.decode = func(b []byte, bld array.Builder) ([]byte, error) {
		var v []byte
		if c.width > 0 {
			if len(b) < c.width {
				return nil, errShortKey
			}
			v, b = b[:c.width], b[c.width:]
		} else {
			n, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < n {
				return nil, errShortKey
			}
			v, b = b[k:k+int(n)], b[k+int(n):]
		}
		return b, appendRaw(bld, v)
	}
	return c, nil
}

// skip returns b after its first value (b holds whole values as append writes them).
func (c *valueCodec) skip(b []byte) []byte {
	if c.width > 0 {
		return b[c.width:]
	}
	n, k := binary.Uvarint(b)
	return b[k+int(n):]
}

// appendRaw appends one value, encoded as valueCodec does, to bld.
func appendRaw(bld array.Builder, v []byte) error {
	le := binary.LittleEndian
	switch b := bld.(type) {
	case *array.BooleanBuilder:
		b.Append(v[0] != 0)
	case *array.Int8Builder:
		b.Append(int8(v[0]))
	case *array.Uint8Builder:
		b.Append(v[0])
	case *array.Int16Builder:
		b.Append(int16(le.Uint16(v)))
	case *array.Uint16Builder:
		b.Append(le.Uint16(v))
	case *array.Int32Builder:
		b.Append(int32(le.Uint32(v)))
	case *array.Uint32Builder:
		b.Append(le.Uint32(v))
	case *array.Int64Builder:
		b.Append(int64(le.Uint64(v)))
	case *array.Uint64Builder:
		b.Append(le.Uint64(v))
	case *array.Float16Builder:
		b.Append(float16.FromBits(le.Uint16(v)))
	case *array.Float32Builder:
		b.Append(math.Float32frombits(le.Uint32(v)))
	case *array.Float64Builder:
		b.Append(math.Float64frombits(le.Uint64(v)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(le.Uint32(v)))
	case *array.Date64Builder:
		b.Append(arrow.Date64(le.Uint64(v)))
	case *array.Time32Builder:
		b.Append(arrow.Time32(le.Uint32(v)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(le.Uint64(v)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(le.Uint64(v)))
	case *array.DurationBuilder:
		b.Append(arrow.Duration(le.Uint64(v)))
	case *array.Decimal128Builder:
		b.Append(decimal128.New(int64(le.Uint64(v[8:])), le.Uint64(v)))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v)
	case *array.StringBuilder:
		b.Append(string(v))
	case *array.LargeStringBuilder:
		b.Append(string(v))
	case *array.StringViewBuilder:
		b.Append(string(v))
	case *array.BinaryBuilder:
		b.Append(v)
	case *array.BinaryViewBuilder:
		b.Append(v)
	default:
		return fmt.Errorf("decode key: cannot append to %T", bld)
	}
	return nil
}

// KeyCodec encodes the key columns of each row into one byte string, the identity of a key in
// window state, and decodes it back into Arrow columns for output rows. The bytes are
// codec's key encoding (docs/protocol.md "Keys", codec.KeyEncoder), the same as keyby, dedup
// and state-dump use: self-describing, integer widths unified, -0/+0 and NaNs normalised.
// Output key columns keep the input type for the types that encoding carries natively
// (integers, floats, booleans, strings, binaries and views, timestamps, dates, decimal128,
// dictionaries and run-end encodings of those); other types (nested, time of day, durations,
// …) are output as their JSON text.
type KeyCodec struct {
	enc    *codec.KeyEncoder // nil without key columns
	fields []arrow.Field
}

// NewKeyCodec resolves the key dot paths in s. No paths is valid: every row then has the
// empty key (one global group). Output fields are named after the leaf of each path
// ("region" for value.region), or the path with '.' replaced by '_' when two leaves clash.
// Errors wrap ErrPath.
func NewKeyCodec(s *arrow.Schema, paths []string) (*KeyCodec, error) {
	c := &KeyCodec{}
	if len(paths) == 0 {
		return c, nil
	}
	enc, err := codec.NewKeyEncoder(s, paths)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	c.enc = enc
	seen := map[string]int{}
	for _, p := range enc.Paths {
		seen[p.Leaf()]++
	}
	for _, p := range enc.Paths {
		name := p.Leaf()
		if seen[name] > 1 {
			name = strings.ReplaceAll(p.Name, ".", "_")
		}
		c.fields = append(c.fields, arrow.Field{Name: name, Type: keyOutputType(p.Field.Type), Nullable: true})
	}
	return c, nil
}

// keyOutputType is the output type of a key column of type dt: a dictionary's or run-end
// encoding's value type (the key encoding reads through both).
func keyOutputType(dt arrow.DataType) arrow.DataType {
	switch d := dt.(type) {
	case *arrow.DictionaryType:
		return keyOutputType(d.ValueType)
	case *arrow.RunEndEncodedType:
		return keyOutputType(d.Encoded())
	}
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DECIMAL128:
		return dt
	}
	return arrow.BinaryTypes.String
}

// Fields returns the output fields of the key columns, in key order (all nullable).
func (c *KeyCodec) Fields() []arrow.Field { return c.fields }

// Paths returns the key dot paths.
func (c *KeyCodec) Paths() []string {
	if c.enc == nil {
		return nil
	}
	return c.enc.Names()
}

// EncodedKeys holds the encoded keys of a batch: key i is Data[Offsets[i]:Offsets[i+1]].
// Reuse one value across batches to avoid allocation.
type EncodedKeys struct {
	Data    []byte  // all keys, concatenated
	Offsets []int32 // Len()+1 offsets into Data
}

// Len returns the number of keys.
func (k *EncodedKeys) Len() int { return max(len(k.Offsets)-1, 0) }

// Key returns key i; the bytes alias k.Data.
func (k *EncodedKeys) Key(i int) []byte { return k.Data[k.Offsets[i]:k.Offsets[i+1]] }

// Encode replaces dst's contents with the keys of every row of rec.
func (c *KeyCodec) Encode(rec arrow.RecordBatch, dst *EncodedKeys) {
	n := int(rec.NumRows())
	dst.Data = dst.Data[:0]
	dst.Offsets = append(dst.Offsets[:0], 0)
	if c.enc == nil {
		for i := 0; i < n; i++ {
			dst.Offsets = append(dst.Offsets, 0)
		}
		return
	}
	cols := c.enc.Columns(rec)
	for i := 0; i < n; i++ {
		dst.Data = codec.AppendRow(dst.Data, cols, i)
		dst.Offsets = append(dst.Offsets, int32(len(dst.Data)))
	}
}

// Decode appends the values of one encoded key to bs (one builder per key field, of the
// types of Fields()). It parses codec's key encoding directly into the builders
// (codec.NextKeyPart, codec.AppendKeyPart), without allocating. Errors report bytes that are
// not a key of this codec.
func (c *KeyCodec) Decode(key []byte, bs []array.Builder) error {
	for j := range c.fields {
		if len(key) == 0 {
			return fmt.Errorf("decode key: %d parts, want %d", j, len(c.fields))
		}
		p, rest, err := codec.NextKeyPart(key)
		if err != nil {
			return fmt.Errorf("decode key: %w", err)
		}
		key = rest
		if err := codec.AppendKeyPart(bs[j], p); err != nil {
			return fmt.Errorf("decode key column %q: %w", c.fields[j].Name, err)
		}
	}
	if len(key) != 0 {
		return fmt.Errorf("decode key: %d trailing bytes", len(key))
	}
	return nil
}
