package delta

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/expr"
)

// The pruning derivation is checked against the evaluated predicate itself: random files
// (rows from small domains that hit the boundaries, statistics written the ways writers write
// them: exact, truncated strings with Spark's tie-breaker, delta-rs-style plain prefixes,
// short prefixes, floats with NaN left out of min/max or written as "NaN", ms timestamps,
// missing pieces) and random predicates; a file judged VerdictNone must have no row for which
// expr evaluates the predicate to TRUE, a file judged VerdictAll only such rows.

const pruneSchema = `{"type":"struct","fields":[
{"name":"i","type":"long","nullable":true,"metadata":{}},
{"name":"d","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"f","type":"double","nullable":true,"metadata":{}},
{"name":"g","type":"float","nullable":true,"metadata":{}},
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"dt","type":"date","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"b","type":"boolean","nullable":true,"metadata":{}},
{"name":"n","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"p","type":"string","nullable":true,"metadata":{}},
{"name":"q","type":"integer","nullable":true,"metadata":{}}]}`

var (
	pruneLong   = strings.Repeat("x", 31)
	pruneTs0    = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMicro()
	pruneDay0   = int64(19844) // 2024-05-01
	pruneInts   = []any{int64(-2), int64(-1), int64(0), int64(1), int64(2), int64(3), nil}
	pruneDecs   = []any{int64(-150), int64(0), int64(125), int64(200), nil} // unscaled, scale 2
	pruneFloats = []any{-1.5, 0.0, 2.5, math.NaN(), math.Copysign(0, -1), 1e300, nil}
	pruneF32s   = []any{float32(0.1), float32(1.1), float32(-2.5), float32(math.NaN()), nil}
	pruneStrs   = []any{"", "a", "ab", "b", "é", "😀", pruneLong + "yz", pruneLong + "y😀", pruneLong + "yy", strings.Repeat("x", 40), "\u007f", "\uffffa", nil}
	pruneDays   = []any{pruneDay0, pruneDay0 + 1, pruneDay0 + 2, nil}
	pruneTss    = []any{pruneTs0, pruneTs0 + 500, pruneTs0 + 1000, pruneTs0 + 1999, pruneTs0 + 1_000_000, nil}
	pruneBools  = []any{true, false, nil}
	pruneNs     = []any{int64(1), int64(2), nil, "null struct"}
	prunePs     = []any{"a", "b", nil}
	pruneQs     = []any{int64(1), int64(2), nil}
)

func pick(r *rand.Rand, xs []any) any { return xs[r.IntN(len(xs))] }

type pruneRow struct{ i, d, f, g, s, dt, ts, b, n any }

func tsLit(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
}

func dayLit(d int64) string { return time.Unix(d*86400, 0).UTC().Format("2006-01-02") }

// randPredicate returns a random predicate over the prune schema.
func randPredicate(r *rand.Rand, depth int) string {
	if depth > 0 && r.IntN(3) > 0 {
		switch r.IntN(3) {
		case 0:
			return "NOT (" + randPredicate(r, depth-1) + ")"
		case 1:
			return "(" + randPredicate(r, depth-1) + ") AND (" + randPredicate(r, depth-1) + ")"
		default:
			return "(" + randPredicate(r, depth-1) + ") OR (" + randPredicate(r, depth-1) + ")"
		}
	}
	type colLits struct {
		col  string
		lits []string
	}
	strLits := []string{"''", "'a'", "'aa'", "'b'", "'é'", "'😀'", "'" + pruneLong + "y'", "'" + pruneLong + "yz'", "'" + pruneLong + "yza'", "'" + pruneLong + "z'", "'" + strings.Repeat("x", 40) + "'", "'" + strings.Repeat("x", 32) + "'", "'\u007f'", "'\uffff'", "'\uffffa'", "NULL"}
	var tsLits, dtLits []string
	for _, v := range pruneTss[:5] {
		us := v.(int64)
		tsLits = append(tsLits, "TIMESTAMP '"+tsLit(us)+"'", "TIMESTAMP '"+tsLit(us+1)+"'", "TIMESTAMP '"+tsLit(us-1)+"'", "'"+tsLit(us)+"'")
	}
	tsLits = append(tsLits, "DATE '2024-05-01'", "DATE '2024-05-02'")
	for _, v := range pruneDays[:3] {
		d := v.(int64)
		dtLits = append(dtLits, "DATE '"+dayLit(d)+"'", "'"+dayLit(d)+"'", "TIMESTAMP '"+dayLit(d)+" 00:00:00'", "TIMESTAMP '"+dayLit(d)+" 12:00:00'")
	}
	cols := []colLits{
		{"i", []string{"-3", "-2", "0", "1", "2", "3", "1.5", "2L", "1.0D", "'2'", "-1", "NULL"}},
		{"d", []string{"1.25", "1.2", "0", "2", "1.250", "1.26D", "-1.5", "'1.25'", "-2"}},
		{"f", []string{"2.5D", "0", "-1.5", "1e300", "CAST('NaN' AS DOUBLE)", "2.5", "3", "-0.0D", "1e301"}},
		{"g", []string{"1.1", "1.1D", "0.1", "-2.5", "CAST(1.1 AS FLOAT)", "0.10000000149011612D", "1.2"}},
		{"s", strLits},
		{"dt", dtLits},
		{"ts", tsLits},
		{"b", []string{"TRUE", "FALSE", "'true'"}},
		{"n.x", []string{"1", "2", "3", "0"}},
		{"p", []string{"'a'", "'b'", "'c'", "NULL"}},
		{"q", []string{"1", "2", "'2'", "1.5", "3"}},
	}
	c := cols[r.IntN(len(cols))]
	lit := func() string { return c.lits[r.IntN(len(c.lits))] }
	ops := []string{"=", "!=", "<>", "<", "<=", ">", ">=", "=="}
	switch r.IntN(9) {
	case 0, 1, 2:
		return c.col + " " + ops[r.IntN(len(ops))] + " " + lit()
	case 3:
		return lit() + " " + ops[r.IntN(len(ops))] + " " + c.col
	case 4:
		n := 1 + r.IntN(3)
		var ls []string
		for range n {
			ls = append(ls, lit())
		}
		not := ""
		if r.IntN(2) == 0 {
			not = "NOT "
		}
		return c.col + " " + not + "IN (" + strings.Join(ls, ", ") + ")"
	case 5:
		not := ""
		if r.IntN(2) == 0 {
			not = "NOT "
		}
		return c.col + " " + not + "BETWEEN " + lit() + " AND " + lit()
	case 6:
		if r.IntN(2) == 0 {
			return c.col + " IS NULL"
		}
		return c.col + " IS NOT NULL"
	case 7:
		others := []string{"i + 1 > 2", "upper(s) = 'A'", "length(s) > 3", "i = q", "coalesce(i, 0) = 0", "s LIKE 'x%'", "TRUE", "FALSE", "NULL", "i <=> 1"}
		return others[r.IntN(len(others))]
	}
	return c.col + " " + ops[r.IntN(len(ops))] + " " + lit()
}

// statsStyle is how a simulated writer writes statistics.
type statsStyle struct {
	strPrefix int  // code points kept of string min/max (0: no truncation)
	tieBreak  bool // a truncated max gets Spark's tie-breaker; else it is the bare prefix
	nan       int  // 0: omit float min/max when a NaN is present; 1: leave NaN out; 2: NaN is max ("NaN")
	drop      float64
}

func truncRunes(s string, n int) (string, bool) {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k], true
		}
		i++
	}
	return s, false
}

// writeStats returns the stats JSON of rows as a writer of style st would.
func writeStats(r *rand.Rand, rows []pruneRow, st statsStyle) string {
	minV, maxV, nulls := map[string]any{}, map[string]any{}, map[string]any{}
	keep := func() bool { return r.Float64() >= st.drop }
	// col writes the statistics of one column; values for which skip is true count as
	// non-null but stay out of min/max (NaN, for writers that leave it out).
	col := func(name string, get func(pruneRow) any, skip func(any) bool, cmp func(a, b any) int, enc func(v any, isMax bool) (any, bool)) {
		var vals []any
		nn := 0
		for _, row := range rows {
			if v := get(row); v == nil {
				nn++
			} else if skip == nil || !skip(v) {
				vals = append(vals, v)
			}
		}
		if keep() {
			nulls[name] = nn
		}
		if len(vals) == 0 || !keep() {
			return
		}
		sort.SliceStable(vals, func(a, b int) bool { return cmp(vals[a], vals[b]) < 0 })
		if lo, ok := enc(vals[0], false); ok {
			minV[name] = lo
		}
		if hi, ok := enc(vals[len(vals)-1], true); ok {
			maxV[name] = hi
		}
	}
	num := func(a, b any) int { return cmp.Compare(toF(a), toF(b)) }
	col("i", func(r pruneRow) any { return r.i }, nil, num, func(v any, _ bool) (any, bool) { return v, true })
	col("d", func(r pruneRow) any { return r.d }, nil, num, func(v any, _ bool) (any, bool) {
		return json.Number(decimal128.FromI64(v.(int64)).ToString(2)), true
	})
	floatCol := func(name string, get func(pruneRow) any, bits int) {
		hasNaN := false
		for _, row := range rows {
			if v := get(row); v != nil && math.IsNaN(toF(v)) {
				hasNaN = true
			}
		}
		order := func(a, b any) int { return cmp.Compare(toF(a), toF(b)) } // NaN first: skipped anyway
		if st.nan == 2 {
			order = func(a, b any) int { return -cmp.Compare(-toF(a), -toF(b)) } // NaN last: it is the max
		}
		col(name, get, func(v any) bool { return st.nan != 2 && math.IsNaN(toF(v)) }, order, func(v any, _ bool) (any, bool) {
			if st.nan == 0 && hasNaN {
				return nil, false
			}
			x := toF(v)
			if math.IsNaN(x) {
				return "NaN", true
			}
			if math.IsInf(x, 0) {
				return nil, false
			}
			return json.Number(strconv.FormatFloat(x, 'g', -1, bits)), true
		})
	}
	floatCol("f", func(r pruneRow) any { return r.f }, 64)
	floatCol("g", func(r pruneRow) any {
		if r.g == nil {
			return nil
		}
		return float64(r.g.(float32))
	}, 32)
	col("s", func(r pruneRow) any { return r.s }, nil, func(a, b any) int { return strings.Compare(a.(string), b.(string)) }, func(v any, isMax bool) (any, bool) {
		p, cut := truncRunes(v.(string), st.strPrefix)
		if !cut || !isMax {
			return p, true
		}
		if !st.tieBreak {
			return p, true
		}
		next, _ := utf8.DecodeRuneInString(v.(string)[len(p):])
		if next < 0x7F {
			return p + "\u007f", true
		}
		return p + "\U0010FFFF", true
	})
	int64Cmp := func(a, b any) int { return cmp.Compare(a.(int64), b.(int64)) }
	col("dt", func(r pruneRow) any { return r.dt }, nil, int64Cmp, func(v any, _ bool) (any, bool) { return dayLit(v.(int64)), true })
	col("ts", func(r pruneRow) any { return r.ts }, nil, int64Cmp, func(v any, _ bool) (any, bool) {
		us := v.(int64)
		ms := us - ((us%1000)+1000)%1000
		return time.UnixMicro(ms).UTC().Format("2006-01-02T15:04:05.000Z"), true
	})
	col("b", func(r pruneRow) any { return r.b }, nil, func(a, b any) int {
		x, y := a.(bool), b.(bool)
		if x == y {
			return 0
		}
		if !x {
			return -1
		}
		return 1
	}, func(v any, _ bool) (any, bool) { return v, true })
	// n.x: null when n or x is null
	nx := func(r pruneRow) any {
		if v, ok := r.n.(int64); ok {
			return v
		}
		return nil
	}
	sub := map[string]any{}
	subMin, subMax := map[string]any{}, map[string]any{}
	{
		var vals []int64
		nn := 0
		for _, row := range rows {
			if v := nx(row); v == nil {
				nn++
			} else {
				vals = append(vals, v.(int64))
			}
		}
		if keep() {
			sub["x"] = nn
		}
		if len(vals) > 0 && keep() {
			sort.Slice(vals, func(a, b int) bool { return vals[a] < vals[b] })
			subMin["x"], subMax["x"] = vals[0], vals[len(vals)-1]
		}
	}
	nulls["n"], minV["n"], maxV["n"] = sub, subMin, subMax
	out := map[string]any{"minValues": minV, "maxValues": maxV, "nullCount": nulls}
	if keep() {
		out["numRecords"] = len(rows)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func toF(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case float32:
		return float64(v)
	}
	panic(fmt.Sprint(v))
}

// pruneBatch builds the file's rows as a batch of the table schema.
func pruneBatch(t *testing.T, mem memory.Allocator, sc *arrow.Schema, rows []pruneRow, p, q any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, r := range rows {
		app := func(i int, v any) {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				return
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(int32(v.(int64)))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(v.(int64)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.Float32Builder:
				fb.Append(v.(float32))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v.(int64)))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(int64)))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.StructBuilder:
				if v == "null struct" {
					fb.AppendNull()
					return
				}
				fb.Append(true)
				xb := fb.FieldBuilder(0).(*array.Int64Builder)
				if x, ok := v.(int64); ok {
					xb.Append(x)
				} else {
					xb.AppendNull()
				}
			default:
				t.Fatalf("builder %T", fb)
			}
		}
		n := r.n
		if n == nil {
			n = "nil x"
		}
		for i, v := range []any{r.i, r.d, r.f, r.g, r.s, r.dt, r.ts, r.b, n, p, q} {
			if s, ok := v.(string); ok && s == "nil x" {
				sb := b.Field(i).(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).AppendNull()
				continue
			}
			app(i, v)
		}
	}
	return b.NewRecordBatch()
}

func TestPruneAgainstEvaluation(t *testing.T) {
	mem := memory.NewGoAllocator()
	meta := &dl.Metadata{SchemaString: pruneSchema, PartitionColumns: []string{"p", "q"}}
	st, err := meta.Schema()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.ToArrow()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	styles := []statsStyle{
		{},
		{strPrefix: 32, tieBreak: true},
		{strPrefix: 32, tieBreak: false, nan: 1},
		{strPrefix: 2, tieBreak: false, nan: 2},
		{strPrefix: 1, tieBreak: true, nan: 1, drop: 0.2},
	}
	const trials = 8000
	var none, all, some, evalErr, legacy int
	for trial := range trials {
		n := r.IntN(6)
		rows := make([]pruneRow, n)
		for k := range rows {
			rows[k] = pruneRow{pick(r, pruneInts), pick(r, pruneDecs), pick(r, pruneFloats), pick(r, pruneF32s), pick(r, pruneStrs),
				pick(r, pruneDays), pick(r, pruneTss), pick(r, pruneBools), pick(r, pruneNs)}
		}
		p, q := pick(r, prunePs), pick(r, pruneQs)
		style := styles[r.IntN(len(styles))]
		pv := map[string]*string{"p": nil, "q": nil}
		if p != nil {
			s := p.(string)
			pv["p"] = &s
		}
		if q != nil {
			s := strconv.FormatInt(q.(int64), 10)
			pv["q"] = &s
		}
		add := &dl.Add{Path: "f.parquet", PartitionValues: pv}
		if r.IntN(10) > 0 {
			add.Stats = writeStats(r, rows, style)
		}
		src := randPredicate(r, 2)
		pred, err := ParsePredicate(src, meta)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if pred.Partition() != nil {
			legacy++
		}
		v, err := pred.Verdict(add)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		prog, err := expr.CompilePredicate(src, sc, expr.Options{Mem: mem})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		rec := pruneBatch(t, mem, sc, rows, p, q)
		m, err := evalRecover(prog, rec, src)
		rec.Release()
		if err != nil {
			if strings.Contains(err.Error(), "panicked") && evalErr < 3 {
				t.Logf("%s on %d rows %+v: %v", src, n, rows, err)
			}
			evalErr++
			continue
		}
		matched := 0
		if bm, ok := m.(*array.Boolean); ok {
			for k := range bm.Len() {
				if bm.IsValid(k) && bm.Value(k) {
					matched++
				}
			}
		}
		m.Release()
		switch v {
		case VerdictNone:
			none++
			if matched > 0 {
				t.Fatalf("trial %d: %s: VerdictNone but %d of %d rows match\nrows %+v\npartition p=%v q=%v\nstats %s", trial, src, matched, n, rows, p, q, add.Stats)
			}
		case VerdictAll:
			all++
			if matched != n {
				t.Fatalf("trial %d: %s: VerdictAll but %d of %d rows match\nrows %+v\npartition p=%v q=%v\nstats %s", trial, src, matched, n, rows, p, q, add.Stats)
			}
		default:
			some++
		}
	}
	t.Logf("%d trials: %d none, %d all, %d some, %d evaluation errors, %d in the partition syntax", trials, none, all, some, evalErr, legacy)
	// The check must bite: a good share of files is pruned, some decided whole.
	if none < trials/5 || all < trials/50 || evalErr > trials/50 {
		t.Fatalf("too few decided files: %d none, %d all, %d errors", none, all, evalErr)
	}
}

func evalRecover(prog *expr.Program, rec arrow.RecordBatch, src string) (m arrow.Array, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("expr panicked: %v", x)
		}
	}()
	return prog.Eval(context.Background(), rec, nil)
}

// TestPruneEdgeCases pins the statistics traps one by one.
func TestPruneEdgeCases(t *testing.T) {
	meta := &dl.Metadata{SchemaString: pruneSchema, PartitionColumns: []string{"p", "q"}}
	a := func(p string, stats string) *dl.Add {
		return &dl.Add{Path: "f", PartitionValues: map[string]*string{"p": &p, "q": nil}, Stats: stats}
	}
	long := strings.Repeat("x", 32)
	for _, c := range []struct {
		where string
		add   *dl.Add
		want  Verdict
	}{
		// A float max that leaves NaN out says nothing about x > c: NaN > every number.
		{"f > 3", a("a", `{"numRecords":2,"minValues":{"f":2.5},"maxValues":{"f":2.5},"nullCount":{"f":0}}`), VerdictSome},
		{"f < 2", a("a", `{"numRecords":2,"minValues":{"f":2.5},"maxValues":{"f":2.5},"nullCount":{"f":0}}`), VerdictNone},
		{"f = 3", a("a", `{"numRecords":2,"minValues":{"f":2.5},"maxValues":{"f":2.5},"nullCount":{"f":0}}`), VerdictNone},
		{"f = CAST('NaN' AS DOUBLE)", a("a", `{"numRecords":2,"minValues":{"f":2.5},"maxValues":{"f":2.5},"nullCount":{"f":0}}`), VerdictSome},
		{"f < 3", a("a", `{"numRecords":2,"minValues":{"f":"NaN"},"maxValues":{"f":"NaN"},"nullCount":{"f":0}}`), VerdictSome},
		// float32 statistics are the float's value: 1.1f > 1.1D.
		{"g > 1.1D", a("a", `{"numRecords":1,"minValues":{"g":1.1},"maxValues":{"g":1.1},"nullCount":{"g":0}}`), VerdictSome},
		{"g <= 1.1D", a("a", `{"numRecords":1,"minValues":{"g":1.1},"maxValues":{"g":1.1},"nullCount":{"g":0}}`), VerdictNone},
		// A string max may be a truncated prefix (delta-rs) or carry a tie-breaker (Spark).
		{"s = '" + long + "yz'", a("a", `{"numRecords":1,"minValues":{"s":"a"},"maxValues":{"s":"`+long+`"},"nullCount":{"s":0}}`), VerdictSome},
		{"s > '" + long + "'", a("a", `{"numRecords":1,"minValues":{"s":"a"},"maxValues":{"s":"`+long+`\u007f"},"nullCount":{"s":0}}`), VerdictSome},
		{"s > 'y'", a("a", `{"numRecords":1,"minValues":{"s":"a"},"maxValues":{"s":"`+long+`\u007f"},"nullCount":{"s":0}}`), VerdictNone},
		{"s < 'a'", a("a", `{"numRecords":1,"minValues":{"s":"a"},"maxValues":{"s":"b"},"nullCount":{"s":0}}`), VerdictNone},
		// A string column compared with a number is cast to bigint: no order to use.
		{"s > 5", a("a", `{"numRecords":1,"minValues":{"s":"a"},"maxValues":{"s":"b"},"nullCount":{"s":0}}`), VerdictSome},
		// Timestamp statistics are truncated to ms: max 10:00:00.000 may be 10:00:00.000999.
		{"ts > TIMESTAMP '2024-05-01 10:00:00.0005'", a("a", `{"numRecords":1,"minValues":{"ts":"2024-05-01T10:00:00.000Z"},"maxValues":{"ts":"2024-05-01T10:00:00.000Z"},"nullCount":{"ts":0}}`), VerdictSome},
		{"ts > TIMESTAMP '2024-05-01 10:00:00.001'", a("a", `{"numRecords":1,"minValues":{"ts":"2024-05-01T10:00:00.000Z"},"maxValues":{"ts":"2024-05-01T10:00:00.000Z"},"nullCount":{"ts":0}}`), VerdictNone},
		{"ts < '2024-05-01T12:00:00+02:00'", a("a", `{"numRecords":1,"minValues":{"ts":"2024-05-01T10:00:00.000Z"},"maxValues":{"ts":"2024-05-01T10:00:00.000Z"},"nullCount":{"ts":0}}`), VerdictSome},
		// Missing statistics, all-null columns, empty files, nested fields, nullCount.
		{"i > 5", a("a", ``), VerdictSome},
		{"i > 5", a("a", `{"numRecords":3}`), VerdictSome},
		{"i > 5", a("a", `{"numRecords":3,"nullCount":{"i":3}}`), VerdictNone},
		{"i IS NULL", a("a", `{"numRecords":3,"nullCount":{"i":3}}`), VerdictSome},
		{"i IS NULL", a("a", `{"numRecords":3,"nullCount":{"i":0}}`), VerdictNone},
		{"i IS NOT NULL", a("a", `{"numRecords":3,"nullCount":{"i":3}}`), VerdictNone},
		{"i = 1", a("a", `{"numRecords":0}`), VerdictNone},
		{"n.x >= 3", a("a", `{"numRecords":2,"minValues":{"n":{"x":1}},"maxValues":{"n":{"x":2}},"nullCount":{"n":{"x":0}}}`), VerdictNone},
		{"N.X < 3", a("a", `{"numRecords":2,"minValues":{"n":{"x":1}},"maxValues":{"n":{"x":2}},"nullCount":{"n":{"x":0}}}`), VerdictSome},
		// NOT IN with a NULL is never true; IN with a NULL is its other items.
		{"i NOT IN (7, NULL)", a("a", `{"numRecords":2,"minValues":{"i":1},"maxValues":{"i":2}}`), VerdictNone},
		{"i IN (7, NULL)", a("a", `{"numRecords":2,"minValues":{"i":1},"maxValues":{"i":2}}`), VerdictNone},
		{"i IN (2, NULL)", a("a", `{"numRecords":2,"minValues":{"i":1},"maxValues":{"i":2}}`), VerdictSome},
		// Decimals and integers compare exactly; 1.5 is not 1 or 2.
		{"i = 1.5", a("a", `{"numRecords":2,"minValues":{"i":1},"maxValues":{"i":1}}`), VerdictNone},
		{"d > 1.25", a("a", `{"numRecords":2,"minValues":{"d":0.5},"maxValues":{"d":1.25}}`), VerdictNone},
		{"d >= 1.25", a("a", `{"numRecords":2,"minValues":{"d":0.5},"maxValues":{"d":1.25}}`), VerdictSome},
		// Partition values are exact: decided either way; NOT pushes down.
		{"p = 'a' AND i > 0", a("b", ``), VerdictNone},
		{"NOT (p <> 'a') OR upper(s) = 'X'", a("a", ``), VerdictAll},
		{"p LIKE 'a%'", a("a", ``), VerdictSome},
	} {
		pred, err := ParsePredicate(c.where, meta)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		got, err := pred.Verdict(c.add)
		if err != nil || got != c.want {
			t.Errorf("%s on %s: %v %v, want %v", c.where, c.add.Stats, got, err, c.want)
		}
	}
}
