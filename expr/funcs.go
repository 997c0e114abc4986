package expr

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Function describes a registered function for help texts.
type Function struct {
	Name string // lower case, as called
	Sig  string // e.g. "substring(str, pos[, len]) → string"
	Doc  string // one line
}

type funcDef struct {
	Function
	minArgs, maxArgs int // maxArgs -1: variadic
	mayFail          bool
	check            func(c *checker, call *Call, args []node) (node, error)
}

var registry = map[string]*funcDef{}

func register(name string, minArgs, maxArgs int, sig, doc string, mayFail bool, check func(c *checker, call *Call, args []node) (node, error)) {
	registry[name] = &funcDef{Function: Function{Name: name, Sig: sig, Doc: doc}, minArgs: minArgs, maxArgs: maxArgs, mayFail: mayFail, check: check}
}

// Functions lists the registered functions sorted by name, for help texts and the docs.
func Functions() []Function {
	out := make([]Function, 0, len(registry))
	for _, n := range FunctionNames() {
		out = append(out, registry[n].Function)
	}
	return out
}

func (c *checker) call(n *Call) (node, error) {
	def, ok := registry[n.Name]
	if !ok {
		return nil, c.errf(n.At, "unknown function %s%s", n.Name, didYouMean(n.Name, FunctionNames()))
	}
	if len(n.Args) < def.minArgs || def.maxArgs >= 0 && len(n.Args) > def.maxArgs {
		return nil, c.errf(n.At, "%s takes %s, but got %d argument(s): %s", n.Name, argCount(def.minArgs, def.maxArgs), len(n.Args), def.Sig)
	}
	args := make([]node, len(n.Args))
	for i, a := range n.Args {
		v, err := c.check(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	return def.check(c, n, args)
}

func argCount(lo, hi int) string {
	switch {
	case hi < 0:
		return fmt.Sprintf("at least %d argument(s)", lo)
	case lo == hi:
		return fmt.Sprintf("%d argument(s)", lo)
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

// argErr is the type error of argument i of a call: it names the function, the argument's
// column (when it is one) and both types.
func (c *checker) argErr(call *Call, i int, t Type, want string) error {
	return c.errf(call.Args[i].Pos(), "%s: argument %d must be %s, but %s", call.Name, i+1, want, c.describe(call.Args[i], t))
}

// funcNode is a function evaluated by a vectorized loop over its argument arrays.
type funcNode struct {
	fn   *funcDef
	t    Type
	args []node
	impl func(c *evalCtx, active []bool, args []arrow.Array) (arrow.Array, error)
}

func (n *funcNode) Type() Type       { return n.t }
func (n *funcNode) children() []node { return n.args }
func (n *funcNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	arrs := make([]arrow.Array, len(n.args))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, a := range n.args {
		v, err := c.arr(a, active)
		if err != nil {
			return nil, err
		}
		arrs[i] = v
	}
	return n.impl(c, active, arrs)
}

// nowNode is current_timestamp(): the processing time read once per Eval.
type nowNode struct{ date bool }

func (n *nowNode) Type() Type {
	if n.date {
		return TDate
	}
	return TTimestamp
}
func (n *nowNode) eval(c *evalCtx, _ []bool) (arrow.Array, error) {
	if n.date {
		return scalar.MakeArrayFromScalar(scalar.NewDate32Scalar(arrow.Date32(floorDiv(c.now, usPerDay))), c.n, c.mem)
	}
	return scalar.MakeArrayFromScalar(scalar.NewTimestampScalar(arrow.Timestamp(c.now), TTimestamp.Arrow()), c.n, c.mem)
}

// strArg casts a non-string argument to string (Spark's implicit cast for string functions).
func (c *checker) strArg(call *Call, args []node, i int) (node, error) {
	t := args[i].Type()
	if t.Kind == KString {
		return args[i], nil
	}
	if t.Kind == KInterval {
		return nil, c.argErr(call, i, t, "a string")
	}
	return coerce(args[i], TString), nil
}

func (c *checker) intArg(call *Call, args []node, i int) (node, error) {
	t := args[i].Type()
	switch {
	case t.Kind == KInt || t.Kind == KNull:
		return coerce(args[i], TInt), nil
	case t.Kind == KBigInt || t.Kind == KString:
		return coerce(args[i], TInt), nil
	}
	return nil, c.argErr(call, i, t, "an int")
}

// stringMap registers a string → string function computed by f per value.
func stringMap(name, doc string, f func(string) string) {
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
				} else {
					out.append(f(s.Value(i)))
				}
			}
			return out.array(), nil
		}}, nil
	})
}

func init() {
	caseMap("lower", "the string in lower case", false)
	caseMap("lcase", "the string in lower case", false)
	caseMap("upper", "the string in upper case", true)
	caseMap("ucase", "the string in upper case", true)
	stringMap("trim", "the string without leading and trailing spaces (U+0020 only, as Spark)", func(s string) string { return strings.Trim(s, " ") })
	stringMap("ltrim", "the string without leading spaces", func(s string) string { return strings.TrimLeft(s, " ") })
	stringMap("rtrim", "the string without trailing spaces", func(s string) string { return strings.TrimRight(s, " ") })

	for _, name := range []string{"length", "char_length", "character_length"} {
		register(name, 1, 1, name+"(str or binary) → int", "the number of characters of a string, of bytes of a binary", false, func(c *checker, call *Call, args []node) (node, error) {
			if args[0].Type().Kind == KBinary {
				return byteLength(registry["length"], args[0], 1), nil
			}
			a, err := c.strArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			return &funcNode{fn: registry["length"], t: TInt, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				s := in[0].(*array.String)
				out := newOut[int32](c.n)
				for i := 0; i < c.n; i++ {
					if s.IsNull(i) {
						out.setNull(i)
					} else {
						out.vals[i] = int32(utf8.RuneCountInString(s.Value(i)))
					}
				}
				return out.array(TInt), nil
			}}, nil
		})
	}

	for _, name := range []string{"substring", "substr"} {
		register(name, 2, 3, name+"(str, pos[, len]) → string", "len characters from 1-based pos (negative: from the end)", false, func(c *checker, call *Call, args []node) (node, error) {
			s, err := c.strArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			ins := []node{s}
			for i := 1; i < len(args); i++ {
				a, err := c.intArg(call, args, i)
				if err != nil {
					return nil, err
				}
				ins = append(ins, a)
			}
			return &funcNode{fn: registry["substring"], t: TString, args: ins, impl: evalSubstring}, nil
		})
	}

	register("concat", 1, -1, "concat(str, …) → string", "the arguments joined; NULL if any is NULL", false, func(c *checker, call *Call, args []node) (node, error) {
		ins := make([]node, len(args))
		for i := range args {
			a, err := c.strArg(call, args, i)
			if err != nil {
				return nil, err
			}
			ins[i] = a
		}
		if allBinary(args) { // Spark: concat of binary values is binary
			return &funcNode{fn: registry["concat"], t: TBinary, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				s := concatLoop(c, in, nil)
				defer s.Release()
				return retype(s, arrow.BinaryTypes.Binary), nil
			}}, nil
		}
		return &funcNode{fn: registry["concat"], t: TString, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			return concatLoop(c, in, nil), nil
		}}, nil
	})
	register("concat_ws", 1, -1, "concat_ws(sep, str or array<string>, …) → string", "the non-NULL arguments (an array's non-NULL elements) joined by sep", false, func(c *checker, call *Call, args []node) (node, error) {
		ins := make([]node, len(args))
		lists := false
		for i := range args {
			if t := args[i].Type(); i > 0 && t.Kind == KArray {
				if t.Elem().nested() || t.Elem().Kind == KInterval { // Spark casts array<int> and the like to array<string>
					return nil, c.argErr(call, i, t, "a string or an array<string>")
				}
				ins[i], lists = coerce(args[i], ArrayOf(TString)), true
				continue
			}
			a, err := c.strArg(call, args, i)
			if err != nil {
				return nil, err
			}
			ins[i] = a
		}
		if lists {
			return &funcNode{fn: registry["concat_ws"], t: TString, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				return concatWSLists(c, in[1:], in[0].(*array.String)), nil
			}}, nil
		}
		return &funcNode{fn: registry["concat_ws"], t: TString, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			return concatLoop(c, in[1:], in[0].(*array.String)), nil
		}}, nil
	})

	register("coalesce", 1, -1, "coalesce(x, …)", "the first non-NULL argument", false, func(c *checker, call *Call, args []node) (node, error) {
		t := TNull
		for i, a := range args {
			nt, ok := wider(t, a.Type())
			if !ok {
				return nil, c.argErr(call, i, a.Type(), "of a type compatible with "+t.String())
			}
			t = nt
		}
		var conds []node
		for _, a := range args[:len(args)-1] {
			conds = append(conds, &isNullNode{x: a, not: true})
		}
		return newCase(conds, args[:len(args)-1], args[len(args)-1], t), nil
	})
	register("nvl", 2, 2, "nvl(x, y)", "x unless it is NULL, else y", false, func(c *checker, call *Call, args []node) (node, error) {
		return registry["coalesce"].check(c, call, args)
	})
	register("nullif", 2, 2, "nullif(x, y)", "NULL when x = y, else x", false, func(c *checker, call *Call, args []node) (node, error) {
		ct, ok := comparable(args[0].Type(), args[1].Type())
		if !ok {
			return nil, c.argErr(call, 1, args[1].Type(), "comparable with "+args[0].Type().String())
		}
		eq := &cmpNode{op: "=", l: coerce(args[0], ct), r: coerce(args[1], ct)}
		return newCase([]node{eq}, []node{nullConst(args[0].Type())}, args[0], args[0].Type()), nil
	})
	register("if", 3, 3, "if(cond, then, else)", "then where cond is true, else otherwise (NULL cond: else)", false, func(c *checker, call *Call, args []node) (node, error) {
		cond, err := c.toBool(call.Args[0], args[0], "if")
		if err != nil {
			return nil, err
		}
		t, ok := wider(args[1].Type(), args[2].Type())
		if !ok {
			return nil, c.argErr(call, 2, args[2].Type(), "of a type compatible with "+args[1].Type().String())
		}
		return newCase([]node{cond}, []node{args[1]}, args[2], t), nil
	})
	for _, op := range []struct{ name, op string }{{"try_add", "+"}, {"try_subtract", "-"}, {"try_multiply", "*"}, {"try_divide", "/"}, {"try_mod", "%"}} {
		register(op.name, 2, 2, op.name+"(x, y)", "x "+op.op+" y, NULL instead of an overflow or division-by-zero error", false, func(c *checker, call *Call, args []node) (node, error) {
			// Spark 4: only the operation itself is tolerant; its arguments still fail
			return c.arith(op.op, call.At, call.Args[0], call.Args[1], args[0], args[1], true)
		})
	}

	register("abs", 1, 1, "abs(x)", "the absolute value (ANSI: abs of the minimum int overflows)", true, func(c *checker, call *Call, args []node) (node, error) {
		t := args[0].Type()
		if t.Kind == KString {
			t = TDouble
		}
		if !t.numeric() && t.Kind != KNull {
			return nil, c.argErr(call, 0, t, "a number")
		}
		if t.Kind == KNull {
			t = TInt
		}
		x := coerce(args[0], t)
		if t.Kind == KDouble { // math.Abs, so that abs(-0.0) is 0.0 as in Java's Math.abs
			return &funcNode{fn: registry["abs"], t: TDouble, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				vs, res := f64s(in[0]), newOut[float64](c.n)
				for i := range res.vals {
					if isNull(in[0], i) {
						res.setNull(i)
						continue
					}
					res.vals[i] = math.Abs(vs[i])
				}
				return res.array(TDouble), nil
			}}, nil
		}
		neg := &negNode{x: x}
		lt0 := &cmpNode{op: "<", l: x, r: coerce(&constNode{t: TInt, sc: scalar.NewInt32Scalar(0)}, t)}
		return newCase([]node{lt0}, []node{neg}, x, t), nil
	})
	register("round", 1, 2, "round(x[, d])", "x rounded HALF_UP to d decimal places (default 0; a negative d rounds to tens, hundreds, …; ANSI: an int that overflows fails)", true, func(c *checker, call *Call, args []node) (node, error) {
		return c.rounding(call, args, "round")
	})
	register("bround", 1, 2, "bround(x[, d])", "x rounded HALF_EVEN (banker's rounding) to d decimal places (default 0, negative allowed)", true, func(c *checker, call *Call, args []node) (node, error) {
		return c.rounding(call, args, "bround")
	})
	for _, name := range []string{"floor", "ceil", "ceiling"} {
		register(name, 1, 1, name+"(x)", "x rounded down (floor) or up (ceil): bigint for int/double, decimal(p-s+1,0) for decimals", false, func(c *checker, call *Call, args []node) (node, error) {
			return c.rounding(call, args, strings.Replace(name, "ceiling", "ceil", 1))
		})
	}

	for _, p := range []struct {
		name string
		part func(y, m, d int, tod int64) int32
	}{
		{"year", func(y, _, _ int, _ int64) int32 { return int32(y) }},
		{"month", func(_, m, _ int, _ int64) int32 { return int32(m) }},
		{"day", func(_, _, d int, _ int64) int32 { return int32(d) }},
		{"dayofmonth", func(_, _, d int, _ int64) int32 { return int32(d) }},
		{"hour", func(_, _, _ int, tod int64) int32 { return int32(tod / 3600e6) }},
		{"minute", func(_, _, _ int, tod int64) int32 { return int32(tod / 60e6 % 60) }},
		{"second", func(_, _, _ int, tod int64) int32 { return int32(tod / 1e6 % 60) }},
	} {
		register(p.name, 1, 1, p.name+"(date or timestamp) → int", "the "+p.name+" field, in UTC", false, func(c *checker, call *Call, args []node) (node, error) {
			t := args[0].Type()
			if t.Kind != KDate && t.Kind != KTimestamp && t.Kind != KNull && t.Kind != KString {
				return nil, c.argErr(call, 0, t, "a date or timestamp")
			}
			x := coerce(args[0], TTimestamp)
			return &funcNode{fn: registry[p.name], t: TInt, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				ts := i64s(in[0])
				out := newOut[int32](c.n)
				for i := range out.vals {
					if isNull(in[0], i) {
						out.setNull(i)
						continue
					}
					days := floorDiv(ts[i], usPerDay)
					y, m, d := civilFromDays(days)
					out.vals[i] = p.part(y, m, d, ts[i]-days*usPerDay)
				}
				return out.array(TInt), nil
			}}, nil
		})
	}

	register("date_trunc", 2, 2, "date_trunc(unit, ts) → timestamp", "ts truncated to YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND or MICROSECOND", false, func(c *checker, call *Call, args []node) (node, error) {
		k, ok := args[0].(*constNode)
		if !ok || args[0].Type().Kind != KString {
			return nil, c.argErr(call, 0, args[0].Type(), "a constant string unit")
		}
		unit := ""
		if k.sc.IsValid() {
			unit = strings.ToUpper(k.sc.(*scalar.String).String())
		}
		t := args[1].Type()
		if t.Kind != KDate && t.Kind != KTimestamp && t.Kind != KNull && t.Kind != KString {
			return nil, c.argErr(call, 1, t, "a timestamp")
		}
		x := coerce(args[1], TTimestamp)
		return &funcNode{fn: registry["date_trunc"], t: TTimestamp, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			ts := i64s(in[0])
			out := newOut[int64](c.n)
			for i := range out.vals {
				if isNull(in[0], i) {
					out.setNull(i)
					continue
				}
				v, ok := truncTS(unit, ts[i])
				if !ok {
					out.setNull(i) // Spark: an unknown unit gives NULL
					continue
				}
				out.vals[i] = v
			}
			return out.array(TTimestamp), nil
		}}, nil
	})

	for _, p := range []struct {
		name string
		to   Type
	}{{"to_date", TDate}, {"to_timestamp", TTimestamp}} {
		register(p.name, 1, 2, p.name+"(x[, fmt])", "x parsed as a "+p.to.String()+" (fmt: a Java DateTimeFormatter pattern of y M d H m s S letters); ANSI: unparseable text fails", true, func(c *checker, call *Call, args []node) (node, error) {
			t := args[0].Type()
			if len(args) == 1 {
				if t.Kind == KString || t.Kind == KDate || t.Kind == KTimestamp || t.Kind == KNull {
					return &castNode{x: args[0], to: p.to}, nil
				}
				return nil, c.argErr(call, 0, t, "a string, date or timestamp")
			}
			k, ok := args[1].(*constNode)
			if !ok || args[1].Type().Kind != KString || !k.sc.IsValid() {
				return nil, c.argErr(call, 1, args[1].Type(), "a constant format string")
			}
			layout, err := javaLayout(k.sc.(*scalar.String).String())
			if err != nil {
				return nil, c.errf(call.Args[1].Pos(), "%s: %v", p.name, err)
			}
			x, err := c.strArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			return &funcNode{fn: registry[p.name], t: p.to, args: []node{x}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
				out, err := parseTimestamps(c, active, in[0].(*array.String), func(_ int, v string) (int64, error) {
					tm, err := time.Parse(layout, v)
					if err != nil {
						return 0, fmt.Errorf("%s: %s does not match the format %s", p.name, quoteValue(v), quoteValue(k.sc.(*scalar.String).String()))
					}
					return tm.UnixMicro(), nil
				})
				if err != nil {
					return nil, err
				}
				a := out.array(TTimestamp)
				if p.to.Kind == KDate {
					defer a.Release()
					return (&castNode{x: &constNode{}, to: TDate}).fromTS(c, a), nil
				}
				return a, nil
			}}, nil
		})
	}
	register("current_timestamp", 0, 0, "current_timestamp() → timestamp", "the processing time, fixed for a batch", false, func(*checker, *Call, []node) (node, error) {
		return &nowNode{}, nil
	})
	register("now", 0, 0, "now() → timestamp", "the processing time, fixed for a batch", false, func(*checker, *Call, []node) (node, error) {
		return &nowNode{}, nil
	})
	register("current_date", 0, 0, "current_date() → date", "the processing date (UTC), fixed for a batch", false, func(*checker, *Call, []node) (node, error) {
		return &nowNode{date: true}, nil
	})
}

// fromTS converts a timestamp array to dates (floor to the day).
func (n *castNode) fromTS(c *evalCtx, a arrow.Array) arrow.Array {
	ts := i64s(a)
	out := newOut[int32](c.n)
	for i := range out.vals {
		if isNull(a, i) {
			out.setNull(i)
			continue
		}
		out.vals[i] = int32(floorDiv(ts[i], usPerDay))
	}
	return out.array(TDate)
}

// javaLayout translates a Java DateTimeFormatter pattern (yyyy MM dd HH mm ss SSS and
// literal text) to a Go time layout.
func javaLayout(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); {
		j := i
		for j < len(p) && p[j] == p[i] {
			j++
		}
		run := p[i:j]
		switch {
		case run == "yyyy" || run == "uuuu":
			b.WriteString("2006")
		case run == "yy":
			b.WriteString("06")
		case run == "MM":
			b.WriteString("01")
		case run == "M":
			b.WriteString("1")
		case run == "dd":
			b.WriteString("02")
		case run == "d":
			b.WriteString("2")
		case run == "HH":
			b.WriteString("15")
		case run == "mm":
			b.WriteString("04")
		case run == "ss":
			b.WriteString("05")
		case p[i] == 'S':
			b.WriteString(strings.Repeat("0", len(run)))
		case p[i] == '\'':
			k := strings.IndexByte(p[i+1:], '\'')
			if k < 0 {
				return "", fmt.Errorf("unterminated quote in format %q", p)
			}
			b.WriteString(p[i+1 : i+1+k])
			j = i + k + 2
		case p[i] >= 'a' && p[i] <= 'z' || p[i] >= 'A' && p[i] <= 'Z':
			return "", fmt.Errorf("format %q: pattern letters %q are not supported (y M d H m s S)", p, run)
		default:
			b.WriteString(run)
		}
		i = j
	}
	return b.String(), nil
}

// truncTS truncates µs since the epoch to a unit; ok is false for an unknown unit.
func truncTS(unit string, us int64) (int64, bool) {
	days := floorDiv(us, usPerDay)
	switch unit {
	case "YEAR", "YYYY", "YY":
		y, _, _ := civilFromDays(days)
		return daysFromCivil(y, 1, 1) * usPerDay, true
	case "QUARTER":
		y, m, _ := civilFromDays(days)
		return daysFromCivil(y, (m-1)/3*3+1, 1) * usPerDay, true
	case "MONTH", "MM", "MON":
		y, m, _ := civilFromDays(days)
		return daysFromCivil(y, m, 1) * usPerDay, true
	case "WEEK": // Monday
		dow := (days%7 + 7 + 3) % 7 // 1970-01-01 was a Thursday: 0 = Monday
		return (days - dow) * usPerDay, true
	case "DAY", "DD":
		return days * usPerDay, true
	case "HOUR":
		return floorDiv(us, 3600e6) * 3600e6, true
	case "MINUTE":
		return floorDiv(us, 60e6) * 60e6, true
	case "SECOND":
		return floorDiv(us, 1e6) * 1e6, true
	case "MILLISECOND":
		return floorDiv(us, 1e3) * 1e3, true
	case "MICROSECOND":
		return us, true
	}
	return 0, false
}

func evalSubstring(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
	s := in[0].(*array.String)
	pos := i32s(in[1])
	var lens []int32
	if len(in) > 2 {
		lens = i32s(in[2])
	}
	out := newStrOut(c.n, len(s.ValueBytes()))
	for i := 0; i < c.n; i++ {
		if s.IsNull(i) || in[1].IsNull(i) || lens != nil && in[2].IsNull(i) {
			out.appendNull()
			continue
		}
		length := int64(math.MaxInt32)
		if lens != nil {
			length = int64(lens[i])
		}
		out.append(substringSQL(s.Value(i), int64(pos[i]), length))
	}
	return out.array(), nil
}

// substringSQL follows Spark's UTF8String.substringSQL.
func substringSQL(s string, pos, length int64) string {
	n := int64(utf8.RuneCountInString(s))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := int64(math.MaxInt64)
	if length != math.MaxInt32 {
		end = start + length
	}
	start = max(start, 0)
	if start >= end || start >= n {
		return ""
	}
	end = min(end, n)
	if int64(len(s)) == n { // ASCII
		return s[start:end]
	}
	r := []rune(s)
	return string(r[start:end])
}

// concatWSLists is concat_ws over strings and array<string> (Arrow list<string>) values: an
// array contributes its non-NULL elements, as in Spark; NULL values and a NULL array are skipped.
func concatWSLists(c *evalCtx, in []arrow.Array, sep *array.String) arrow.Array {
	out := newStrOut(c.n, c.n*8)
	var buf []byte
	for i := 0; i < c.n; i++ {
		if sep.IsNull(i) {
			out.appendNull()
			continue
		}
		buf = buf[:0]
		first := true
		add := func(s *array.String, j int) {
			if s.IsNull(j) {
				return
			}
			if !first {
				buf = append(buf, sep.Value(i)...)
			}
			first = false
			buf = append(buf, s.Value(j)...)
		}
		for _, a := range in {
			switch a := a.(type) {
			case *array.String:
				add(a, i)
			case *array.List:
				if a.IsNull(i) {
					continue
				}
				vals := a.ListValues().(*array.String)
				start, end := a.ValueOffsets(i)
				for j := start; j < end; j++ {
					add(vals, int(j))
				}
			}
		}
		out.appendBytes(buf)
	}
	return out.array()
}

// concatLoop joins the string arrays row by row; with sep (concat_ws) NULL values are skipped
// and a NULL separator gives NULL, without it any NULL gives NULL.
func concatLoop(c *evalCtx, in []arrow.Array, sep *array.String) arrow.Array {
	strs := make([]*array.String, len(in))
	size := 0
	for k, a := range in {
		strs[k] = a.(*array.String)
		size += len(strs[k].ValueBytes())
	}
	out := newStrOut(c.n, size)
	var buf []byte
	for i := 0; i < c.n; i++ {
		buf = buf[:0]
		if sep != nil {
			if sep.IsNull(i) {
				out.appendNull()
				continue
			}
			first := true
			for _, s := range strs {
				if s.IsNull(i) {
					continue
				}
				if !first {
					buf = append(buf, sep.Value(i)...)
				}
				first = false
				buf = append(buf, s.Value(i)...)
			}
			out.appendBytes(buf)
			continue
		}
		null := false
		for _, s := range strs {
			if s.IsNull(i) {
				null = true
				break
			}
			buf = append(buf, s.Value(i)...)
		}
		if null {
			out.appendNull()
		} else {
			out.appendBytes(buf)
		}
	}
	return out.array()
}

// rounding type-checks round/floor/ceil and returns their node.
func (c *checker) rounding(call *Call, args []node, name string) (node, error) {
	t := args[0].Type()
	if t.Kind == KString {
		t = TDouble
	}
	if !t.numeric() && t.Kind != KNull {
		return nil, c.argErr(call, 0, t, "a number")
	}
	if t.Kind == KNull {
		t = TDouble
	}
	x := coerce(args[0], t)
	d := 0
	if len(args) == 2 {
		k, ok := args[1].(*constNode)
		if !ok || !args[1].Type().integral() || !k.sc.IsValid() {
			return nil, c.argErr(call, 1, args[1].Type(), "a constant int")
		}
		// Beyond ±400 places nothing changes: a double's shortest form ends above 10^-341
		// and every finite value is below 0.5·10^309, as are decimals (38 digits) and
		// bigints, so the scale is clamped there rather than raising 10 to it (a hang for
		// round(x, 2147483647)).
		d = int(max(-400, min(400, intValue(k.sc))))
	}
	rounds := name == "round" || name == "bround"
	even := name == "bround"
	var out Type
	switch {
	case rounds && t.Kind == KDecimal && d < 0: // Spark's RoundBase: DecimalType(max(p-s+1, -d+1), 0)
		out = Decimal(min(max(t.P-t.S+1, -d+1), 38), 0)
	case rounds && t.Kind == KDecimal:
		ns := min(d, t.S)
		out = boundedDecimal(t.P-t.S+1+ns, ns)
	case rounds:
		out = t
	case t.Kind == KDecimal:
		out = boundedDecimal(t.P-t.S+1, 0)
	default:
		out = TBigInt
	}
	return &funcNode{fn: registry[name], t: out, args: []node{x}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
		a := in[0]
		switch {
		case out.Kind == KDecimal:
			vs := decs(a)
			res := newOut[decimal128.Num](c.n)
			for i := range res.vals {
				if isNull(a, i) {
					res.setNull(i)
					continue
				}
				v := vs[i].BigInt()
				k := t.S - out.S
				var r *big.Int
				switch name {
				case "round", "bround":
					if d < 0 { // to 10^-d, at scale 0
						r = roundQuo(v, pow10(t.S-d), even)
						r.Mul(r, pow10(-d))
					} else if even {
						r = roundQuo(v, pow10(k), true)
					} else {
						r = roundHalfUp(v, k)
					}
				case "floor", "ceil":
					div := pow10(k)
					q, m := new(big.Int).DivMod(v, div, new(big.Int)) // Euclidean: q = floor for div > 0
					if name == "ceil" && m.Sign() != 0 {
						q.Add(q, big.NewInt(1))
					}
					r = q
				}
				if !fitsPrecision(r, out.P) {
					if activeAt(active, i) {
						return nil, c.fail("NUMERIC_VALUE_OUT_OF_RANGE", i, "%s(%s) does not fit in %s", name, decString(v, t.S), out)
					}
					res.setNull(i)
					continue
				}
				res.vals[i] = decimal128.FromBigInt(r)
			}
			return res.array(out), nil
		case t.Kind == KDouble:
			vs := f64s(a)
			if out.Kind == KDouble { // round(double, d): HALF_UP on the shortest decimal form
				res := newOut[float64](c.n)
				for i := range res.vals {
					if isNull(a, i) {
						res.setNull(i)
						continue
					}
					if d < 0 || even {
						res.vals[i] = roundDoubleTo(vs[i], d, even)
					} else {
						res.vals[i] = roundDouble(vs[i], d)
					}
				}
				return res.array(out), nil
			}
			res := newOut[int64](c.n)
			for i := range res.vals {
				if isNull(a, i) {
					res.setNull(i)
					continue
				}
				f := math.Floor(vs[i])
				if name == "ceil" {
					f = math.Ceil(vs[i])
				}
				res.vals[i] = javaDoubleToLong(f)
			}
			return res.array(out), nil
		}
		// integral: round keeps the value (a negative d rounds it), floor/ceil widen to bigint
		if out.Kind == t.Kind && d < 0 {
			return roundIntegral(c, active, name, t, a, d, even)
		}
		if out.Kind == t.Kind {
			a.Retain()
			return a, nil
		}
		return (&castNode{x: &constNode{t: t}, to: TBigInt}).evalArr(c, a)
	}}, nil
}

// evalArr applies a widening cast to an evaluated array.
func (n *castNode) evalArr(c *evalCtx, a arrow.Array) (arrow.Array, error) {
	return (&castNode{x: &arrayNode{a: a, t: n.x.Type()}, to: n.to}).eval(c, nil)
}

// arrayNode wraps an evaluated array as a node.
type arrayNode struct {
	a arrow.Array
	t Type
}

func (n *arrayNode) Type() Type { return n.t }
func (n *arrayNode) eval(*evalCtx, []bool) (arrow.Array, error) {
	n.a.Retain()
	return n.a, nil
}

// javaDoubleToLong converts as Java's (long) cast does: NaN → 0, saturating at the bounds.
func javaDoubleToLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// roundDouble rounds HALF_UP at d decimal places on the shortest decimal representation of
// f (Spark: BigDecimal(f).setScale(d, HALF_UP)).
func roundDouble(f float64, d int) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'e', -1, 64))
	if !ok {
		return f
	}
	v := ratToScaled(r, d)
	out, _ := strconv.ParseFloat(decString(v, d), 64)
	return out // a BigDecimal has no -0: round(-0.04, 1) is 0.0
}

// likeNode is LIKE (SQL wildcards % and _, an escape character) or RLIKE (a regular
// expression found anywhere in the string; RE2 syntax, see the package doc). A constant
// pattern is compiled once.
type likeNode struct {
	x, pat node
	esc    rune
	regex  bool
	cache  map[string]func(string) bool
}

func (n *likeNode) Type() Type       { return TBool }
func (n *likeNode) children() []node { return []node{n.x, n.pat} }

func (n *likeNode) matcher(p string) (func(string) bool, error) {
	if f, ok := n.cache[p]; ok {
		return f, nil
	}
	var f func(string) bool
	if n.regex {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, err
		}
		f = re.MatchString
	} else {
		f = likeMatcher(p, n.esc)
	}
	if n.cache == nil {
		n.cache = map[string]func(string) bool{}
	}
	if len(n.cache) < 256 {
		n.cache[p] = f
	}
	return f, nil
}

func (n *likeNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	x, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	xs := x.(*array.String)
	out := newBoolOut(c.n)
	if k, ok := n.pat.(*constNode); ok {
		if !k.sc.IsValid() {
			for i := 0; i < c.n; i++ {
				out.setNull(i)
			}
			return out.array(), nil
		}
		f, err := n.matcher(k.sc.(*scalar.String).String())
		if err != nil {
			return nil, c.fail("INVALID_PARAMETER_VALUE", 0, "bad regular expression: %v", err)
		}
		for i := 0; i < c.n; i++ {
			if xs.IsNull(i) {
				out.setNull(i)
			} else {
				out.set(i, f(xs.Value(i)))
			}
		}
		return out.array(), nil
	}
	p, err := c.arr(n.pat, active)
	if err != nil {
		return nil, err
	}
	defer p.Release()
	ps := p.(*array.String)
	for i := 0; i < c.n; i++ {
		if xs.IsNull(i) || ps.IsNull(i) {
			out.setNull(i)
			continue
		}
		f, err := n.matcher(ps.Value(i))
		if err != nil {
			if activeAt(active, i) {
				return nil, c.fail("INVALID_PARAMETER_VALUE", i, "bad regular expression %s: %v", quoteValue(ps.Value(i)), err)
			}
			out.setNull(i)
			continue
		}
		out.set(i, f(xs.Value(i)))
	}
	return out.array(), nil
}

// likeMatcher compiles a LIKE pattern: plain text, prefix%, %suffix and %infix% are string
// comparisons, anything else a regular expression.
func likeMatcher(p string, esc rune) func(string) bool {
	var lit strings.Builder
	var re strings.Builder
	re.WriteString(`(?s)^`)
	wild := false
	segs := []string{}
	kinds := []rune{}
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == esc && i+1 < len(rs):
			i++
			lit.WriteRune(rs[i])
			re.WriteString(regexp.QuoteMeta(string(rs[i])))
		case r == '%' || r == '_':
			wild = true
			segs, kinds = append(segs, lit.String()), append(kinds, r)
			lit.Reset()
			if r == '%' {
				re.WriteString(`.*`)
			} else {
				re.WriteString(`.`)
			}
		default:
			lit.WriteRune(r)
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	segs = append(segs, lit.String())
	re.WriteString(`$`)
	if !wild {
		s := segs[0]
		return func(v string) bool { return v == s }
	}
	if len(kinds) == 1 && kinds[0] == '%' {
		pre, suf := segs[0], segs[1]
		return func(v string) bool {
			return len(v) >= len(pre)+len(suf) && strings.HasPrefix(v, pre) && strings.HasSuffix(v, suf)
		}
	}
	if len(kinds) == 2 && kinds[0] == '%' && kinds[1] == '%' && segs[0] == "" && segs[2] == "" {
		mid := segs[1]
		return func(v string) bool { return strings.Contains(v, mid) }
	}
	rx := regexp.MustCompile(re.String())
	return rx.MatchString
}

// roundQuo is x / y (y > 0) rounded HALF_UP, or HALF_EVEN with even.
func roundQuo(x, y *big.Int, even bool) *big.Int {
	q, m := new(big.Int).QuoRem(x, y, new(big.Int))
	m.Abs(m).Mul(m, big.NewInt(2))
	if c := m.Cmp(y); c > 0 || c == 0 && (!even || q.Bit(0) == 1) {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// roundDoubleTo rounds f at d decimal places (d may be negative) HALF_UP, or HALF_EVEN with
// even, on its shortest decimal form (Spark: BigDecimal(f).setScale(d, mode).toDouble).
func roundDoubleTo(f float64, d int, even bool) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'e', -1, 64))
	if !ok {
		return f
	}
	num, den := new(big.Int).Set(r.Num()), new(big.Int).Set(r.Denom())
	if d >= 0 {
		num.Mul(num, pow10(d))
	} else {
		den.Mul(den, pow10(-d))
	}
	q := roundQuo(num, den, even)
	var out float64
	if d >= 0 {
		out, _ = new(big.Rat).SetFrac(q, pow10(d)).Float64()
	} else {
		out, _ = new(big.Rat).SetInt(q.Mul(q, pow10(-d))).Float64()
	}
	return out // a BigDecimal has no -0
}

// roundIntegral rounds int or bigint values to 10^-d (d < 0), HALF_UP or HALF_EVEN; a
// result outside the type's range is ARITHMETIC_OVERFLOW (round(2147483647, -1)).
func roundIntegral(c *evalCtx, active []bool, name string, t Type, a arrow.Array, d int, even bool) (arrow.Array, error) {
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if t.Kind == KBigInt {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	pow := pow10(-d)
	one := func(i int, v int64) (int64, bool, error) {
		r := roundQuo(big.NewInt(v), pow, even)
		r.Mul(r, pow)
		if !r.IsInt64() || r.Int64() < lo || r.Int64() > hi {
			if !activeAt(active, i) {
				return 0, false, nil
			}
			return 0, false, c.fail("ARITHMETIC_OVERFLOW", i, "%s(%d, %d) overflows %s", name, v, d, t)
		}
		return r.Int64(), true, nil
	}
	if t.Kind == KBigInt {
		return map1(c, t, a, i64s(a), one)
	}
	return map1(c, t, a, i32s(a), func(i int, v int32) (int32, bool, error) {
		r, ok, err := one(i, int64(v))
		return int32(r), ok, err
	})
}
