package expr

import (
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

func arrowRecord(s *arrow.Schema, cols []arrow.Array, n int64) arrow.RecordBatch {
	return array.NewRecordBatch(s, cols, n)
}

// colNode reads a column, or a struct field through a dot path (a null struct makes its
// fields null), converting narrower Arrow types to the evaluated one.
type colNode struct {
	path []int
	t    Type
	name string
	// keepFloat32 leaves a float32 column as it is instead of reading it as double: the hash
	// functions hash a float's 4 bytes, as Spark does.
	keepFloat32 bool
}

func (n *colNode) Type() Type { return n.t }
func (n *colNode) eval(c *evalCtx, _ []bool) (arrow.Array, error) {
	a, err := n.raw(c.rec)
	if err != nil {
		return nil, err
	}
	if want := n.t.Arrow(); !arrow.TypeEqual(a.DataType(), want) {
		if n.keepFloat32 && a.DataType().ID() == arrow.FLOAT32 {
			return a, nil
		}
		if a.DataType().ID() == arrow.INTERVAL_MONTHS { // int32 months either way
			d := array.NewData(want, a.Len(), a.Data().Buffers(), nil, a.NullN(), a.Data().Offset())
			a.Release()
			defer d.Release()
			return array.MakeFromData(d), nil
		}
		if n.t.nested() {
			defer a.Release()
			return conform(c.ctx, c.mem, a, n.t)
		}
		out, err := compute.CastArray(c.ctx, a, compute.SafeCastOptions(want))
		a.Release()
		return out, err
	}
	return a, nil
}

// withParentNulls returns field f of struct st with st's nulls added to its own.
func withParentNulls(st *array.Struct, f arrow.Array) arrow.Array {
	n := f.Len()
	valid := make([]byte, bitutil.BytesForBits(int64(n)))
	nulls := 0
	for i := 0; i < n; i++ {
		if st.IsValid(i) && f.IsValid(i) {
			bitutil.SetBit(valid, i)
		} else {
			nulls++
		}
	}
	d := f.Data()
	bufs := append([]*memory.Buffer{memory.NewBufferBytes(valid)}, d.Buffers()[1:]...)
	// the new bitmap starts at bit 0 while the value buffers keep f's offset: re-slice by
	// copying the bitmap at f's offset instead
	if d.Offset() != 0 {
		shifted := make([]byte, bitutil.BytesForBits(int64(n+d.Offset())))
		for i := 0; i < n; i++ {
			if bitutil.BitIsSet(valid, i) {
				bitutil.SetBit(shifted, i+d.Offset())
			}
		}
		bufs[0] = memory.NewBufferBytes(shifted)
	}
	nd := array.NewData(d.DataType(), n, bufs, d.Children(), nulls, d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// notNode is NOT x (null stays null), with the invert kernel.
type notNode struct{ x node }

func (n *notNode) Type() Type       { return TBool }
func (n *notNode) children() []node { return []node{n.x} }
func (n *notNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	d, err := c.datum(n.x, active)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return c.call("not", nil, d)
}

// logicNode is AND / OR with three-valued logic (the Kleene kernels). The right side only
// counts errors on rows the left side does not decide (Spark short-circuits).
type logicNode struct {
	and  bool
	l, r node
}

func (n *logicNode) Type() Type       { return TBool }
func (n *logicNode) children() []node { return []node{n.l, n.r} }
func (n *logicNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	l, err := c.arr(n.l, active)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	ra := active
	if mayFail(n.r) {
		lb := l.(*array.Boolean)
		ra = make([]bool, c.n)
		for i := range ra {
			decided := lb.IsValid(i) && lb.Value(i) != n.and
			ra[i] = activeAt(active, i) && !decided
		}
	}
	r, err := c.datum(n.r, ra)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	ld := compute.NewDatum(l)
	defer ld.Release()
	fn := "or_kleene"
	if n.and {
		fn = "and_kleene"
	}
	return c.call(fn, nil, ld, r)
}

// mayFail reports whether evaluating n can raise a runtime error (so its rows matter).
func mayFail(n node) bool {
	switch n := n.(type) {
	case *constNode, *colNode:
		return false
	case *castNode:
		if n.try || !castCanFail(n.x.Type(), n.to) {
			return mayFail(n.x)
		}
		return true
	case *arithNode:
		if !n.try && !(n.t.Kind == KDouble && n.op != "/" && n.op != "%") {
			return true
		}
	case *negNode:
		if n.x.Type().Kind != KDouble {
			return true
		}
	case *funcNode:
		if n.fn.mayFail {
			return true
		}
	case *likeNode:
		if n.regex {
			return true
		}
	case interface{ canFail() bool }:
		if n.canFail() {
			return true
		}
	}
	if p, ok := n.(parent); ok {
		for _, ch := range p.children() {
			if mayFail(ch) {
				return true
			}
		}
	}
	return false
}

// isNullNode is x IS [NOT] NULL.
type isNullNode struct {
	x   node
	not bool
}

func (n *isNullNode) Type() Type       { return TBool }
func (n *isNullNode) children() []node { return []node{n.x} }
func (n *isNullNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	if n.x.Type().Kind == KNull { // the kernels count no nulls in an Arrow null array
		return scalar.MakeArrayFromScalar(scalar.NewBooleanScalar(!n.not), c.n, c.mem)
	}
	if n.x.Type().Kind == KDecimal {
		return n.evalValidity(c, active)
	}
	d, err := c.datum(n.x, active)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	fn := "is_null"
	if n.not {
		fn = "is_not_null"
	}
	return c.call(fn, nil, d)
}

// evalValidity answers IS [NOT] NULL from the operand's validity bitmap: arrow-go's is_null
// kernel dispatches decimal arguments through its binary decimal cast and panics (index out
// of range) on the single argument.
func (n *isNullNode) evalValidity(c *evalCtx, active []bool) (arrow.Array, error) {
	a, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	buf := memory.NewResizableBuffer(c.mem)
	buf.Resize(int(bitutil.BytesForBits(int64(c.n))))
	bits := buf.Bytes()
	d := a.Data()
	switch {
	case a.NullN() == 0 || d.Buffers()[0] == nil:
		v := byte(0)
		if n.not {
			v = 0xFF
		}
		for i := range bits {
			bits[i] = v
		}
	case n.not:
		bitutil.CopyBitmap(d.Buffers()[0].Bytes(), d.Offset(), c.n, bits, 0)
	default:
		bitutil.InvertBitmap(d.Buffers()[0].Bytes(), d.Offset(), c.n, bits, 0)
	}
	out := array.NewBoolean(c.n, buf, nil, 0)
	buf.Release()
	return out, nil
}

// cmpNode compares two operands of one type. Doubles compare as Spark does (NaN equals NaN
// and is greater than every other value) in a hand loop; the rest use the Arrow kernels.
type cmpNode struct {
	op   string
	l, r node
}

var cmpKernel = map[string]string{"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}

func (n *cmpNode) Type() Type       { return TBool }
func (n *cmpNode) children() []node { return []node{n.l, n.r} }
func (n *cmpNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	if n.l.Type().nested() {
		return n.evalNested(c, active)
	}
	if k := n.l.Type().Kind; k == KDouble || n.op == "<=>" || k == KNull || k == KBool && n.op != "=" && n.op != "!=" {
		return n.evalLoop(c, active)
	}
	l, err := c.datum(n.l, active)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	r, err := c.datum(n.r, active)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return c.call(cmpKernel[n.op], nil, l, r)
}

// evalLoop compares row by row through an ordering function: doubles with NaN ordering, and
// <=> (null-safe equality) over any type.
func (n *cmpNode) evalLoop(c *evalCtx, active []bool) (arrow.Array, error) {
	l, r, err := c.arr2(n.l, n.r, active)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	defer r.Release()
	out := newBoolOut(c.n)
	if n.l.Type().Kind == KDouble {
		lv, rv := f64s(l), f64s(r)
		nulls := l.NullN() > 0 || r.NullN() > 0
		for i := 0; i < c.n; i++ {
			if nulls {
				ln, rn := l.IsNull(i), r.IsNull(i)
				if ln || rn {
					if n.op == "<=>" {
						out.set(i, ln && rn)
					} else {
						out.setNull(i)
					}
					continue
				}
			}
			out.set(i, cmpResult(n.op, CompareDouble(lv[i], rv[i])))
		}
		return out.array(), nil
	}
	if n.l.Type().Kind == KBool && n.op != "<=>" { // false < true, as in Spark
		lb, rb := l.(*array.Boolean), r.(*array.Boolean)
		for i := 0; i < c.n; i++ {
			if l.IsNull(i) || r.IsNull(i) {
				out.setNull(i)
				continue
			}
			x, y := 0, 0
			if lb.Value(i) {
				x = 1
			}
			if rb.Value(i) {
				y = 1
			}
			out.set(i, cmpResult(n.op, x-y))
		}
		return out.array(), nil
	}
	// <=> over other types: equality from the kernel, nulls resolved here
	eq, err := c.call("equal", nil, compute.NewDatum(l), compute.NewDatum(r))
	if err != nil {
		return nil, err
	}
	defer eq.Release()
	eb := eq.(*array.Boolean)
	for i := 0; i < c.n; i++ {
		ln, rn := l.IsNull(i), r.IsNull(i)
		if ln || rn {
			out.set(i, ln && rn)
		} else {
			out.set(i, eb.Value(i))
		}
	}
	return out.array(), nil
}

// CompareDouble orders doubles as Spark does (-1, 0 or 1): NaN = NaN, NaN above +Inf,
// -0.0 = 0.0 (Spark SQL reference, "NaN Semantics").
func CompareDouble(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpResult(op string, c int) bool {
	switch op {
	case "=", "<=>":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// negNode is unary minus (ANSI: -MIN_VALUE overflows).
type negNode struct{ x node }

func (n *negNode) Type() Type       { return n.x.Type() }
func (n *negNode) children() []node { return []node{n.x} }
func (n *negNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	t := n.x.Type()
	if t.Kind == KDecimal {
		x, err := c.arr(n.x, active)
		if err != nil {
			return nil, err
		}
		defer x.Release()
		xs := decs(x)
		out := newOut[decimal128.Num](c.n)
		for i := range xs {
			if isNull(x, i) {
				out.setNull(i)
				continue
			}
			out.vals[i] = xs[i].Negate()
		}
		return out.array(t), nil
	}
	x, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := c.call("negate", nil, compute.NewDatum(x))
	if err == nil {
		return out, nil
	}
	for i := 0; i < c.n; i++ { // the kernel failed: find the row
		if isNull(x, i) || !activeAt(active, i) {
			continue
		}
		if (t.Kind == KInt || t.Kind == KYearMonth) && i32s(x)[i] == math.MinInt32 || t.Kind == KBigInt && i64s(x)[i] == math.MinInt64 {
			return nil, c.fail("ARITHMETIC_OVERFLOW", i, "%s overflow in unary minus", t)
		}
	}
	return c.call("negate_unchecked", nil, compute.NewDatum(x))
}

// arithNode is + - * / % div over operands already cast to the operation's input types; t
// is the result type. Integral + - * run the checked Arrow kernels and, when one reports an
// overflow, a loop finds the row (or, under try_ or outside the active rows, nulls it).
type arithNode struct {
	op   string
	t    Type
	l, r node
	try  bool
}

func (n *arithNode) Type() Type       { return n.t }
func (n *arithNode) children() []node { return []node{n.l, n.r} }

// arithKernel names the Arrow kernels of double + - *; integral operations run the checked
// loops of intLoop, which name the failing row.
var arithKernel = map[string]string{"+": "add", "-": "sub", "*": "multiply"}

func (n *arithNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	lt := n.l.Type()
	if kern, ok := arithKernel[n.op]; ok && lt.Kind == KDouble {
		l, err := c.datum(n.l, active)
		if err != nil {
			return nil, err
		}
		defer l.Release()
		r, err := c.datum(n.r, active)
		if err != nil {
			return nil, err
		}
		defer r.Release()
		return c.call(kern, nil, l, r)
	}
	l, err := c.arr(n.l, active)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	r, err := c.arr(n.r, rightActive(c, l, n.r, active))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	switch {
	case n.t.Kind == KTimestamp || n.t.Kind == KInterval:
		return intLoop(c, n, active, i64s(l), i64s(r), l, r, math.MinInt64, math.MaxInt64)
	case lt.Kind == KInt || lt.Kind == KYearMonth:
		return intLoop(c, n, active, i32s(l), i32s(r), l, r, math.MinInt32, math.MaxInt32)
	case lt.Kind == KBigInt:
		return intLoop(c, n, active, i64s(l), i64s(r), l, r, math.MinInt64, math.MaxInt64)
	case lt.Kind == KDouble:
		return n.floatLoop(c, active, l, r)
	}
	return n.decimalLoop(c, active, l, r)
}

// rightActive is the rows whose errors count on the right operand: Spark skips evaluating
// it where the left one is NULL.
func rightActive(c *evalCtx, l arrow.Array, r node, active []bool) []bool {
	if l.NullN() == 0 || !mayFail(r) {
		return active
	}
	out := make([]bool, c.n)
	for i := range out {
		out[i] = activeAt(active, i) && l.IsValid(i)
	}
	return out
}

// rowFail raises err's class at row i, or reports that the row becomes null (try_, or a row
// whose errors do not count).
func (n *arithNode) rowFail(c *evalCtx, active []bool, i int, class, format string, args ...any) error {
	if n.try || !activeAt(active, i) {
		return nil
	}
	return c.fail(class, i, format, args...)
}

func intLoop[T int32 | int64](c *evalCtx, n *arithNode, active []bool, lv, rv []T, l, r arrow.Array, lo, hi int64) (arrow.Array, error) {
	out := newOut[T](c.n)
	nulls := l.NullN() > 0 || r.NullN() > 0
	for i := range out.vals {
		if nulls && (l.IsNull(i) || r.IsNull(i)) {
			out.setNull(i)
			continue
		}
		a, b := lv[i], rv[i]
		var v int64
		bad := ""
		switch n.op {
		case "+":
			v = int64(a) + int64(b)
			if lo == math.MinInt64 && ((b > 0 && int64(a) > math.MaxInt64-int64(b)) || (b < 0 && int64(a) < math.MinInt64-int64(b))) {
				bad = "overflow"
			}
		case "-":
			v = int64(a) - int64(b)
			if lo == math.MinInt64 && ((b < 0 && int64(a) > math.MaxInt64+int64(b)) || (b > 0 && int64(a) < math.MinInt64+int64(b))) {
				bad = "overflow"
			}
		case "*":
			if lo == math.MinInt64 {
				hiBits, loBits := mul64(int64(a), int64(b))
				v = loBits
				if !hiBits {
					bad = "overflow"
				}
			} else {
				v = int64(a) * int64(b)
			}
		case "%":
			if b == 0 {
				bad = "zero"
			} else if b == -1 {
				v = 0
			} else {
				v = int64(a % b)
			}
		case "DIV":
			if b == 0 {
				bad = "zero"
			} else if int64(a) == lo && b == -1 {
				bad = "overflow"
			} else {
				v = int64(a / b)
			}
		}
		if bad == "" && (v < lo || v > hi) {
			bad = "overflow"
		}
		if bad != "" {
			var err error
			if bad == "zero" {
				err = n.rowFail(c, active, i, zeroClass(n.op), "division by zero in %s", opName(n.op))
			} else {
				err = n.rowFail(c, active, i, "ARITHMETIC_OVERFLOW", "%s overflow in %s", n.t, opName(n.op))
			}
			if err != nil {
				return nil, err
			}
			out.setNull(i)
			continue
		}
		out.vals[i] = T(v)
	}
	return out.array(n.t), nil
}

// mul64 multiplies with an overflow check: ok is false when a*b does not fit in an int64.
func mul64(a, b int64) (ok bool, v int64) {
	if a == 0 || b == 0 {
		return true, 0
	}
	v = a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || v/b != a {
		return false, v
	}
	return true, v
}

func (n *arithNode) floatLoop(c *evalCtx, active []bool, l, r arrow.Array) (arrow.Array, error) {
	lv, rv := f64s(l), f64s(r)
	out := newOut[float64](c.n)
	nulls := l.NullN() > 0 || r.NullN() > 0
	for i := range out.vals {
		if nulls && (l.IsNull(i) || r.IsNull(i)) {
			out.setNull(i)
			continue
		}
		if rv[i] == 0 { // Spark's / and % fail on a zero divisor, doubles included
			if err := n.rowFail(c, active, i, zeroClass(n.op), "division by zero in %s", opName(n.op)); err != nil {
				return nil, err
			}
			out.setNull(i)
			continue
		}
		if n.op == "/" {
			out.vals[i] = lv[i] / rv[i]
		} else {
			out.vals[i] = math.Mod(lv[i], rv[i])
		}
	}
	return out.array(n.t), nil
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// roundHalfUp divides x by 10^k rounding half away from zero (Java's HALF_UP).
func roundHalfUp(x *big.Int, k int) *big.Int {
	if k <= 0 {
		return new(big.Int).Mul(x, pow10(-k))
	}
	d := pow10(k)
	q, m := new(big.Int).QuoRem(x, d, new(big.Int))
	m.Abs(m).Mul(m, big.NewInt(2))
	if m.Cmp(d) >= 0 {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// fitsPrecision reports whether |x| < 10^p.
func fitsPrecision(x *big.Int, p int) bool {
	return new(big.Int).Abs(x).Cmp(pow10(p)) < 0
}

// decimalLoop computes decimal arithmetic exactly (math/big), rounds HALF_UP to the result
// scale and fails with NUMERIC_VALUE_OUT_OF_RANGE when the result exceeds its precision.
func (n *arithNode) decimalLoop(c *evalCtx, active []bool, l, r arrow.Array) (arrow.Array, error) {
	lt, rt := n.l.Type(), n.r.Type()
	lv, rv := decs(l), decs(r)
	out := newOut[decimal128.Num](c.n)
	for i := range out.vals {
		if isNull(l, i) || isNull(r, i) {
			out.setNull(i)
			continue
		}
		a, b := lv[i].BigInt(), rv[i].BigInt()
		var v *big.Int
		switch n.op {
		case "+", "-":
			s := max(lt.S, rt.S)
			a.Mul(a, pow10(s-lt.S))
			b.Mul(b, pow10(s-rt.S))
			if n.op == "+" {
				v = a.Add(a, b)
			} else {
				v = a.Sub(a, b)
			}
			v = roundHalfUp(v, s-n.t.S)
		case "*":
			v = roundHalfUp(a.Mul(a, b), lt.S+rt.S-n.t.S)
		case "/", "%":
			if b.Sign() == 0 {
				if err := n.rowFail(c, active, i, zeroClass(n.op), "division by zero in %s", opName(n.op)); err != nil {
					return nil, err
				}
				out.setNull(i)
				continue
			}
			if n.op == "/" {
				// a/10^s1 ÷ b/10^s2 at scale t.S+1, then HALF_UP to t.S
				num := a.Mul(a, pow10(n.t.S+1-lt.S+rt.S))
				q := num.Quo(num, b)
				v = roundHalfUp(q, 1)
			} else {
				s := max(lt.S, rt.S)
				a.Mul(a, pow10(s-lt.S))
				b.Mul(b, pow10(s-rt.S))
				v = a.Rem(a, b)
				v = roundHalfUp(v, s-n.t.S)
			}
		}
		if !fitsPrecision(v, n.t.P) {
			if err := n.rowFail(c, active, i, "NUMERIC_VALUE_OUT_OF_RANGE", "%s does not fit in %s (in %s)", decString(v, n.t.S), n.t, opName(n.op)); err != nil {
				return nil, err
			}
			out.setNull(i)
			continue
		}
		out.vals[i] = decimal128.FromBigInt(v)
	}
	return out.array(n.t), nil
}

// caseNode is CASE WHEN … THEN … ELSE … END (also COALESCE, IF, NULLIF): each condition is
// evaluated for the rows no earlier one took, each branch only for its own rows, and the
// result gathered row by row from the branch arrays.
type caseNode struct {
	t     Type
	conds []node
	vals  []node
	els   node
}

func (n *caseNode) Type() Type { return n.t }
func (n *caseNode) children() []node {
	return append(append(append([]node{}, n.conds...), n.vals...), n.els)
}
func (n *caseNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	choice := make([]int32, c.n) // branch index; len(vals) = ELSE
	open := make([]bool, c.n)
	for i := range open {
		open[i] = activeAt(active, i)
		choice[i] = int32(len(n.vals))
	}
	for k, cond := range n.conds {
		ca, err := c.arr(cond, open)
		if err != nil {
			return nil, err
		}
		cb := ca.(*array.Boolean)
		for i := range open {
			if open[i] && cb.IsValid(i) && cb.Value(i) {
				choice[i] = int32(k)
				open[i] = false
			}
		}
		ca.Release()
	}
	branches := append(append([]node{}, n.vals...), n.els)
	arrs := make([]arrow.Array, len(branches))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for k, b := range branches {
		mine := make([]bool, c.n)
		any := false
		for i := range mine {
			mine[i] = choice[i] == int32(k) && activeAt(active, i)
			any = any || mine[i]
		}
		if !any && mayFail(b) {
			arrs[k] = nil
			continue
		}
		a, err := c.arr(b, mine)
		if err != nil {
			return nil, err
		}
		arrs[k] = a
	}
	return gather(c, n.t, choice, arrs)
}

// gather builds a column of type t whose row i is row i of arrs[choice[i]] (a nil array is
// a branch no row chose).
func gather(c *evalCtx, t Type, choice []int32, arrs []arrow.Array) (arrow.Array, error) {
	nullAt := func(i int) bool { a := arrs[choice[i]]; return a == nil || a.IsNull(i) }
	switch t.Kind {
	case KNull:
		return array.MakeArrayOfNull(c.mem, arrow.Null, c.n), nil
	case KBool:
		out := newBoolOut(c.n)
		for i, k := range choice {
			if nullAt(i) {
				out.setNull(i)
			} else {
				out.set(i, arrs[k].(*array.Boolean).Value(i))
			}
		}
		return out.array(), nil
	case KInt, KDate, KYearMonth:
		return gatherFixed(t, choice, arrs, nullAt, i32s), nil
	case KBigInt, KTimestamp, KInterval:
		return gatherFixed(t, choice, arrs, nullAt, i64s), nil
	case KDouble:
		return gatherFixed(t, choice, arrs, nullAt, f64s), nil
	case KDecimal:
		return gatherFixed(t, choice, arrs, nullAt, decs), nil
	case KBinary:
		out := newStrOut(c.n, 0)
		for i, k := range choice {
			if nullAt(i) {
				out.appendNull()
			} else {
				out.appendBytes(arrs[k].(*array.Binary).Value(i))
			}
		}
		return out.binArray(), nil
	case KString:
		out := newStrOut(c.n, 0)
		for i, k := range choice {
			if nullAt(i) {
				out.appendNull()
			} else {
				out.append(arrs[k].(*array.String).Value(i))
			}
		}
		return out.array(), nil
	case KArray, KStruct, KMap:
		return gatherNested(c, t, choice, arrs)
	}
	return nil, c.fail("INTERNAL", 0, "no gather for %s", t)
}

func gatherFixed[T any](t Type, choice []int32, arrs []arrow.Array, nullAt func(int) bool, vals func(arrow.Array) []T) arrow.Array {
	out := newOut[T](len(choice))
	vs := make([][]T, len(arrs))
	for k, a := range arrs {
		if a != nil {
			vs[k] = vals(a)
		}
	}
	for i, k := range choice {
		if nullAt(i) {
			out.setNull(i)
		} else {
			out.vals[i] = vs[k][i]
		}
	}
	return out.array(t)
}

// zeroClass is Spark's error class of a zero divisor: REMAINDER_BY_ZERO for %, else
// DIVIDE_BY_ZERO.
func zeroClass(op string) string {
	if op == "%" {
		return "REMAINDER_BY_ZERO"
	}
	return "DIVIDE_BY_ZERO"
}
