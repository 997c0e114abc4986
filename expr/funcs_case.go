package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
