package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Date arithmetic as Spark 4 resolves it: DATE ± int (DateAdd, DateSub), DATE - DATE
// (SubtractDates: an interval of days), timestamp differences (an interval of µs),
// date_add, date_sub, datediff, add_months, months_between, DATE/TIMESTAMP ± a year-month
// interval (DateAddYMInterval, TimestampAddYMInterval) and the epoch conversions
// timestamp_seconds … unix_date. Each is one loop over the argument buffers.

// map1 computes out[i] = f(i, xs[i]) for the rows where x is not NULL; f returns ok=false
// for a row whose result is NULL, or an error to stop.
func map1[A, O any](c *evalCtx, t Type, x arrow.Array, xs []A, f func(i int, a A) (O, bool, error)) (arrow.Array, error) {
	out := newOut[O](c.n)
	for i := range out.vals {
		if isNull(x, i) {
			out.setNull(i)
			continue
		}
		v, ok, err := f(i, xs[i])
		if err != nil {
			return nil, err
		}
		if !ok {
			out.setNull(i)
			continue
		}
		out.vals[i] = v
	}
	return out.array(t), nil
}

// map2 is map1 over two arguments (NULL where either is NULL).
func map2[A, B, O any](c *evalCtx, t Type, x, y arrow.Array, xs []A, ys []B, f func(i int, a A, b B) (O, bool, error)) (arrow.Array, error) {
	out := newOut[O](c.n)
	for i := range out.vals {
		if isNull(x, i) || isNull(y, i) {
			out.setNull(i)
			continue
		}
		v, ok, err := f(i, xs[i], ys[i])
		if err != nil {
			return nil, err
		}
		if !ok {
			out.setNull(i)
			continue
		}
		out.vals[i] = v
	}
	return out.array(t), nil
}

// dateArg is argument i as a date: a timestamp or a string is cast to date (Spark's
// implicit cast for a DATE input; a malformed string is CAST_INVALID_INPUT).
func (c *checker) dateArg(call *Call, args []node, i int) (node, error) {
	switch args[i].Type().Kind {
	case KDate, KTimestamp, KString, KNull:
		return coerce(args[i], TDate), nil
	}
	return nil, c.argErr(call, i, args[i].Type(), "a date")
}

// tsArg is argument i as a timestamp: a date or a string is cast to timestamp.
func (c *checker) tsArg(call *Call, args []node, i int) (node, error) {
	switch args[i].Type().Kind {
	case KDate, KTimestamp, KString, KNull:
		return coerce(args[i], TTimestamp), nil
	}
	return nil, c.argErr(call, i, args[i].Type(), "a timestamp")
}

// daysArg is a number of days: int (Spark: int, smallint or tinyint), a string cast to
// int; bigint and decimals are type errors, as in Spark.
func (c *checker) daysArg(call *Call, args []node, i int) (node, error) {
	switch args[i].Type().Kind {
	case KInt, KString, KNull:
		return coerce(args[i], TInt), nil
	}
	return nil, c.argErr(call, i, args[i].Type(), "an int (or smallint, tinyint) number of days")
}

// dateAddNode is date + days (date - days with sub); the int addition wraps around, as
// Spark's DateAdd does.
func dateAddNode(d, days node, sub bool) node {
	return &funcNode{fn: registry["date_add"], t: TDate, args: []node{d, days}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
		return map2(c, TDate, in[0], in[1], i32s(in[0]), i32s(in[1]), func(_ int, a, b int32) (int32, bool, error) {
			if sub {
				return a - b, true, nil
			}
			return a + b, true, nil
		})
	}}
}

// intervalDays is the days of an interval of whole days, as an int (Spark's
// ExtractANSIIntervalDays).
func intervalDays(x node) node {
	return &funcNode{fn: registry["date_add"], t: TInt, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
		return map1(c, TInt, in[0], i64s(in[0]), func(_ int, us int64) (int32, bool, error) { return int32(us / usPerDay), true, nil })
	}}
}

// dateDiffNode is the days from start to end (an int, wrapping as Spark's DateDiff), or
// with interval set the interval of those days (SubtractDates).
func dateDiffNode(end, start node, interval bool) node {
	t := TInt
	if interval {
		t = TIntervalDay
	}
	return &funcNode{fn: registry["datediff"], t: t, args: []node{end, start}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
		if interval {
			return map2(c, TIntervalDay, in[0], in[1], i32s(in[0]), i32s(in[1]), func(_ int, a, b int32) (int64, bool, error) {
				return (int64(a) - int64(b)) * usPerDay, true, nil
			})
		}
		return map2(c, TInt, in[0], in[1], i32s(in[0]), i32s(in[1]), func(_ int, a, b int32) (int32, bool, error) { return a - b, true, nil })
	}}
}

// dateArith resolves + and - with a date, timestamp or year-month interval operand the way
// Spark 4's analyzer does; ok is false when neither operand is one (plain arithmetic).
func (c *checker) dateArith(op string, at int, ln, rn Node, l, r node) (out node, ok bool, err error) {
	lt, rt := l.Type(), r.Type()
	dateish := func(k Kind) bool { return k == KDate || k == KTimestamp }
	if op != "+" && op != "-" || !dateish(lt.Kind) && !dateish(rt.Kind) && lt.Kind != KYearMonth && rt.Kind != KYearMonth {
		return nil, false, nil
	}
	switch {
	case lt.Kind == KDate && rt == TIntervalDay: // Spark: DateAdd(d, ExtractANSIIntervalDays(i))
		return dateAddNode(l, intervalDays(r), op == "-"), true, nil
	case op == "+" && rt.Kind == KDate && lt == TIntervalDay:
		return dateAddNode(r, intervalDays(l), false), true, nil
	case lt.Kind == KInterval || rt.Kind == KInterval:
		return nil, false, nil // the day-time interval rules of arith
	}
	fail := func() (node, bool, error) {
		return nil, true, c.errf(at, "%s: cannot combine %s with %s", op, c.describe(ln, lt), c.describe(rn, rt))
	}
	switch {
	case lt.Kind == KYearMonth && rt.Kind == KYearMonth:
		t, _ := wider(lt, rt)
		return &arithNode{op: op, t: t, l: l, r: r}, true, nil
	case rt.Kind == KYearMonth && dateish(lt.Kind):
		return addMonthsNode(l, r, op == "-", lt), true, nil
	case lt.Kind == KYearMonth && dateish(rt.Kind) && op == "+":
		return addMonthsNode(r, l, false, rt), true, nil
	case lt.Kind == KYearMonth || rt.Kind == KYearMonth:
		return fail()
	case op == "-" && dateish(lt.Kind) && dateish(rt.Kind):
		if lt.Kind == KDate && rt.Kind == KDate {
			return dateDiffNode(l, r, true), true, nil
		}
		return &arithNode{op: "-", t: TInterval, l: coerce(l, TTimestamp), r: coerce(r, TTimestamp)}, true, nil
	case lt.Kind == KDate && rt.Kind == KNull:
		if op == "+" { // Spark types DATE + NULL as a timestamp, DATE - NULL as an interval
			return nullConst(TTimestamp), true, nil
		}
		return nullConst(TIntervalDay), true, nil
	case lt.Kind == KDate && rt.Kind == KInt:
		return dateAddNode(l, r, op == "-"), true, nil
	case op == "+" && rt.Kind == KDate && lt.Kind == KNull:
		return nullConst(TTimestamp), true, nil
	case op == "+" && rt.Kind == KDate && lt.Kind == KInt:
		return dateAddNode(r, l, false), true, nil
	}
	return nil, false, nil // the errors of plain arithmetic (DATE + 1L, DATE + 1.5: Spark's date_add takes int days only)
}

// addMonthsDays is days since the epoch plus months, the day clamped to the end of the
// month (Java's LocalDate.plusMonths); ok is false when the result leaves the int range of
// days.
func addMonthsDays(days int64, months int64) (int64, bool) {
	y, m, d := civilFromDays(days)
	tot := int64(y)*12 + int64(m-1) + months
	if tot > 12*1e9 || tot < -12*1e9 {
		return 0, false
	}
	ny := floorDiv(tot, 12)
	nm := int(tot-ny*12) + 1
	d = min(d, daysIn(int(ny), nm))
	out := daysFromCivil(int(ny), nm, d)
	return out, out >= math.MinInt32 && out <= math.MaxInt32
}

// addMonthsNode is a date or timestamp plus (minus, with sub) a number of months: an int
// (add_months) or a year-month interval. The result has the type of x (a timestamp keeps
// its time of day); a result outside the int range of days is ARITHMETIC_OVERFLOW.
func addMonthsNode(x, months node, sub bool, t Type) node {
	return &funcNode{fn: registry["add_months"], t: t, args: []node{x, months}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
		ms := i32s(in[1])
		months := func(i int) int64 {
			if sub {
				return -int64(ms[i])
			}
			return int64(ms[i])
		}
		overflow := func(i int) (bool, error) {
			if !activeAt(active, i) {
				return false, nil
			}
			return false, c.fail("ARITHMETIC_OVERFLOW", i, "integer overflow: %s plus %d months is out of range", formatValue(t, in[0], i), months(i))
		}
		if t.Kind == KDate {
			return map2(c, TDate, in[0], in[1], i32s(in[0]), ms, func(i int, d, _ int32) (int32, bool, error) {
				v, ok := addMonthsDays(int64(d), months(i))
				if !ok {
					ok, err := overflow(i)
					return 0, ok, err
				}
				return int32(v), true, nil
			})
		}
		return map2(c, TTimestamp, in[0], in[1], i64s(in[0]), ms, func(i int, us int64, _ int32) (int64, bool, error) {
			days := floorDiv(us, usPerDay)
			v, ok := addMonthsDays(days, months(i))
			if ok {
				r := v*usPerDay + (us - days*usPerDay)
				if v > math.MaxInt64/usPerDay-1 || v < math.MinInt64/usPerDay+1 {
					ok = false
				} else {
					return r, true, nil
				}
			}
			ok, err := overflow(i)
			return 0, ok, err
		})
	}}
}

// monthsBetween is Spark's DateTimeUtils.monthsBetween in UTC: whole months when the days
// of the month match or both are the last of their month, else the difference with the
// rest counted in 31-day months, rounded to 8 digits when roundOff.
func monthsBetween(t1, t2 int64, roundOff bool) float64 {
	d1, d2 := floorDiv(t1, usPerDay), floorDiv(t2, usPerDay)
	y1, m1, dd1 := civilFromDays(d1)
	y2, m2, dd2 := civilFromDays(d2)
	monthDiff := float64((int64(y1)*12 + int64(m1)) - (int64(y2)*12 + int64(m2)))
	if dd1 == dd2 || dd1 == daysIn(y1, m1) && dd2 == daysIn(y2, m2) {
		return monthDiff
	}
	s1, s2 := (t1-d1*usPerDay)/1e6, (t2-d2*usPerDay)/1e6
	secondsDiff := float64(int64(dd1-dd2)*86400 + s1 - s2)
	diff := monthDiff + secondsDiff/(31*86400)
	if roundOff {
		return math.Floor(diff*1e8+0.5) / 1e8 // Java's Math.round
	}
	return diff
}

// epochScale converts a number of seconds, milliseconds or microseconds to µs (Spark's
// timestamp_seconds/_millis/_micros): integral values exactly, an overflow is
// ARITHMETIC_OVERFLOW; seconds may also be a decimal (an error if it has digits below a
// µs, as Spark's Decimal.toLongExact) or a double (NaN and the infinities give NULL, the
// fraction below a µs is truncated).
func epochScale(c *evalCtx, name string, t Type, mul int64, active []bool, a arrow.Array) (arrow.Array, error) {
	bad := func(i int, class, what string) (int64, bool, error) {
		if !activeAt(active, i) {
			return 0, false, nil
		}
		return 0, false, c.fail(class, i, "%s(%s): %s", name, formatValue(t, a, i), what)
	}
	switch t.Kind {
	case KDouble:
		return map1(c, TTimestamp, a, f64s(a), func(i int, f float64) (int64, bool, error) {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, false, nil
			}
			v := f * float64(mul)
			if v >= math.MaxInt64 || v < math.MinInt64 {
				return bad(i, "ARITHMETIC_OVERFLOW", "long overflow")
			}
			return int64(v), true, nil
		})
	case KDecimal:
		return map1(c, TTimestamp, a, decs(a), func(i int, d decimal128.Num) (int64, bool, error) {
			b := d.BigInt()
			b.Mul(b, big.NewInt(mul))
			q, m := new(big.Int).QuoRem(b, pow10(t.S), new(big.Int))
			if m.Sign() != 0 {
				return bad(i, "ARITHMETIC_EXCEPTION", "rounding necessary (a fraction below a microsecond)")
			}
			if !q.IsInt64() {
				return bad(i, "ARITHMETIC_OVERFLOW", "long overflow")
			}
			return q.Int64(), true, nil
		})
	case KInt: // cannot overflow
		return map1(c, TTimestamp, a, i32s(a), func(_ int, v int32) (int64, bool, error) { return int64(v) * mul, true, nil })
	}
	return map1(c, TTimestamp, a, i64s(a), func(i int, v int64) (int64, bool, error) {
		ok, r := mul64(v, mul)
		if !ok {
			return bad(i, "ARITHMETIC_OVERFLOW", "long overflow")
		}
		return r, true, nil
	})
}

func init() {
	// date_add, date_sub, datediff and add_months: a date, then days, a date or months
	for _, e := range []struct {
		name, sig, doc string
		mayFail        bool
		second         func(c *checker, call *Call, args []node, i int) (node, error)
		build          func(d, x node) node
	}{
		{"date_add", "date_add(date, days) → date", "date plus days (an int; a timestamp or string start is cast to date); DATE + int is the same", false,
			(*checker).daysArg, func(d, n node) node { return dateAddNode(d, n, false) }},
		{"date_sub", "date_sub(date, days) → date", "date minus days; DATE - int is the same", false,
			(*checker).daysArg, func(d, n node) node { return dateAddNode(d, n, true) }},
		{"datediff", "datediff(end, start) → int", "the number of days from start to end (dates; timestamps and strings are cast to date)", false,
			(*checker).dateArg, func(e, s node) node { return dateDiffNode(e, s, false) }},
		{"add_months", "add_months(date, n) → date", "date plus n months, the day clamped to the end of the month (2024-01-31 + 1: 2024-02-29)", true,
			(*checker).intArg, func(d, n node) node { return addMonthsNode(d, n, false, TDate) }},
	} {
		register(e.name, 2, 2, e.sig, e.doc, e.mayFail, func(c *checker, call *Call, args []node) (node, error) {
			d, err := c.dateArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			x, err := e.second(c, call, args, 1)
			if err != nil {
				return nil, err
			}
			return e.build(d, x), nil
		})
	}
	register("months_between", 2, 3, "months_between(ts1, ts2[, roundOff]) → double", "the months from ts2 to ts1: whole when the days match or both are month ends, else counting 31-day months; rounded to 8 digits unless roundOff is false", false, func(c *checker, call *Call, args []node) (node, error) {
		ins := make([]node, len(args))
		for i := range 2 {
			a, err := c.tsArg(call, args, i)
			if err != nil {
				return nil, err
			}
			ins[i] = a
		}
		if len(args) == 3 {
			b, err := c.toBool(call.Args[2], args[2], "months_between")
			if err != nil {
				return nil, err
			}
			ins[2] = b
		}
		return &funcNode{fn: registry["months_between"], t: TDouble, args: ins, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			var round *array.Boolean
			if len(in) == 3 {
				round = in[2].(*array.Boolean)
			}
			return map2(c, TDouble, in[0], in[1], i64s(in[0]), i64s(in[1]), func(i int, a, b int64) (float64, bool, error) {
				if round != nil && round.IsNull(i) {
					return 0, false, nil
				}
				return monthsBetween(a, b, round == nil || round.Value(i)), true, nil
			})
		}}, nil
	})

	for _, e := range []struct {
		name     string
		mul      int64
		integral bool
	}{{"timestamp_seconds", 1e6, false}, {"timestamp_millis", 1e3, true}, {"timestamp_micros", 1, true}} {
		want := "a number"
		if e.integral {
			want = "an integral number"
		}
		register(e.name, 1, 1, e.name+"(n) → timestamp", "the timestamp n "+e.name[len("timestamp_"):]+" after the epoch (overflow: ARITHMETIC_OVERFLOW)", true, func(c *checker, call *Call, args []node) (node, error) {
			t := args[0].Type()
			switch {
			case t.Kind == KNull:
				return nullConst(TTimestamp), nil
			case t.integral(), !e.integral && t.numeric():
			default:
				return nil, c.argErr(call, 0, t, want)
			}
			return &funcNode{fn: registry[e.name], t: TTimestamp, args: args[:1], impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
				return epochScale(c, e.name, t, e.mul, active, in[0])
			}}, nil
		})
	}
	for _, e := range []struct {
		name string
		div  int64
	}{{"unix_seconds", 1e6}, {"unix_millis", 1e3}, {"unix_micros", 1}} {
		register(e.name, 1, 1, e.name+"(ts) → bigint", "the "+e.name[len("unix_"):]+" since the epoch, rounded down", false, func(c *checker, call *Call, args []node) (node, error) {
			if k := args[0].Type().Kind; k != KTimestamp && k != KNull { // Spark casts no date or string here
				return nil, c.argErr(call, 0, args[0].Type(), "a timestamp")
			}
			return &funcNode{fn: registry[e.name], t: TBigInt, args: []node{coerce(args[0], TTimestamp)}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				return map1(c, TBigInt, in[0], i64s(in[0]), func(_ int, us int64) (int64, bool, error) { return floorDiv(us, e.div), true, nil })
			}}, nil
		})
	}
	register("unix_date", 1, 1, "unix_date(date) → int", "the days since 1970-01-01", false, func(c *checker, call *Call, args []node) (node, error) {
		if k := args[0].Type().Kind; k != KDate && k != KNull {
			return nil, c.argErr(call, 0, args[0].Type(), "a date")
		}
		return &funcNode{fn: registry["unix_date"], t: TInt, args: []node{coerce(args[0], TDate)}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			return retype(in[0], TInt.Arrow()), nil // the same int32 days
		}}, nil
	})
	register("date_from_unix_date", 1, 1, "date_from_unix_date(days) → date", "the date days after 1970-01-01", false, func(c *checker, call *Call, args []node) (node, error) {
		n, err := c.intArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["date_from_unix_date"], t: TDate, args: []node{n}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			return retype(in[0], TDate.Arrow()), nil
		}}, nil
	})
}

// yearMonthLit is the constant of INTERVAL n YEAR, INTERVAL n MONTH or INTERVAL 'y-m' YEAR
// TO MONTH: whole numbers only (Spark: "year cannot have fractional part"), months 0 to 11
// in the y-m form, the total within the int range of months.
func (c *checker) yearMonthLit(l *Lit) (node, error) {
	text := strings.TrimSpace(l.Text)
	neg := false
	for len(text) > 0 && (text[0] == '-' || text[0] == '+') { // INTERVAL -'-1' YEAR is 1 year
		neg = neg != (text[0] == '-')
		text = strings.TrimSpace(text[1:])
	}
	bad := func(why string) (node, error) {
		return nil, c.errf(l.At, "interval %q %s: %s", l.Text, l.Unit, why)
	}
	var months int64
	switch l.Unit {
	case "YEAR TO MONTH":
		ys, ms, ok := strings.Cut(text, "-")
		y, err1 := strconv.ParseInt(ys, 10, 64)
		m, err2 := strconv.ParseInt(ms, 10, 64)
		if !ok || err1 != nil || err2 != nil || y < 0 || m < 0 {
			return bad("the form is 'years-months', as in '1-2'")
		}
		if m > 11 {
			return bad("the months must be 0 to 11")
		}
		if y > math.MaxInt32/12+1 {
			return bad("out of the int range of months")
		}
		months = y*12 + m
	default:
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return bad("a year or month quantity must be a whole number")
		}
		months = v
		if l.Unit == "YEAR" {
			if v > math.MaxInt32/12+1 {
				return bad("out of the int range of months")
			}
			months = v * 12
		}
	}
	if neg {
		months = -months
	}
	if months > math.MaxInt32 || months < math.MinInt32 {
		return bad("out of the int range of months")
	}
	t := map[string]Type{"YEAR": YearMonth(0, 0), "MONTH": YearMonth(1, 1), "YEAR TO MONTH": YearMonth(0, 1)}[l.Unit]
	return &constNode{t: t, sc: scalar.NewInt32Scalar(int32(months))}, nil
}

// appendYearMonth prints a year-month interval as CAST(… AS STRING) does in Spark:
// INTERVAL '-1-2' YEAR TO MONTH, INTERVAL '14' MONTH, INTERVAL '1' YEAR.
func appendYearMonth(b []byte, t Type, months int64) []byte {
	b = append(b, "INTERVAL '"...)
	if months < 0 {
		b = append(b, '-')
		months = -months
	}
	switch {
	case t.P == 0 && t.S == 0:
		b = strconv.AppendInt(b, months/12, 10)
		return append(b, "' YEAR"...)
	case t.P == 1:
		b = strconv.AppendInt(b, months, 10)
		return append(b, "' MONTH"...)
	}
	b = strconv.AppendInt(b, months/12, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, months%12, 10)
	return append(b, "' YEAR TO MONTH"...)
}

// appendDayTime prints a day-time interval of us µs as CAST(… AS STRING) does in Spark:
// INTERVAL '-3' DAY for an interval of whole days, else INTERVAL 'd hh:mm:ss[.ffffff]' DAY
// TO SECOND (Spark names a literal's own unit instead: INTERVAL '02' HOUR).
func appendDayTime(b []byte, t Type, us int64) []byte {
	b = append(b, "INTERVAL '"...)
	neg := us < 0
	if neg {
		b = append(b, '-')
	}
	rest := uint64(us)
	if neg {
		rest = -rest
	}
	days := rest / usPerDay
	rest %= usPerDay
	if t.P == 1 {
		b = strconv.AppendUint(b, days, 10)
		return append(b, "' DAY"...)
	}
	b = strconv.AppendUint(b, days, 10)
	for k, unit := range []uint64{3600e6, 60e6, 1e6} {
		b = append(b, " ::"[k])
		v := rest / unit
		rest %= unit
		if v < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendUint(b, v, 10)
	}
	if rest != 0 {
		f := strconv.FormatUint(1e6+rest, 10)[1:]
		b = append(b, '.')
		b = append(b, strings.TrimRight(f, "0")...)
	}
	return append(b, "' DAY TO SECOND"...)
}
