package avrorow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
)

// The direct path decodes Avro binary (Avro 1.11 "Binary Encoding") straight into Arrow
// builders when the data's writer schema is the reader schema, without goavro's
// intermediate values: check walks a datum and reports any malformation (truncation, bad
// varints, out-of-range union or enum indexes, negative lengths) without touching the
// builders, then fill appends it, so a bad datum never leaves a builder half-appended. Map
// entries are appended in key order, as the goavro path does.

// maxItems bounds the items of one array or map block and the length of one bytes/string
// value against corrupt counts.
const maxItems = 1 << 30

var errShort = errors.New("unexpected end of data")

// errUTF8 rejects an Avro string that is not UTF-8 (the specification's strings are UTF-8;
// an Arrow string column must be), as --value-format string does.
var errUTF8 = errors.New("string is not valid UTF-8")

// checkLong refuses a timestamp-millis / local-timestamp-millis value whose microseconds (the
// column's unit) overflow int64.
func (n *Node) checkLong(v int64) error {
	if (n.Logical == "timestamp-millis" || n.Logical == "local-timestamp-millis") && (v > math.MaxInt64/1000 || v < math.MinInt64/1000) {
		return fmt.Errorf("%s %d ms overflows int64 microseconds", n.Logical, v)
	}
	return nil
}

// checkDecimal refuses an unscaled decimal value with more digits than the precision (it
// would not fit the decimal(p,s) column; above 38 or 76 digits it would not even fit 128 or
// 256 bits).
func (n *Node) checkDecimal(x *big.Int) error {
	if x.CmpAbs(n.limit) < 0 {
		return nil
	}
	s := new(big.Rat).SetFrac(x, pow10(n.Scale)).FloatString(int(n.Scale))
	if len(s) > 60 {
		s = s[:20] + "…(" + fmt.Sprint(len(s)) + " chars)"
	}
	return fmt.Errorf("value %s does not fit decimal(%d,%d)", s, n.Precision, n.Scale)
}

type rd struct {
	buf []byte
	pos int
}

func (r *rd) long() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.pos >= len(r.buf) {
			return 0, errShort
		}
		c := r.buf[r.pos]
		r.pos++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("varint longer than 10 bytes")
}

func (r *rd) mustLong() int64 {
	v, _ := r.long()
	return v
}

func (r *rd) take(n int64) ([]byte, error) {
	if n < 0 || n > maxItems {
		return nil, fmt.Errorf("bad length %d", n)
	}
	if int64(len(r.buf)-r.pos) < n {
		return nil, errShort
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *rd) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// blockCount reads an array or map block header: the item count (0 ends), skipping the byte
// size that follows a negative count.
func (r *rd) blockCount() (int64, error) {
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, fmt.Errorf("bad block count %d", n)
		}
		n = -n
		if _, err := r.long(); err != nil {
			return 0, err
		}
	}
	if n > maxItems {
		return 0, fmt.Errorf("bad block count %d", n)
	}
	return n, nil
}

// check validates one datum of schema n at r, advancing past it.
func (n *Node) check(r *rd) error {
	switch n.Type {
	case "null":
		return nil
	case "boolean":
		b, err := r.take(1)
		if err == nil && b[0] > 1 {
			err = fmt.Errorf("boolean byte %d", b[0])
		}
		return err
	case "int":
		v, err := r.long()
		if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
			err = fmt.Errorf("int %d out of range", v)
		}
		return err
	case "long":
		v, err := r.long()
		if err == nil {
			err = n.checkLong(v)
		}
		return err
	case "float":
		_, err := r.take(4)
		return err
	case "double":
		_, err := r.take(8)
		return err
	case "bytes", "string", "fixed":
		var v []byte
		var err error
		if n.Type == "fixed" {
			v, err = r.take(int64(n.Size))
		} else {
			v, err = r.bytes()
		}
		if err != nil {
			return err
		}
		if n.Type == "string" && !utf8.Valid(v) {
			return errUTF8
		}
		if n.limit != nil {
			return n.checkDecimal(twosComplement(v))
		}
		return nil
	case "enum":
		v, err := r.long()
		if err == nil && (v < 0 || v >= int64(len(n.Symbols))) {
			err = fmt.Errorf("enum %s index %d out of range", n.Name, v)
		}
		return err
	case "union":
		v, err := r.long()
		if err != nil {
			return err
		}
		if v < 0 || v >= int64(len(n.Branch)) {
			return fmt.Errorf("union index %d out of range", v)
		}
		if m := n.Branch[v]; m >= 0 {
			return n.Members[m].check(r)
		}
		return nil
	case "record":
		for _, f := range n.Fields {
			if err := f.Node.check(r); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case "array", "map":
		for {
			c, err := r.blockCount()
			if err != nil || c == 0 {
				return err
			}
			for ; c > 0; c-- {
				if n.Type == "map" {
					k, err := r.bytes()
					if err != nil {
						return err
					}
					if !utf8.Valid(k) {
						return fmt.Errorf("map key: %w", errUTF8)
					}
				}
				if err := n.Items.check(r); err != nil {
					return err
				}
			}
		}
	}
	return fmt.Errorf("unknown Avro type %q", n.Type)
}

// fill appends the datum at r (validated by check) to b.
func (n *Node) fill(r *rd, b array.Builder) {
	switch n.Type {
	case "null":
		b.AppendNull()
	case "boolean":
		b.(*array.BooleanBuilder).Append(r.buf[r.pos] == 1)
		r.pos++
	case "int", "long":
		fillInt(n, r.mustLong(), b)
	case "float":
		f := math.Float32frombits(binary.LittleEndian.Uint32(r.buf[r.pos:]))
		r.pos += 4
		b.(*array.Float32Builder).Append(f)
	case "double":
		f := math.Float64frombits(binary.LittleEndian.Uint64(r.buf[r.pos:]))
		r.pos += 8
		b.(*array.Float64Builder).Append(f)
	case "bytes", "string", "fixed":
		var v []byte
		if n.Type == "fixed" {
			v = r.buf[r.pos : r.pos+n.Size]
			r.pos += n.Size
		} else {
			v, _ = r.bytes()
		}
		fillBytes(n, v, b)
	case "enum":
		b.(*array.StringBuilder).Append(n.Symbols[r.mustLong()])
	case "union":
		m := n.Branch[r.mustLong()]
		switch {
		case m < 0:
			b.AppendNull()
		case len(n.Members) == 1:
			n.Members[0].fill(r, b)
		default:
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for j := range n.Members {
				if j == m {
					n.Members[j].fill(r, sb.FieldBuilder(j))
				} else {
					sb.FieldBuilder(j).AppendNull()
				}
			}
		}
	case "record":
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, f := range n.Fields {
			f.Node.fill(r, sb.FieldBuilder(i))
		}
	case "array":
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder()
		for c, _ := r.blockCount(); c > 0; c, _ = r.blockCount() {
			for ; c > 0; c-- {
				n.Items.fill(r, vb)
			}
		}
	case "map":
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		type entry struct {
			key []byte
			at  int
		}
		var es []entry
		for c, _ := r.blockCount(); c > 0; c, _ = r.blockCount() {
			for ; c > 0; c-- {
				k, _ := r.bytes()
				es = append(es, entry{k, r.pos})
				_ = n.Items.check(r) // skip the value; filled below in key order
			}
		}
		end := r.pos
		slices.SortStableFunc(es, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
		kb, ib := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder()
		for _, e := range es {
			kb.BinaryBuilder.Append(e.key)
			r.pos = e.at
			n.Items.fill(r, ib)
		}
		r.pos = end
	}
}

func fillInt(n *Node, v int64, b array.Builder) {
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	case *array.Date32Builder:
		b.Append(arrow.Date32(v))
	case *array.Time32Builder:
		b.Append(arrow.Time32(v))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v))
	case *array.TimestampBuilder:
		if n.Logical == "timestamp-millis" || n.Logical == "local-timestamp-millis" {
			v *= 1000
		}
		b.Append(arrow.Timestamp(v))
	}
}

func fillBytes(n *Node, v []byte, b array.Builder) {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		b.Append(v)
	case *array.StringBuilder:
		if n.Logical == "uuid" && n.Type == "fixed" && len(v) == 16 {
			b.Append(fmt.Sprintf("%x-%x-%x-%x-%x", v[0:4], v[4:6], v[6:8], v[8:10], v[10:16]))
		} else {
			b.BinaryBuilder.Append(v)
		}
	case *array.FixedSizeBinaryBuilder:
		b.Append(v)
	case *array.Decimal128Builder:
		b.Append(decimal128.FromBigInt(twosComplement(v)))
	case *array.Decimal256Builder:
		b.Append(decimal256.FromBigInt(twosComplement(v)))
	}
}

// twosComplement reads a big-endian two's-complement integer (Avro decimal).
func twosComplement(v []byte) *big.Int {
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}
