package delta

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/expr"
)

// File pruning: what a data file's partition values and its add action's statistics
// (PROTOCOL.md "Per-file Statistics": numRecords, minValues, maxValues, nullCount) prove about
// a --where predicate, derived over the parsed expression tree. The derivation is
// conservative: it says a file has no matching row only when that follows from the values
// whatever the writer did within the protocol, and it knows only comparisons (= <> < <= > >=,
// IN, BETWEEN, IS [NOT] NULL) of one column with literals, joined by AND, OR and NOT
// (pushed down to the comparisons: Kleene logic keeps De Morgan's laws and x < c ≡ NOT x >= c,
// NULLs included). Anything else — a function, arithmetic on the column, two columns, a
// column of a type without usable statistics, a literal whose cast fails — says nothing, and
// the file is read. Rows of a file that is read are always filtered by the compiled predicate.
//
// The comparison happens in the type Spark compares in (expr's coercion): the literal is cast
// to it by expr itself, the statistics are converted in Go, and only when the column's cast
// to that type is monotone (numbers to a wider number or to double, a date to a timestamp);
// a string column compared with a number, whose cast is not monotone, says nothing.
//
// Statistics are taken as bounds, never as exact values:
//   - strings: min is a prefix of the real minimum (so still a lower bound); max may be a
//     truncated prefix with a tie-breaker (Spark, delta-rs and streamkit cut at 32 code
//     points, configurable), so every value is taken to be below max with its last code point
//     dropped and the last byte incremented;
//   - timestamps: stats have millisecond precision (max truncated down), so both bounds are
//     widened by 999 µs;
//   - floats: NaN rows may hide beyond max (writers leave NaN out of min/max, or omit both),
//     so x > c, x >= c and x <> c never prune a float column, and a NaN literal says nothing;
//     float32 statistics are parsed at 32 bits, as the values are;
//   - a missing bound, nullCount or numRecords says nothing; a column whose nullCount equals
//     numRecords is all null, so no comparison on it is true; a file of 0 rows has no match.
//
// Partition values are exact: a comparison on a partition column is decided per file, so a
// predicate on partition columns only is decided without reading a row (VerdictAll skips the
// evaluation). Statistics never give VerdictAll: other writers' statistics may be inexact
// (DELTA.md "Interop traps"), and a wrong "all rows match" would let rows through.

// Verdict is what a data file's partition values and statistics prove about a --where
// predicate.
type Verdict int8

const (
	// VerdictSome: some rows may match; read the file and evaluate the predicate on its rows.
	VerdictSome Verdict = iota
	// VerdictNone: no row can match; the file is skipped without being opened.
	VerdictNone
	// VerdictAll: every row matches (decided by partition values); read the file without
	// evaluating the predicate.
	VerdictAll
)

type pnode interface {
	verdict(f *fileFacts) (Verdict, error)
}

type pAnd struct{ l, r pnode }
type pOr struct{ l, r pnode }
type pConst Verdict

func (c pConst) verdict(*fileFacts) (Verdict, error) { return Verdict(c), nil }

func (n pAnd) verdict(f *fileFacts) (Verdict, error) {
	l, err := n.l.verdict(f)
	if err != nil || l == VerdictNone {
		return l, err
	}
	r, err := n.r.verdict(f)
	if err != nil || r == VerdictNone {
		return r, err
	}
	if l == VerdictAll && r == VerdictAll {
		return VerdictAll, nil
	}
	return VerdictSome, nil
}

func (n pOr) verdict(f *fileFacts) (Verdict, error) {
	l, err := n.l.verdict(f)
	if err != nil || l == VerdictAll {
		return l, err
	}
	r, err := n.r.verdict(f)
	if err != nil || r == VerdictAll {
		return r, err
	}
	if l == VerdictNone && r == VerdictNone {
		return VerdictNone, nil
	}
	return VerdictSome, nil
}

// pcol is a column a comparison reads: a partition column, or a (nested) data column whose
// statistics are found under stats, its physical path.
type pcol struct {
	part  string         // partition column name; "" for a data column
	stats []string       // the path of the column's statistics (physical names)
	dt    arrow.DataType // the column's canonical Arrow type
	t     expr.Type      // the type expressions see it as
	// fromFloat: a double column widened from float, whose older files' statistics are
	// floats' text (widenFloatStat).
	fromFloat bool
}

// domain is the type a comparison is evaluated in, and how its values are held in a dval.
type domain int8

const (
	domExact  domain = iota // integers and decimals, exactly (r)
	domDouble               // double (f), NaN above every other value
	domString               // bytewise (s)
	domDays                 // dates, days since the epoch (i)
	domMicros               // timestamps, µs since the epoch (i)
	domBool                 // false < true (i)
)

type dval struct {
	r *big.Rat
	f float64
	s string
	i int64
}

func dcompare(d domain, a, b dval) int {
	switch d {
	case domExact:
		return a.r.Cmp(b.r)
	case domDouble:
		return expr.CompareDouble(a.f, b.f)
	case domString:
		return strings.Compare(a.s, b.s)
	}
	switch {
	case a.i < b.i:
		return -1
	case a.i > b.i:
		return 1
	}
	return 0
}

// pCmp is `col op lit` (lit on the right; op one of = != < <= > >=); null: lit is NULL.
type pCmp struct {
	col  *pcol
	op   string
	dom  domain
	lit  dval
	null bool
}

// pNull is `col IS [NOT] NULL`.
type pNull struct {
	col *pcol
	not bool
}

// bounds is what a file says about the non-null values of one column in one domain: every
// one is ≥ lo (hasLo) and ≤ hi (hasHi; < hi with hiStrict). allNull: every row is null;
// noNull: none is. nan: NaN values may exist outside [lo, hi]. exact: the file holds the
// single value lo (a partition value; null when allNull).
type bounds struct {
	allNull, noNull bool
	lo, hi          dval
	hasLo, hasHi    bool
	hiStrict        bool
	nan             bool
	exact           bool
}

func (n *pCmp) verdict(f *fileFacts) (Verdict, error) {
	if n.null {
		return VerdictNone, nil // col op NULL is NULL on every row
	}
	b, err := f.bounds(n.col, n.dom)
	if err != nil {
		return VerdictSome, err
	}
	if b.allNull {
		return VerdictNone, nil
	}
	if b.exact {
		if holds(n.op, dcompare(n.dom, b.lo, n.lit)) {
			return VerdictAll, nil
		}
		return VerdictNone, nil
	}
	if n.dom == domDouble && math.IsNaN(n.lit.f) {
		return VerdictSome, nil
	}
	c := func(a dval) int { return dcompare(n.dom, a, n.lit) } // sign of bound - lit
	// hiAbove: some value ≤ hi (< hi when strict) can be above lit; hiReach: can equal lit.
	hiAbove := !b.hasHi || c(b.hi) > 0
	hiReach := !b.hasHi || c(b.hi) > 0 || (!b.hiStrict && c(b.hi) == 0)
	possible := true
	switch n.op {
	case "=":
		possible = (!b.hasLo || c(b.lo) <= 0) && hiReach
	case "<":
		possible = !b.hasLo || c(b.lo) < 0
	case "<=":
		possible = !b.hasLo || c(b.lo) <= 0
	case ">":
		possible = b.nan || hiAbove
	case ">=":
		possible = b.nan || hiReach
	}
	// "!=" is never ruled out by bounds: only an exact value is known to equal lit.
	if !possible {
		return VerdictNone, nil
	}
	return VerdictSome, nil
}

// holds applies op to the sign of a comparison.
func holds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

func (n *pNull) verdict(f *fileFacts) (Verdict, error) {
	all, none, err := f.nulls(n.col)
	if err != nil {
		return VerdictSome, err
	}
	if n.not {
		all, none = none, all
	}
	// all: every row satisfies the test; none: no row does.
	switch {
	case none:
		return VerdictNone, nil
	case all && n.col.part != "": // a null count from statistics never proves every row matches
		return VerdictAll, nil
	}
	return VerdictSome, nil
}

// fileFacts is one data file as the derivation sees it: its partition values and its parsed
// statistics (parsed on first use).
type fileFacts struct {
	add    *dl.Add
	types  map[string]arrow.DataType // partition column types
	phys   map[string]string         // column mapping: partition value keys
	parsed bool
	stats  *rawStats // nil: none or unreadable
}

type rawStats struct {
	NumRecords *int64                     `json:"numRecords"`
	MinValues  map[string]json.RawMessage `json:"minValues"`
	MaxValues  map[string]json.RawMessage `json:"maxValues"`
	NullCount  map[string]json.RawMessage `json:"nullCount"`
}

func (f *fileFacts) raw() *rawStats {
	if !f.parsed {
		f.parsed = true
		if f.add.Stats != "" {
			var s rawStats
			if json.Unmarshal([]byte(f.add.Stats), &s) == nil {
				f.stats = &s
			}
		}
	}
	return f.stats
}

// empty reports a file whose statistics say it has no rows.
func (f *fileFacts) empty() bool {
	s := f.raw()
	return s != nil && s.NumRecords != nil && *s.NumRecords == 0
}

func (f *fileFacts) partValue(c *pcol) (value, error) {
	key := c.part
	if p, ok := f.phys[c.part]; ok {
		key = p
	}
	return parseValue(f.types[c.part], lookupPartitionValue(f.add.PartitionValues, key))
}

// lookupStat finds the statistic at path in m (nested objects, keys exact else ignoring case).
func lookupStat(m map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	for i, name := range path {
		v, ok := m[name]
		if !ok {
			for k, kv := range m {
				if strings.EqualFold(k, name) {
					v, ok = kv, true
					break
				}
			}
		}
		if !ok || string(v) == "null" {
			return nil, false
		}
		if i == len(path)-1 {
			return v, true
		}
		m = nil
		if json.Unmarshal(v, &m) != nil {
			return nil, false
		}
	}
	return nil, false
}

// nulls reports whether every row of the file is null in c (all) or none is (none).
func (f *fileFacts) nulls(c *pcol) (all, none bool, err error) {
	if c.part != "" {
		v, err := f.partValue(c)
		if err != nil {
			return false, false, err
		}
		return v.null, !v.null, nil
	}
	s := f.raw()
	if s == nil {
		return false, false, nil
	}
	raw, ok := lookupStat(s.NullCount, c.stats)
	if !ok {
		return false, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 {
		return false, false, nil
	}
	return s.NumRecords != nil && n == *s.NumRecords, n == 0, nil
}

// timestampSlack widens timestamp statistics: they are written at millisecond precision,
// truncated (PROTOCOL.md; DELTA.md "readers add 1 ms to max").
const timestampSlack = 999

// bounds returns what the file says about c's values in domain d.
func (f *fileFacts) bounds(c *pcol, d domain) (bounds, error) {
	var b bounds
	if c.part != "" {
		v, err := f.partValue(c)
		if err != nil {
			return b, err
		}
		if v.null {
			b.allNull = true
			return b, nil
		}
		dv, ok := partDval(c, d, v)
		if !ok {
			return bounds{}, nil
		}
		b.noNull, b.exact, b.lo, b.hi, b.hasLo, b.hasHi = true, true, dv, dv, true, true
		return b, nil
	}
	s := f.raw()
	if s == nil {
		return b, nil
	}
	all, none, _ := f.nulls(c)
	b.allNull, b.noNull = all, none
	if raw, ok := lookupStat(s.MinValues, c.stats); ok {
		b.lo, b.hasLo = statDval(c, d, raw)
		if b.hasLo && c.fromFloat {
			b.lo = widenFloatStat(raw, b.lo, false)
		}
	}
	if raw, ok := lookupStat(s.MaxValues, c.stats); ok {
		b.hi, b.hasHi = statDval(c, d, raw)
		if b.hasHi && c.fromFloat {
			b.hi = widenFloatStat(raw, b.hi, true)
		}
	}
	switch c.t.Kind {
	case expr.KString:
		if b.hasHi {
			b.hi.s, b.hasHi = stringUpperBound(b.hi.s)
			b.hiStrict = true
		}
	case expr.KTimestamp:
		b.lo.i -= timestampSlack
		b.hi.i += timestampSlack
	case expr.KDouble:
		b.nan = true
		if b.hasLo && math.IsNaN(b.lo.f) {
			b.hasLo = false
		}
		if b.hasHi && math.IsNaN(b.hi.f) {
			b.hasHi = false
		}
	}
	return b, nil
}

// stringUpperBound returns a strict upper bound of every string a column whose (possibly
// truncated) max statistic is max can hold: max without its last code point (what a truncating
// writer surely kept of the real maximum), with its last byte incremented (a byte 0xFF is
// dropped and the carry moves left). ok is false when there is none (one code point).
func stringUpperBound(max string) (string, bool) {
	_, size := utf8.DecodeLastRuneInString(max)
	b := []byte(max[:len(max)-size])
	for len(b) > 0 {
		if b[len(b)-1] < 0xFF {
			b[len(b)-1]++
			return string(b), true
		}
		b = b[:len(b)-1]
	}
	return "", false
}

// statDval converts a min/max statistic (JSON) of column c to domain d.
func statDval(c *pcol, d domain, raw json.RawMessage) (dval, bool) {
	var str string
	quoted := len(raw) > 0 && raw[0] == '"'
	if quoted {
		if json.Unmarshal(raw, &str) != nil {
			return dval{}, false
		}
	} else {
		str = string(raw)
	}
	switch c.t.Kind {
	case expr.KInt, expr.KBigInt, expr.KDecimal:
		r, ok := new(big.Rat).SetString(strings.TrimSpace(str))
		if !ok {
			return dval{}, false
		}
		return numDval(d, r)
	case expr.KDouble:
		bits := 64
		if c.dt.ID() == arrow.FLOAT32 || c.dt.ID() == arrow.FLOAT16 {
			bits = 32
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(str), bits)
		if err != nil || math.IsInf(v, 0) {
			return dval{}, false
		}
		return dval{f: v}, d == domDouble
	case expr.KString:
		return dval{s: str}, quoted && d == domString
	case expr.KDate:
		t, err := time.Parse("2006-01-02", strings.TrimSpace(str))
		if err != nil || !quoted {
			return dval{}, false
		}
		return dateDval(d, t.Unix()/86400)
	case expr.KTimestamp:
		if !quoted || d != domMicros {
			return dval{}, false
		}
		t, err := parseTimestamp(str)
		if err != nil {
			return dval{}, false
		}
		return dval{i: t.UnixMicro()}, true
	case expr.KBool:
		switch str {
		case "true":
			return dval{i: 1}, d == domBool
		case "false":
			return dval{i: 0}, d == domBool
		}
	}
	return dval{}, false
}

func numDval(d domain, r *big.Rat) (dval, bool) {
	switch d {
	case domExact:
		return dval{r: r}, true
	case domDouble:
		f, _ := r.Float64() // nearest: monotone, as Spark's cast to double
		return dval{f: f}, true
	}
	return dval{}, false
}

func dateDval(d domain, days int64) (dval, bool) {
	switch d {
	case domDays:
		return dval{i: days}, true
	case domMicros:
		return dval{i: days * 86400 * 1e6}, true
	}
	return dval{}, false
}

// partDval converts a parsed partition value of column c to domain d.
func partDval(c *pcol, d domain, v value) (dval, bool) {
	switch c.t.Kind {
	case expr.KInt, expr.KBigInt:
		return numDval(d, new(big.Rat).SetInt64(v.i))
	case expr.KDecimal:
		return numDval(d, decimalRat(v.d, c.t.S))
	case expr.KDouble:
		f := v.f
		if c.dt.ID() == arrow.FLOAT32 {
			f = float64(float32(f)) // the value the column holds
		}
		return dval{f: f}, d == domDouble
	case expr.KString:
		return dval{s: v.s}, d == domString
	case expr.KDate:
		return dateDval(d, v.i)
	case expr.KTimestamp:
		return dval{i: v.i}, d == domMicros
	case expr.KBool:
		return dval{i: v.i}, d == domBool
	}
	return dval{}, false
}

func decimalRat(n decimal128.Num, scale int) *big.Rat {
	r := new(big.Rat).SetInt(n.BigInt())
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	} else if scale < 0 {
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil)))
	}
	return r
}

// litDval converts a folded literal to domain d.
func litDval(d domain, t expr.Type, sc scalar.Scalar) (dval, bool) {
	switch v := sc.(type) {
	case *scalar.Int32:
		return numDval(d, new(big.Rat).SetInt64(int64(v.Value)))
	case *scalar.Int64:
		return numDval(d, new(big.Rat).SetInt64(v.Value))
	case *scalar.Decimal128:
		return numDval(d, decimalRat(v.Value, t.S))
	case *scalar.Float64:
		return dval{f: v.Value}, d == domDouble
	case *scalar.String:
		return dval{s: string(v.Data())}, d == domString
	case *scalar.Date32:
		return dateDval(d, int64(v.Value))
	case *scalar.Timestamp:
		return dval{i: int64(v.Value)}, d == domMicros
	case *scalar.Boolean:
		if v.Value {
			return dval{i: 1}, d == domBool
		}
		return dval{i: 0}, d == domBool
	}
	return dval{}, false
}

// asDecimalType is the decimal type an integral type widens to in a comparison with a decimal.
func asDecimalType(t expr.Type) (p, s int) {
	switch t.Kind {
	case expr.KInt:
		return 10, 0
	case expr.KBigInt:
		return 20, 0
	}
	return t.P, t.S
}

// compareDomain is the domain a column of type ct is compared with literals of types lits in
// (expr's comparable: Spark 4 ANSI coercion), and the type each literal must be cast to
// first (cast.Kind == expr.KNull: none). ok is false when the column would be cast in a way
// that does not keep its order (a string compared with a number), when a decimal comparison
// would round (a common type beyond 38 digits), or when the types are not known here.
func compareDomain(ct expr.Type, lits []expr.Type) (d domain, cast expr.Type, ok bool) {
	var doms []domain
	var casts []expr.Type
	for _, lt := range lits {
		if lt.Kind == expr.KNull {
			continue
		}
		d, cast, ok := compareDomain1(ct, lt)
		if !ok {
			return 0, expr.Type{}, false
		}
		doms, casts = append(doms, d), append(casts, cast)
	}
	if len(doms) == 0 {
		return domExact, expr.Type{}, true // only NULLs: nothing is compared
	}
	for i := range doms {
		if doms[i] != doms[0] || casts[i] != casts[0] {
			return 0, expr.Type{}, false // mixed literal types: IN would widen them all
		}
	}
	if doms[0] == domExact && (ct.Kind == expr.KDecimal || anyDecimal(lits)) {
		p, s := asDecimalType(ct)
		for _, lt := range lits {
			if lt.Kind == expr.KNull {
				continue
			}
			lp, ls := asDecimalType(lt)
			ns := max(s, ls)
			p, s = max(p-s, lp-ls)+ns, ns
			if p > 38 {
				return 0, expr.Type{}, false
			}
		}
	}
	return doms[0], casts[0], true
}

func anyDecimal(ts []expr.Type) bool {
	for _, t := range ts {
		if t.Kind == expr.KDecimal {
			return true
		}
	}
	return false
}

func compareDomain1(ct, lt expr.Type) (domain, expr.Type, bool) {
	numeric := func(t expr.Type) bool {
		return t.Kind == expr.KInt || t.Kind == expr.KBigInt || t.Kind == expr.KDecimal || t.Kind == expr.KDouble
	}
	switch {
	case numeric(ct) && numeric(lt):
		if ct.Kind == expr.KDouble || lt.Kind == expr.KDouble {
			return domDouble, expr.Type{}, true
		}
		return domExact, expr.Type{}, true
	case numeric(ct) && lt.Kind == expr.KString:
		if ct.Kind == expr.KInt || ct.Kind == expr.KBigInt {
			return domExact, expr.TBigInt, true
		}
		return domDouble, expr.TDouble, true
	case ct.Kind == expr.KString && lt.Kind == expr.KString:
		return domString, expr.Type{}, true
	case ct.Kind == expr.KDate:
		switch lt.Kind {
		case expr.KDate:
			return domDays, expr.Type{}, true
		case expr.KTimestamp:
			return domMicros, expr.Type{}, true
		case expr.KString:
			return domDays, expr.TDate, true
		}
	case ct.Kind == expr.KTimestamp:
		switch lt.Kind {
		case expr.KTimestamp:
			return domMicros, expr.Type{}, true
		case expr.KDate, expr.KString:
			return domMicros, expr.TTimestamp, true
		}
	case ct.Kind == expr.KBool:
		switch lt.Kind {
		case expr.KBool:
			return domBool, expr.Type{}, true
		case expr.KString:
			return domBool, expr.TBool, true
		}
	}
	return 0, expr.Type{}, false
}
