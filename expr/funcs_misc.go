package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// greatest, least and repeat.

// maxRepeatBytes bounds repeat's result per value (Java arrays stop at 2 GiB as well).
const maxRepeatBytes = 1 << 30

func init() {
	for _, name := range []string{"greatest", "least"} {
		register(name, 2, -1, name+"(x, y, …)", "the "+name+" argument, NULLs skipped (NULL when all are); NaN is above every double; the arguments widen to one type, with no string promotion (as Spark)", false, func(c *checker, call *Call, args []node) (node, error) {
			t := TNull
			for i, a := range args {
				nt, ok := wider(t, a.Type())
				if !ok || hasMap(nt) {
					return nil, c.argErr(call, i, a.Type(), "of the type of the others ("+t.String()+")")
				}
				t = nt
			}
			if t.Kind == KNull {
				return nullConst(TNull), nil
			}
			ins := make([]node, len(args))
			for i, a := range args {
				ins[i] = coerce(a, t)
			}
			sign := 1
			if name == "least" {
				sign = -1
			}
			return &funcNode{fn: registry[name], t: t, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				choice := make([]int32, c.n)
				for i := range choice {
					best := 0
					for k := 1; k < len(in); k++ {
						if nullAt(in[k], i) {
							continue
						}
						if nullAt(in[best], i) || sign*compareAt(t, in[k], i, in[best], i) > 0 {
							best = k
						}
					}
					choice[i] = int32(best)
				}
				return gather(c, t, choice, in)
			}}, nil
		})
	}

	register("repeat", 2, 2, "repeat(str, n) → string", "str repeated n times ('' for n ≤ 0)", true, func(c *checker, call *Call, args []node) (node, error) {
		s, err := c.strArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		n, err := c.intArg(call, args, 1)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["repeat"], t: TString, args: []node{s, n}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
			ss, ns := in[0].(*array.String), i32s(in[1])
			out := newStrOut(c.n, len(ss.ValueBytes()))
			var buf []byte // one row's copies, reused
			for i := 0; i < c.n; i++ {
				if ss.IsNull(i) || in[1].IsNull(i) {
					out.appendNull()
					continue
				}
				v, k := ss.Value(i), int(max(ns[i], 0))
				if len(v)*k > maxRepeatBytes {
					if activeAt(active, i) {
						return nil, c.fail("INVALID_PARAMETER_VALUE", i, "repeat: %d copies of %d bytes exceed %d bytes", k, len(v), maxRepeatBytes)
					}
					out.appendNull()
					continue
				}
				buf = buf[:0]
				for range k {
					buf = append(buf, v...)
				}
				out.appendBytes(buf)
			}
			return out.array(), nil
		}}, nil
	})
}
