package expr

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// checker turns a parsed Node into a typed node tree against an input schema, inserting the
// implicit casts of Spark's ANSI coercion and folding constant subtrees.
type checker struct {
	src    string
	schema *arrow.Schema
}

func (c *checker) errf(at int, format string, args ...any) error {
	return &TypeError{Src: c.src, At: at, Msg: fmt.Sprintf(format, args...)}
}

// text is the source text of a node (best effort: from its position to the end of the
// shortest enclosing token run), used in messages.
func (c *checker) describe(n Node, t Type) string {
	if id, ok := n.(*Ident); ok {
		return fmt.Sprintf("column %s (%s)", strings.Join(id.Path, "."), t)
	}
	return fmt.Sprintf("an argument of type %s", t)
}

func (c *checker) check(n Node) (node, error) {
	out, err := c.check1(n)
	if err != nil {
		return nil, err
	}
	return fold(out), nil
}

func (c *checker) check1(n Node) (node, error) {
	switch n := n.(type) {
	case *Lit:
		return c.literal(n)
	case *Ident:
		return c.column(n)
	case *Unary:
		x, err := c.check(n.X)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case "NOT":
			x, err = c.toBool(n.X, x, "NOT")
			if err != nil {
				return nil, err
			}
			return &notNode{x: x}, nil
		case "+":
			if !x.Type().numeric() && x.Type().Kind != KInterval && x.Type().Kind != KYearMonth {
				return nil, c.errf(n.At, "unary + needs a number, but %s", c.describe(n.X, x.Type()))
			}
			return x, nil
		default:
			if x.Type().Kind == KString {
				x = &castNode{x: x, to: TDouble}
			}
			if !x.Type().numeric() && x.Type().Kind != KInterval && x.Type().Kind != KYearMonth && x.Type().Kind != KNull {
				return nil, c.errf(n.At, "unary - needs a number, but %s", c.describe(n.X, x.Type()))
			}
			if x.Type().Kind == KNull {
				return nullConst(TInt), nil
			}
			return &negNode{x: x}, nil
		}
	case *Binary:
		return c.binary(n)
	case *IsNull:
		x, err := c.check(n.X)
		if err != nil {
			return nil, err
		}
		return &isNullNode{x: x, not: n.Not}, nil
	case *Between:
		// Spark rewrites BETWEEN to x >= lo AND x <= hi
		ge := &Binary{Op: ">=", L: n.X, R: n.Lo, At: n.At}
		le := &Binary{Op: "<=", L: n.X, R: n.Hi, At: n.At}
		var e Node = &Binary{Op: "AND", L: ge, R: le, At: n.At}
		if n.Not {
			e = &Unary{Op: "NOT", X: e, At: n.At}
		}
		return c.check(e)
	case *In:
		x, err := c.check(n.X)
		if err != nil {
			return nil, err
		}
		t := x.Type()
		items := make([]node, len(n.List))
		for i, it := range n.List {
			v, err := c.check(it)
			if err != nil {
				return nil, err
			}
			items[i] = v
			nt, ok := comparable(t, v.Type())
			if !ok {
				return nil, c.errf(it.Pos(), "IN: cannot compare %s with %s", c.describe(n.X, x.Type()), c.describe(it, v.Type()))
			}
			t = nt
		}
		var acc node
		for _, v := range items {
			eq := &cmpNode{op: "=", l: coerce(x, t), r: coerce(v, t)}
			if acc == nil {
				acc = eq
			} else {
				acc = &logicNode{and: false, l: acc, r: eq}
			}
		}
		if n.Not {
			acc = &notNode{x: acc}
		}
		return acc, nil
	case *Like:
		x, err := c.check(n.X)
		if err != nil {
			return nil, err
		}
		pat, err := c.check(n.Pattern)
		if err != nil {
			return nil, err
		}
		op := "LIKE"
		if n.Regex {
			op = "RLIKE"
		}
		for _, a := range []struct {
			n Node
			v node
		}{{n.X, x}, {n.Pattern, pat}} {
			if k := a.v.Type().Kind; k != KString && k != KNull {
				return nil, c.errf(a.n.Pos(), "%s needs strings, but %s", op, c.describe(a.n, a.v.Type()))
			}
		}
		if err := c.constRegex(n.Regex, n.Pattern, pat); err != nil {
			return nil, err
		}
		esc := n.Escape
		if esc == 0 {
			esc = '\\'
		}
		var out node = &likeNode{x: coerce(x, TString), pat: coerce(pat, TString), esc: esc, regex: n.Regex}
		if n.Not {
			out = &notNode{x: out}
		}
		return out, nil
	case *Case:
		return c.caseExpr(n)
	case *Cast:
		x, err := c.check(n.X)
		if err != nil {
			return nil, err
		}
		if !castable(x.Type(), n.To) {
			return nil, c.errf(n.At, "cannot cast %s to %s", c.describe(n.X, x.Type()), n.To)
		}
		return &castNode{x: x, to: n.To, try: n.Try}, nil
	case *Call:
		return c.call(n)
	case *FieldAccess:
		return c.fieldAccess(n)
	case *Index:
		return c.index(n)
	}
	return nil, c.errf(n.Pos(), "unsupported expression")
}

// coerce casts x to t when its type differs (an implicit cast: ANSI, so a bad value fails).
func coerce(x node, t Type) node {
	if x.Type() == t {
		return x
	}
	if k, ok := x.(*constNode); ok && k.isNull() {
		return nullConst(t)
	}
	return fold(&castNode{x: x, to: t, implicit: true})
}

func (c *checker) toBool(src Node, x node, op string) (node, error) {
	switch x.Type().Kind {
	case KBool:
		return x, nil
	case KNull:
		return nullConst(TBool), nil
	}
	return nil, c.errf(src.Pos(), "%s needs a boolean, but %s", op, c.describe(src, x.Type()))
}

func (c *checker) binary(n *Binary) (node, error) {
	l, err := c.check(n.L)
	if err != nil {
		return nil, err
	}
	r, err := c.check(n.R)
	if err != nil {
		return nil, err
	}
	lt, rt := l.Type(), r.Type()
	switch n.Op {
	case "AND", "OR":
		if l, err = c.toBool(n.L, l, n.Op); err != nil {
			return nil, err
		}
		if r, err = c.toBool(n.R, r, n.Op); err != nil {
			return nil, err
		}
		return &logicNode{and: n.Op == "AND", l: l, r: r}, nil
	case "=", "!=", "<", "<=", ">", ">=", "<=>":
		t, ok := comparable(lt, rt)
		if !ok || hasMap(t) {
			return nil, c.errf(n.At, "%s: cannot compare %s with %s", n.Op, c.describe(n.L, lt), c.describe(n.R, rt))
		}
		if t.Kind == KDecimal {
			// Spark narrows integral literals compared with a decimal (DecimalType.fromLiteral)
			t = decimalOperandType(l, r, t)
		}
		return &cmpNode{op: n.Op, l: coerce(l, t), r: coerce(r, t)}, nil
	case "||":
		return c.call(&Call{Name: "concat", Args: []Node{n.L, n.R}, At: n.At})
	}
	return c.arith(n.Op, n.At, n.L, n.R, l, r, false)
}

// decimalOperandType keeps t (the wider type of a comparison) unless one side is an integral
// literal, in which case Spark uses the literal's own precision.
func decimalOperandType(l, r node, t Type) Type {
	lt, rt := litDecimal(l), litDecimal(r)
	s := max(lt.S, rt.S)
	return boundedDecimal(max(lt.P-lt.S, rt.P-rt.S)+s, s)
}

// litDecimal is the decimal type an arithmetic operand takes: an integral literal's minimal
// precision (Spark's DecimalType.fromLiteral), an integral column's 10 or 20 digits.
func litDecimal(x node) Type {
	if k, ok := x.(*constNode); ok && x.Type().integral() && k.sc.IsValid() {
		v := intValue(k.sc)
		d := len(strconv.FormatInt(v, 10))
		if v < 0 {
			d--
		}
		return Decimal(d, 0)
	}
	return asDecimal(x.Type())
}

// arith type-checks + - * / % div and the try_ variants.
func (c *checker) arith(op string, at int, ln, rn Node, l, r node, try bool) (node, error) {
	if out, ok, err := c.dateArith(op, at, ln, rn, l, r); ok {
		return out, err
	}
	lt, rt := l.Type(), r.Type()
	// intervals: timestamp ± interval, date ± interval (→ timestamp), interval ± interval
	if (op == "+" || op == "-") && (lt.Kind == KInterval || rt.Kind == KInterval) {
		switch {
		case (lt.Kind == KTimestamp || lt.Kind == KDate) && rt.Kind == KInterval:
			return &arithNode{op: op, t: TTimestamp, l: coerce(l, TTimestamp), r: r, try: try}, nil
		case lt.Kind == KInterval && rt.Kind == KInterval:
			t, _ := wider(lt, rt)
			return &arithNode{op: op, t: t, l: l, r: r, try: try}, nil
		case op == "+" && lt.Kind == KInterval && (rt.Kind == KTimestamp || rt.Kind == KDate):
			return &arithNode{op: op, t: TTimestamp, l: coerce(r, TTimestamp), r: l, try: try}, nil
		}
		return nil, c.errf(at, "%s: cannot combine %s with %s", op, c.describe(ln, lt), c.describe(rn, rt))
	}
	// ANSI: a string operand is cast to bigint next to an integral, double otherwise
	for _, side := range []*node{&l, &r} {
		if (*side).Type().Kind == KString {
			other := r.Type()
			if side == &r {
				other = l.Type()
			}
			if other.integral() || other.Kind == KString {
				*side = coerce(*side, TBigInt)
			} else {
				*side = coerce(*side, TDouble)
			}
		}
	}
	lt, rt = l.Type(), r.Type()
	if lt.Kind == KNull {
		l, lt = nullConst(TInt), TInt
		if rt.numeric() {
			l, lt = nullConst(rt), rt
		}
	}
	if rt.Kind == KNull {
		r, rt = nullConst(lt), lt
	}
	for _, s := range []struct {
		n Node
		t Type
	}{{ln, lt}, {rn, rt}} {
		if !s.t.numeric() {
			return nil, c.errf(s.n.Pos(), "%s needs numbers, but %s", opName(op), c.describe(s.n, s.t))
		}
	}
	if op == "DIV" {
		if lt.Kind == KDouble || rt.Kind == KDouble {
			return nil, c.errf(at, "div needs integral or decimal operands, but got %s and %s", lt, rt)
		}
		if lt.Kind == KDecimal || rt.Kind == KDecimal {
			return nil, c.errf(at, "div over decimals is not supported yet (got %s and %s)", lt, rt)
		}
		return &arithNode{op: op, t: TBigInt, l: coerce(l, TBigInt), r: coerce(r, TBigInt), try: try}, nil
	}
	if op == "/" && lt.Kind != KDecimal && rt.Kind != KDecimal {
		// Spark's / over integral and double operands is double division
		return &arithNode{op: op, t: TDouble, l: coerce(l, TDouble), r: coerce(r, TDouble), try: try}, nil
	}
	if lt.Kind == KDouble || rt.Kind == KDouble {
		return &arithNode{op: op, t: TDouble, l: coerce(l, TDouble), r: coerce(r, TDouble), try: try}, nil
	}
	if lt.Kind == KDecimal || rt.Kind == KDecimal {
		dl, dr := litDecimal(l), litDecimal(r)
		p1, s1, p2, s2 := dl.P, dl.S, dr.P, dr.S
		var t Type
		switch op {
		case "+", "-":
			s := max(s1, s2)
			t = boundedDecimal(max(p1-s1, p2-s2)+s+1, s)
		case "*":
			t = boundedDecimal(p1+p2+1, s1+s2)
		case "/":
			s := max(6, s1+p2+1)
			t = boundedDecimal(p1-s1+s2+s, s)
		case "%":
			s := max(s1, s2)
			t = boundedDecimal(min(p1-s1, p2-s2)+s, s)
		}
		return &arithNode{op: op, t: t, l: coerce(l, dl), r: coerce(r, dr), try: try}, nil
	}
	t := TInt
	if lt.Kind == KBigInt || rt.Kind == KBigInt {
		t = TBigInt
	}
	return &arithNode{op: op, t: t, l: coerce(l, t), r: coerce(r, t), try: try}, nil
}

func opName(op string) string {
	switch op {
	case "+":
		return "+ (add)"
	case "-":
		return "- (subtract)"
	case "*":
		return "* (multiply)"
	case "/":
		return "/ (divide)"
	case "%":
		return "% (remainder)"
	}
	return strings.ToLower(op)
}

func (c *checker) caseExpr(n *Case) (node, error) {
	var operand node
	if n.Operand != nil {
		o, err := c.check(n.Operand)
		if err != nil {
			return nil, err
		}
		operand = o
	}
	var conds, vals []node
	t := TNull
	for _, w := range n.Whens {
		cond, err := c.check(w.Cond)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			ct, ok := comparable(operand.Type(), cond.Type())
			if !ok {
				return nil, c.errf(w.Cond.Pos(), "CASE: cannot compare %s with %s", c.describe(n.Operand, operand.Type()), c.describe(w.Cond, cond.Type()))
			}
			cond = &cmpNode{op: "=", l: coerce(operand, ct), r: coerce(cond, ct)}
		} else if cond, err = c.toBool(w.Cond, cond, "WHEN"); err != nil {
			return nil, err
		}
		v, err := c.check(w.Then)
		if err != nil {
			return nil, err
		}
		nt, ok := wider(t, v.Type())
		if !ok {
			return nil, c.errf(w.Then.Pos(), "CASE: the branches have incompatible types %s and %s", t, v.Type())
		}
		t = nt
		conds, vals = append(conds, cond), append(vals, v)
	}
	var els node
	if n.Else != nil {
		e, err := c.check(n.Else)
		if err != nil {
			return nil, err
		}
		nt, ok := wider(t, e.Type())
		if !ok {
			return nil, c.errf(n.Else.Pos(), "CASE: the ELSE branch's type %s does not match %s", e.Type(), t)
		}
		t, els = nt, e
	}
	return newCase(conds, vals, els, t), nil
}

// newCase builds a CASE node with every branch cast to t.
func newCase(conds, vals []node, els node, t Type) node {
	if t.Kind == KNull {
		t = TNull
	}
	cn := &caseNode{t: t, conds: conds}
	for _, v := range vals {
		cn.vals = append(cn.vals, coerce(v, t))
	}
	if els == nil {
		els = nullConst(t)
	}
	cn.els = coerce(els, t)
	return cn
}

// column resolves a dot path: the longest prefix naming a top-level column (exact case
// first, then case-insensitive as Spark does), the rest struct fields.
func (c *checker) column(id *Ident) (node, error) {
	path, dt, err := c.resolve(id)
	if err != nil {
		if n, ok := c.pathThroughValues(id); ok { // arr.field over an array of structs
			return n, nil
		}
		return nil, err
	}
	t, ok := FromArrow(dt)
	if !ok {
		return nil, c.errf(id.At, "column %s has type %s, which expressions cannot use yet", quoteName(strings.Join(id.Path, ".")), dt)
	}
	return &colNode{path: path, t: t, name: strings.Join(id.Path, ".")}, nil
}

// resolve finds the column or struct field a dot path names: its index path and type.
func (c *checker) resolve(id *Ident) ([]int, arrow.DataType, error) {
	fields := c.schema.Fields()
	idx := -1
	for i, f := range fields {
		if f.Name == id.Path[0] {
			idx = i
			break
		}
	}
	if idx < 0 {
		for i, f := range fields {
			if strings.EqualFold(f.Name, id.Path[0]) {
				idx = i
				break
			}
		}
	}
	if idx < 0 {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		return nil, nil, c.errf(id.At, "unknown column %s%s", quoteName(strings.Join(id.Path, ".")), didYouMean(id.Path[0], names))
	}
	path := []int{idx}
	dt := fields[idx].Type
	for _, name := range id.Path[1:] {
		st, ok := dt.(*arrow.StructType)
		if !ok {
			return nil, nil, c.errf(id.At, "%s is %s, not a struct, so it has no field %s", quoteName(strings.Join(id.Path, ".")), dt, quoteName(name))
		}
		j := -1
		for k, f := range st.Fields() {
			if f.Name == name || j < 0 && strings.EqualFold(f.Name, name) {
				j = k
			}
		}
		if j < 0 {
			names := make([]string, st.NumFields())
			for k, f := range st.Fields() {
				names[k] = f.Name
			}
			return nil, nil, c.errf(id.At, "struct %s has no field %s%s", quoteName(strings.Join(id.Path[:len(path)], ".")), quoteName(name), didYouMean(name, names))
		}
		path = append(path, j)
		dt = st.Field(j).Type
	}
	return path, dt, nil
}

func quoteName(s string) string { return "`" + s + "`" }

// DidYouMean is the hint an unknown name gets in streamkit's messages: " (did you mean `x`?)"
// with the closest of names (edit distance ≤ a third of its length), else " (have `a`, `b`)"
// when there are at most 12 names, else "". Tools name unknown columns of their flags with it
// (read-files --columns), as expressions do.
func DidYouMean(s string, names []string) string { return didYouMean(s, names) }

// didYouMean is DidYouMean.
func didYouMean(s string, names []string) string {
	best, bestD := "", 1<<30
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > max(1, len(s)/3) || bestD >= len(s) {
		if len(names) > 0 && len(names) <= 12 {
			q := make([]string, len(names))
			for i, n := range names {
				q[i] = quoteName(n)
			}
			return " (have " + strings.Join(q, ", ") + ")"
		}
		return ""
	}
	return " (did you mean " + quoteName(best) + "?)"
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}

// literal types a literal as Spark does: 1 int (bigint, then decimal when it does not fit),
// 1L bigint, 1.5 decimal(2,1), 1.5D and 1e3 double, 1.5BD decimal.
func (c *checker) literal(l *Lit) (node, error) {
	switch l.Kind {
	case LitNull:
		return nullConst(TNull), nil
	case LitBool:
		return &constNode{t: TBool, sc: scalar.NewBooleanScalar(l.Text == "TRUE")}, nil
	case LitString:
		return &constNode{t: TString, sc: scalar.NewStringScalar(l.Text)}, nil
	case LitBinary:
		return c.binaryLit(l)
	case LitDate, LitTimestamp:
		to := TDate
		if l.Kind == LitTimestamp {
			to = TTimestamp
		}
		k := &constNode{t: TString, sc: scalar.NewStringScalar(l.Text)}
		out := fold(&castNode{x: k, to: to})
		if _, ok := out.(*constNode); !ok {
			return nil, c.errf(l.At, "%q is not a valid %s literal", l.Text, to)
		}
		return out, nil
	case LitInterval:
		if l.Unit == "YEAR" || l.Unit == "MONTH" || l.Unit == "YEAR TO MONTH" {
			return c.yearMonthLit(l)
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(l.Text), 64)
		if err != nil {
			return nil, c.errf(l.At, "interval quantity %q is not a number", l.Text)
		}
		unit := map[string]float64{"WEEK": 7 * 86400e6, "DAY": 86400e6, "HOUR": 3600e6, "MINUTE": 60e6, "SECOND": 1e6, "MILLISECOND": 1e3, "MICROSECOND": 1}[l.Unit]
		us := int64(math.Round(q * unit))
		t := TInterval
		if (l.Unit == "DAY" || l.Unit == "WEEK") && us%usPerDay == 0 {
			t = TIntervalDay
		}
		return &constNode{t: t, sc: scalar.NewDurationScalar(arrow.Duration(us), arrow.FixedWidthTypes.Duration_us)}, nil
	}
	text := l.Text
	up := strings.ToUpper(text)
	switch {
	case strings.HasSuffix(up, "BD"):
		return c.decimalLit(l, text[:len(text)-2])
	case strings.HasSuffix(up, "D"), strings.HasSuffix(up, "F"):
		f, err := strconv.ParseFloat(text[:len(text)-1], 64)
		if err != nil {
			return nil, c.errf(l.At, "bad number %s", text)
		}
		return &constNode{t: TDouble, sc: scalar.NewFloat64Scalar(f)}, nil
	case strings.HasSuffix(up, "L"):
		v, err := strconv.ParseInt(text[:len(text)-1], 10, 64)
		if err != nil {
			return nil, c.errf(l.At, "%s does not fit in a bigint", text)
		}
		return &constNode{t: TBigInt, sc: scalar.NewInt64Scalar(v)}, nil
	case strings.HasSuffix(up, "S"), strings.HasSuffix(up, "Y"):
		v, err := strconv.ParseInt(text[:len(text)-1], 10, 32)
		if err != nil {
			return nil, c.errf(l.At, "bad number %s", text)
		}
		return &constNode{t: TInt, sc: scalar.NewInt32Scalar(int32(v))}, nil
	case strings.ContainsAny(up, "E"):
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, c.errf(l.At, "bad number %s", text)
		}
		return &constNode{t: TDouble, sc: scalar.NewFloat64Scalar(f)}, nil
	case strings.Contains(text, "."):
		return c.decimalLit(l, text)
	}
	if v, err := strconv.ParseInt(text, 10, 32); err == nil {
		return &constNode{t: TInt, sc: scalar.NewInt32Scalar(int32(v))}, nil
	}
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		return &constNode{t: TBigInt, sc: scalar.NewInt64Scalar(v)}, nil
	}
	return c.decimalLit(l, text)
}

func (c *checker) decimalLit(l *Lit, text string) (node, error) {
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	intPart, frac, _ := strings.Cut(text, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	p, s := max(len(digits), len(frac)), len(frac)
	if p == 0 {
		p = 1
	}
	if p > 38 {
		return nil, c.errf(l.At, "%s has more than 38 digits", l.Text)
	}
	bi, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return nil, c.errf(l.At, "bad number %s", l.Text)
	}
	if neg {
		bi.Neg(bi)
	}
	t := Decimal(p, s)
	return &constNode{t: t, sc: scalar.NewDecimal128Scalar(decimal128.FromBigInt(bi), t.Arrow())}, nil
}

// fold evaluates a node whose inputs are all constants into a constant (on a one-row batch).
// A constant that fails to evaluate (1/0) stays unfolded and fails per row, as in Spark.
func fold(n node) node {
	if _, ok := n.(*constNode); ok || !allConst(n) {
		return n
	}
	schema := arrow.NewSchema(nil, nil)
	rec := array.NewRecordBatch(schema, nil, 1)
	defer rec.Release()
	ec := &evalCtx{ctx: context.Background(), mem: memory.DefaultAllocator, rec: rec, n: 1}
	a, err := n.eval(ec, nil)
	if err != nil {
		return n
	}
	defer a.Release()
	sc, err := scalar.GetScalar(a, 0)
	if err != nil {
		return n
	}
	return &constNode{t: n.Type(), sc: sc}
}

// children lists a node's inputs (for folding).
type parent interface{ children() []node }

func allConst(n node) bool {
	p, ok := n.(parent)
	if !ok {
		return false
	}
	for _, ch := range p.children() {
		if _, ok := ch.(*constNode); !ok {
			return false
		}
	}
	return true
}

// FunctionNames lists the registered functions, sorted, for help texts.
func FunctionNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
