package expr

import (
	"encoding/binary"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// caseMap registers lower/upper and their aliases: stringMap's semantics, but ASCII text is
// mapped byte by byte straight into the output column, without a Go string per row (the
// select benchmark's lower(s) made one allocation per row); a value with a non-ASCII byte
// goes through strings.ToLower/ToUpper (Unicode's case mapping, as asciiLower does).
func caseMap(name, doc string, upper bool) {
	lo, hi, full := byte('A'), byte('Z'), strings.ToLower
	if upper {
		lo, hi, full = 'a', 'z', strings.ToUpper
	}
	register(name, 1, 1, name+"(str) → string", doc, false, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.strArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry[name], t: TString, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			s := in[0].(*array.String)
			if data := s.ValueBytes(); isASCII(data) {
				return mapASCII(s, data, lo, hi), nil
			}
			out := newStrOut(c.n, len(s.ValueBytes()))
			for i := 0; i < c.n; i++ {
				if s.IsNull(i) {
					out.appendNull()
					continue
				}
				v := s.Value(i)
				at, ascii := len(out.data), true
				for j := 0; j < len(v); j++ {
					b := v[j]
					if b >= 0x80 {
						ascii = false
						break
					}
					if b >= lo && b <= hi {
						b ^= 0x20
					}
					out.data = append(out.data, b)
				}
				if !ascii {
					out.data = out.data[:at]
					out.append(full(v))
					continue
				}
				out.offs = append(out.offs, int32(len(out.data)))
			}
			return out.array(), nil
		}}, nil
	})
}

// isASCII reports whether b holds only bytes below 0x80, 8 bytes at a time.
func isASCII(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= 0x80 {
			return false
		}
	}
	return true
}

// mapASCII is caseMap over a column whose bytes are all ASCII: the value bytes are copied
// and mapped in one pass (the letters lo..hi flip case), the offsets rebased and the
// validity copied, with no per-row work.
func mapASCII(s *array.String, data []byte, lo, hi byte) arrow.Array {
	n := s.Len()
	out := newStrOut(n, len(data))
	out.data = out.data[:len(data)]
	for i, b := range data {
		if b >= lo && b <= hi {
			b ^= 0x20
		}
		out.data[i] = b
	}
	offs := s.ValueOffsets()
	out.offs = out.offs[:n+1]
	for i, v := range offs {
		out.offs[i] = v - offs[0]
	}
	if s.NullN() > 0 {
		out.valid = make([]byte, bitutil.BytesForBits(int64(n)))
		bitutil.CopyBitmap(s.NullBitmapBytes(), s.Data().Offset(), n, out.valid, 0)
		out.nulls = s.NullN()
	}
	return out.array()
}
