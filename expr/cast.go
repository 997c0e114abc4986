package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// castable reports whether Spark allows CAST(from AS to).
func castable(from, to Type) bool {
	if from == to || from.Kind == KNull || to.Kind == KString || from.Kind == to.Kind && (from.Kind == KYearMonth || from.Kind == KInterval) {
		return true
	}
	switch from.Kind {
	case KString:
		return to.Kind != KInterval && to.Kind != KYearMonth && to.Kind != KNull
	case KBool:
		return to.numeric() || to.Kind == KBool
	case KInt, KBigInt, KDecimal, KDouble:
		return to.numeric() || to.Kind == KBool || to.Kind == KTimestamp // seconds since the epoch
	case KDate:
		return to.Kind == KTimestamp
	case KTimestamp:
		return to.Kind == KDate || to.Kind == KInt || to.Kind == KBigInt || to.Kind == KDouble
	}
	return false
}

// castCanFail reports whether some value of from has no value in to (ANSI: an error).
func castCanFail(from, to Type) bool {
	switch {
	case from == to, from.Kind == KNull, to.Kind == KString, to.Kind == KBool && from.Kind != KString,
		from.Kind == to.Kind && (from.Kind == KYearMonth || from.Kind == KInterval):
		return false
	case from.Kind == KInt && (to.Kind == KBigInt || to.Kind == KDouble),
		from.Kind == KBigInt && to.Kind == KDouble, from.Kind == KBool,
		from.Kind == KDecimal && to.Kind == KDouble,
		from.Kind == KDate, from.Kind == KTimestamp && to.Kind != KInt, from.Kind == KString && to.Kind == KBinary:
		return false
	}
	return true
}

// castNode is CAST / TRY_CAST (or an implicit cast) with Spark's ANSI semantics: a value
// that does not fit or does not parse is an error naming the row (TRY_CAST: null).
type castNode struct {
	x        node
	to       Type
	try      bool
	implicit bool
}

func (n *castNode) Type() Type       { return n.to }
func (n *castNode) children() []node { return []node{n.x} }

func (n *castNode) eval(c *evalCtx, active []bool) (arrow.Array, error) {
	from := n.x.Type()
	x, err := c.arr(n.x, active)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	if from == n.to {
		x.Retain()
		return x, nil
	}
	if from.Kind == KNull {
		return array.MakeArrayOfNull(c.mem, n.to.Arrow(), c.n), nil
	}
	if from.Kind == n.to.Kind && (from.Kind == KYearMonth || from.Kind == KInterval) { // months or µs either way
		x.Retain()
		return x, nil
	}
	if n.to.nested() {
		return castNested(c, x, n.to)
	}
	if from.Kind == KBinary || n.to.Kind == KBinary {
		return castBinary(n.to, x), nil
	}
	// widening casts that cannot fail: the Arrow cast kernel
	if !castCanFail(from, n.to) && n.to.Kind != KString && n.to.Kind != KBool && from.Kind != KBool && from.Kind != KTimestamp && from.Kind != KDecimal {
		return compute.CastArray(c.ctx, x, compute.SafeCastOptions(n.to.Arrow()))
	}
	fail := func(i int, class, format string, args ...any) error {
		if n.try || !activeAt(active, i) {
			return nil
		}
		return c.fail(class, i, format, args...)
	}
	if n.to.Kind == KTimestamp && from.numeric() || from.Kind == KTimestamp && n.to.numeric() {
		return n.epochCast(c, x, fail)
	}
	switch n.to.Kind {
	case KString:
		return castToString(c, from, x), nil
	case KBool:
		out := newBoolOut(c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			switch from.Kind {
			case KString:
				s := strings.ToLower(trimAll(x.(*array.String).Value(i)))
				switch s {
				case "t", "true", "y", "yes", "1":
					out.set(i, true)
				case "f", "false", "n", "no", "0":
				default:
					if err := fail(i, "CAST_INVALID_INPUT", "the value %s of type string cannot be cast to boolean", quoteValue(x.(*array.String).Value(i))); err != nil {
						return nil, err
					}
					out.setNull(i)
				}
			default:
				out.set(i, asFloat(from, x, i) != 0)
			}
		}
		return out.array(), nil
	case KInt, KBigInt:
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if n.to.Kind == KBigInt {
			lo, hi = math.MinInt64, math.MaxInt64
		}
		out := newOut[int64](c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			v, ok, class := int64(0), true, "CAST_OVERFLOW"
			switch from.Kind {
			case KBool:
				if x.(*array.Boolean).Value(i) {
					v = 1
				}
			case KInt:
				v = int64(i32s(x)[i])
			case KBigInt:
				v = i64s(x)[i]
			case KDouble:
				f := math.Trunc(f64s(x)[i])
				ok = f >= float64(lo) && f < -float64(lo) // NaN fails too
				v = int64(f)
			case KDecimal:
				b := decs(x)[i].BigInt()
				b.Quo(b, pow10(from.S))
				ok = b.IsInt64()
				v = b.Int64()
			case KString:
				s := trimAll(x.(*array.String).Value(i))
				var err error
				v, err = strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
				if err != nil || s == "" || strings.HasPrefix(s, "+-") || strings.HasPrefix(s, "+") && len(s) > 1 && s[1] == '+' {
					ok, class = false, "CAST_INVALID_INPUT"
					if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
						class = "CAST_INVALID_INPUT"
					}
				}
			}
			if ok && (v < lo || v > hi) {
				ok = false
				if from.Kind == KString {
					class = "CAST_INVALID_INPUT"
				}
			}
			if !ok {
				if err := fail(i, class, "the value %s of type %s cannot be cast to %s", valueText(from, x, i), from, n.to); err != nil {
					return nil, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = v
		}
		a := out.array(TBigInt)
		if n.to.Kind == KInt {
			defer a.Release()
			return compute.CastArray(c.ctx, a, compute.UnsafeCastOptions(arrow.PrimitiveTypes.Int32))
		}
		return a, nil
	case KDouble:
		out := newOut[float64](c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			if from.Kind == KString {
				s := trimAll(x.(*array.String).Value(i))
				if f, ok := specialDouble(s); ok {
					out.vals[i] = f
					continue
				}
				f, err := strconv.ParseFloat(strings.TrimRight(s, "dDfF"), 64)
				if err != nil && !isRangeErr(err) || strings.HasPrefix(strings.ToLower(s), "0x") || strings.ContainsAny(s, "_iInN") {
					if err := fail(i, "CAST_INVALID_INPUT", "the value %s of type string cannot be cast to double", quoteValue(x.(*array.String).Value(i))); err != nil {
						return nil, err
					}
					out.setNull(i)
					continue
				}
				out.vals[i] = f
				continue
			}
			out.vals[i] = asFloat(from, x, i)
		}
		return out.array(TDouble), nil
	case KDecimal:
		out := newOut[decimal128.Num](c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			if from.Kind == KDouble && (math.IsNaN(f64s(x)[i]) || math.IsInf(f64s(x)[i], 0)) {
				out.setNull(i) // Spark's Decimal(double) throws NumberFormatException, which its cast maps to NULL, ANSI or not
				continue
			}
			r, ok := asRat(from, x, i)
			class := "NUMERIC_VALUE_OUT_OF_RANGE"
			if !ok {
				class = "CAST_INVALID_INPUT"
			}
			var v *big.Int
			if ok {
				v = ratToScaled(r, n.to.S)
				ok = fitsPrecision(v, n.to.P)
			}
			if !ok {
				if err := fail(i, class, "the value %s of type %s cannot be cast to %s", valueText(from, x, i), from, n.to); err != nil {
					return nil, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = decimal128.FromBigInt(v)
		}
		return out.array(n.to), nil
	case KDate:
		out := newOut[int32](c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			if from.Kind == KTimestamp {
				out.vals[i] = int32(floorDiv(i64s(x)[i], usPerDay))
				continue
			}
			d, ok := parseDate(x.(*array.String).Value(i))
			if !ok {
				if err := fail(i, "CAST_INVALID_INPUT", "the value %s of type string cannot be cast to date", quoteValue(x.(*array.String).Value(i))); err != nil {
					return nil, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = d
		}
		return out.array(TDate), nil
	case KTimestamp:
		out := newOut[int64](c.n)
		for i := 0; i < c.n; i++ {
			if x.IsNull(i) {
				out.setNull(i)
				continue
			}
			ts, ok := parseTimestamp(x.(*array.String).Value(i))
			if !ok {
				if err := fail(i, "CAST_INVALID_INPUT", "the value %s of type string cannot be cast to timestamp", quoteValue(x.(*array.String).Value(i))); err != nil {
					return nil, err
				}
				out.setNull(i)
				continue
			}
			out.vals[i] = ts
		}
		return out.array(TTimestamp), nil
	}
	return nil, c.fail("INTERNAL", 0, "no cast from %s to %s", from, n.to)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// trimAll trims the characters Spark's UTF8String.trimAll does before a cast: code points
// up to and including the space.
func trimAll(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func quoteValue(s string) string { return "'" + s + "'" }

// valueText prints row i of a for an error message.
func valueText(t Type, a arrow.Array, i int) string {
	if t.Kind == KString {
		return quoteValue(a.(*array.String).Value(i))
	}
	return formatValue(t, a, i)
}

func asFloat(t Type, a arrow.Array, i int) float64 {
	switch t.Kind {
	case KBool:
		if a.(*array.Boolean).Value(i) {
			return 1
		}
		return 0
	case KInt:
		return float64(i32s(a)[i])
	case KBigInt:
		return float64(i64s(a)[i])
	case KDouble:
		return f64s(a)[i]
	case KDecimal:
		f, _ := strconv.ParseFloat(decString(decs(a)[i].BigInt(), t.S), 64)
		return f
	}
	return math.NaN()
}

// asRat is row i of a numeric or string column as an exact rational (doubles through their
// shortest decimal form, as Spark's Decimal(double) does); ok is false for NaN, Inf or a
// string that is not a number.
func asRat(t Type, a arrow.Array, i int) (*big.Rat, bool) {
	switch t.Kind {
	case KBool, KInt, KBigInt:
		return new(big.Rat).SetFloat64(asFloat(t, a, i)), true
	case KDecimal:
		return new(big.Rat).SetFrac(decs(a)[i].BigInt(), pow10(t.S)), true
	case KDouble:
		f := f64s(a)[i]
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'e', -1, 64))
		return r, ok
	case KString:
		s := trimAll(a.(*array.String).Value(i))
		if s == "" || strings.ContainsAny(s, "/_xX") {
			return nil, false
		}
		return new(big.Rat).SetString(s)
	}
	return nil, false
}

// ratToScaled is r·10^s rounded HALF_UP to an integer.
func ratToScaled(r *big.Rat, s int) *big.Int {
	num := new(big.Int).Mul(r.Num(), pow10(s))
	den := r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	m.Abs(m).Mul(m, big.NewInt(2))
	if m.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// decString prints an unscaled decimal value with scale s ("-1.50").
func decString(v *big.Int, s int) string {
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).String()
	if s > 0 {
		if len(digits) <= s {
			digits = strings.Repeat("0", s-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// castToString formats every row as Spark's CAST(x AS STRING) does.
func castToString(c *evalCtx, t Type, x arrow.Array) arrow.Array {
	out := newStrOut(c.n, c.n*8)
	var buf []byte
	for i := 0; i < c.n; i++ {
		if x.IsNull(i) {
			out.appendNull()
			continue
		}
		buf = appendValue(buf[:0], t, x, i)
		out.appendBytes(buf)
	}
	return out.array()
}

// formatValue prints row i as Spark's CAST AS STRING would.
func formatValue(t Type, a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return string(appendValue(nil, t, a, i))
}

func appendValue(b []byte, t Type, a arrow.Array, i int) []byte {
	switch t.Kind {
	case KBool:
		return strconv.AppendBool(b, a.(*array.Boolean).Value(i))
	case KInt:
		return strconv.AppendInt(b, int64(i32s(a)[i]), 10)
	case KYearMonth:
		return appendYearMonth(b, t, int64(i32s(a)[i]))
	case KBigInt:
		return strconv.AppendInt(b, i64s(a)[i], 10)
	case KDouble:
		return appendJavaDouble(b, f64s(a)[i])
	case KDecimal:
		return append(b, decString(decs(a)[i].BigInt(), t.S)...)
	case KString:
		return append(b, a.(*array.String).Value(i)...)
	case KBinary:
		return append(b, a.(*array.Binary).Value(i)...)
	case KDate:
		return time.Unix(int64(i32s(a)[i])*86400, 0).UTC().AppendFormat(b, "2006-01-02")
	case KTimestamp:
		us := i64s(a)[i]
		tm := time.UnixMicro(us).UTC()
		b = tm.AppendFormat(b, "2006-01-02 15:04:05")
		if frac := tm.Nanosecond() / 1000; frac != 0 {
			f := strconv.Itoa(1000000 + frac)[1:]
			b = append(b, '.')
			b = append(b, strings.TrimRight(f, "0")...)
		}
		return b
	case KInterval:
		return appendDayTime(b, t, i64s(a)[i])
	case KArray, KStruct, KMap:
		return appendNested(b, t, a, i)
	}
	return b
}

// appendJavaDouble formats like Java's Double.toString (which Spark's cast uses): plain
// notation with at least one fraction digit for 1e-3 ≤ |d| < 1e7, else d.dddE±n.
func appendJavaDouble(b []byte, d float64) []byte {
	switch {
	case math.IsNaN(d):
		return append(b, "NaN"...)
	case math.IsInf(d, 1):
		return append(b, "Infinity"...)
	case math.IsInf(d, -1):
		return append(b, "-Infinity"...)
	case d == 0:
		if math.Signbit(d) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	abs := math.Abs(d)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(d, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return append(b, s...)
	}
	s := strconv.FormatFloat(d, 'e', -1, 64) // 1.2345e+08
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	b = append(b, mant...)
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(e), 10)
}

const usPerDay = 86400 * 1000000

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// parseDate reads Spark's date forms: [+-]yyyy[-[m]m[-[d]d]] optionally followed by a space
// or 'T' and anything (a time part, ignored), after trimming.
func parseDate(s string) (int32, bool) {
	s = trimAll(s)
	if i := strings.IndexAny(s, " T"); i >= 0 {
		s = s[:i]
	}
	y, m, d, ok := parseYMD(s)
	if !ok {
		return 0, false
	}
	return int32(daysFromCivil(y, m, d)), true
}

func parseYMD(s string) (y, m, d int, ok bool) {
	parts := strings.Split(s, "-")
	neg := false
	if len(parts) > 0 && parts[0] == "" && len(parts) > 1 {
		neg, parts = true, parts[1:]
	}
	if len(parts) == 0 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	nums := []int{0, 1, 1}
	for k, p := range parts {
		if p == "" || len(p) > 2 && k > 0 || k == 0 && (len(p) < 4 || len(p) > 7) {
			return 0, 0, 0, false
		}
		for _, ch := range p {
			if ch < '0' || ch > '9' {
				return 0, 0, 0, false
			}
		}
		nums[k], _ = strconv.Atoi(p)
	}
	y, m, d = nums[0], nums[1], nums[2]
	if neg {
		y = -y
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// parseTimestamp reads yyyy-mm-dd[( |T)hh:mm[:ss[.ffffff]]][Z|±hh:mm|UTC] after trimming,
// in UTC (the session time zone this package fixes).
func parseTimestamp(s string) (int64, bool) {
	s = trimAll(s)
	datePart, rest := s, ""
	if i := strings.IndexAny(s, " T"); i >= 0 {
		datePart, rest = s[:i], strings.TrimSpace(s[i+1:])
	}
	y, m, d, ok := parseYMD(datePart)
	if !ok {
		return 0, false
	}
	us := daysFromCivil(y, m, d) * usPerDay
	if rest == "" {
		return us, true
	}
	// zone suffix
	offset := int64(0)
	switch {
	case strings.HasSuffix(rest, "Z"):
		rest = rest[:len(rest)-1]
	case strings.HasSuffix(rest, "UTC"):
		rest = strings.TrimSpace(rest[:len(rest)-3])
	default:
		if i := strings.LastIndexAny(rest, "+-"); i > 0 {
			z := rest[i+1:]
			hh, mm, found := strings.Cut(z, ":")
			h, err1 := strconv.Atoi(hh)
			mi := 0
			var err2 error
			if found {
				mi, err2 = strconv.Atoi(mm)
			}
			if err1 != nil || err2 != nil || h > 18 || mi > 59 {
				return 0, false
			}
			offset = int64(h*3600+mi*60) * 1e6
			if rest[i] == '+' {
				offset = -offset
			}
			rest = rest[:i]
		}
	}
	hms, frac, _ := strings.Cut(rest, ".")
	fields := strings.Split(hms, ":")
	if len(fields) < 2 || len(fields) > 3 {
		return 0, false
	}
	lim := []int{23, 59, 59}
	var tod int64
	for k, f := range fields {
		if f == "" || len(f) > 2 {
			return 0, false
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 || v > lim[k] {
			return 0, false
		}
		tod = tod*60 + int64(v)
	}
	if len(fields) == 2 {
		tod *= 60
	}
	us += tod * 1e6
	if frac != "" {
		if len(frac) > 9 {
			return 0, false
		}
		for _, ch := range frac {
			if ch < '0' || ch > '9' {
				return 0, false
			}
		}
		f := (frac + "000000")[:6]
		v, _ := strconv.Atoi(f)
		us += int64(v)
	}
	return us + offset, true
}

// daysFromCivil is days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	yy := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

// specialDouble reads the spellings of NaN and the infinities that CAST(str AS DOUBLE)
// accepts in Spark 4: Java's Double.parseDouble ones (NaN, Infinity, signed) and those of
// Cast.processFloatingPointSpecialLiterals (inf, infinity, nan in any case, the infinities
// signed). Other words (infd, -nan, infinit) are not numbers.
func specialDouble(s string) (float64, bool) {
	switch s {
	case "NaN", "+NaN", "-NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	if len(s) > len("+infinity") {
		return 0, false
	}
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// epochCast is CAST between a number of seconds since the epoch and a timestamp, as Spark
// 4 does it: int and bigint seconds scale to µs saturating at the bigint range (Java's
// SECONDS.toMicros); a decimal or double truncates below the µs, an out-of-range double is
// CAST_OVERFLOW and NaN or an infinity CAST_INVALID_INPUT. Back, a timestamp is its
// seconds rounded down (bigint; int fails past the int range), or exactly (double).
func (n *castNode) epochCast(c *evalCtx, x arrow.Array, fail func(i int, class, format string, args ...any) error) (arrow.Array, error) {
	from := n.x.Type()
	cantCast := func(i int, class string) (int64, bool, error) {
		return 0, false, fail(i, class, "the value %s of type %s cannot be cast to %s", valueText(from, x, i), from, n.to)
	}
	switch {
	case n.to.Kind == KDouble:
		return map1(c, TDouble, x, i64s(x), func(_ int, us int64) (float64, bool, error) { return float64(us) / 1e6, true, nil })
	case n.to.Kind == KInt || n.to.Kind == KBigInt:
		a, err := map1(c, TBigInt, x, i64s(x), func(i int, us int64) (int64, bool, error) {
			s := floorDiv(us, 1e6)
			if n.to.Kind == KInt && (s < math.MinInt32 || s > math.MaxInt32) {
				return cantCast(i, "CAST_OVERFLOW")
			}
			return s, true, nil
		})
		if err != nil || n.to.Kind == KBigInt {
			return a, err
		}
		defer a.Release()
		return compute.CastArray(c.ctx, a, compute.UnsafeCastOptions(arrow.PrimitiveTypes.Int32))
	}
	switch from.Kind {
	case KInt:
		return map1(c, TTimestamp, x, i32s(x), func(_ int, s int32) (int64, bool, error) { return int64(s) * 1e6, true, nil })
	case KBigInt:
		return map1(c, TTimestamp, x, i64s(x), func(_ int, s int64) (int64, bool, error) {
			switch {
			case s > math.MaxInt64/1000000:
				return math.MaxInt64, true, nil
			case s < math.MinInt64/1000000:
				return math.MinInt64, true, nil
			}
			return s * 1e6, true, nil
		})
	case KDouble:
		return map1(c, TTimestamp, x, f64s(x), func(i int, f float64) (int64, bool, error) {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return cantCast(i, "CAST_INVALID_INPUT")
			}
			us := math.Trunc(f * 1e6)
			if us >= math.MaxInt64 || us < math.MinInt64 {
				return cantCast(i, "CAST_OVERFLOW")
			}
			return int64(us), true, nil
		})
	}
	return map1(c, TTimestamp, x, decs(x), func(i int, d decimal128.Num) (int64, bool, error) {
		b := d.BigInt()
		b.Mul(b, big.NewInt(1e6)).Quo(b, pow10(from.S)) // truncated toward zero
		if !b.IsInt64() {
			return cantCast(i, "CAST_OVERFLOW")
		}
		return b.Int64(), true, nil
	})
}
