package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

func TestParseAggsSparkForms(t *testing.T) {
	tests := []struct {
		spec    string
		want    string
		wantErr string
	}{
		{"median(x), percentile(x, 0.25) as q, percentile(a.x, array(0.1, 0.9))",
			"median(x) as median_x; percentile(x, 0.25) as q; percentile(a.x, array(0.1, 0.9)) as percentile_x", ""},
		{"percentile_approx(x, 0.5), APPROX_PERCENTILE(x, array(0.5), 100) as p",
			"percentile_approx(x, 0.5, 10000) as percentile_approx_x; approx_percentile(x, array(0.5), 100) as p", ""},
		{"stddev(x), std(x) as s, stddev_samp(x) as ss, stddev_pop(x), variance(x), var_samp(x) as vs, var_pop(x)",
			"stddev(x) as stddev_x; std(x) as s; stddev_samp(x) as ss; stddev_pop(x) as stddev_pop_x; variance(x) as variance_x; var_samp(x) as vs; var_pop(x) as var_pop_x", ""},
		{"approx_count_distinct(u), approx_count_distinct(u, 0.01) as d",
			"approx_count_distinct(u, 0.05) as approx_count_distinct_u; approx_count_distinct(u, 0.01) as d", ""},
		{"collect_list(u), collect_set(u), max_by(u, v.ts), min_by(u, ts) as first_u",
			"collect_list(u) as collect_list_u; collect_set(u) as collect_set_u; max_by(u, v.ts) as max_by_u; min_by(u, ts) as first_u", ""},
		{"percentile(x, 1.5)", "", "between 0.0 and 1.0"},
		{"percentile(x, array(0.5, -1))", "", "between 0.0 and 1.0"},
		{"percentile(x)", "", "want percentile(path, p)"},
		{"percentile_approx(x, 0.5, 0)", "", "accuracy must be an integer in (0, 2147483647]"},
		{"percentile_approx(x, 0.5, 2147483648)", "", "accuracy must be"},
		{"approx_count_distinct(x, 0.5)", "", "at most 0.39"},
		{"approx_count_distinct(x, 0)", "", "positive number"},
		{"max_by(x)", "", "want max_by(path, ordering path)"},
		{"max_by(x, y, z)", "", "want max_by(path, ordering path)"},
		{"median", "", "median needs a column"},
		{"stddev(x, y)", "", "want stddev(path)"},
		{"sum(f(x))", "", "not a column path"},
		{"percentile(x, array(0.5)", "", "unbalanced parentheses"},
	}
	for _, tt := range tests {
		calls, err := ParseAggs(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseAggs(%q) err = %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAggs(%q): %v", tt.spec, err)
			continue
		}
		var got []string
		for _, c := range calls {
			got = append(got, c.String())
			// String is spec syntax: it parses back to the same call.
			again, err := ParseAggs(c.String())
			if err != nil || len(again) != 1 || again[0].String() != c.String() {
				t.Errorf("%q does not parse back: %v %v", c.String(), again, err)
			}
		}
		if g := strings.Join(got, "; "); g != tt.want {
			t.Errorf("ParseAggs(%q) = %s, want %s", tt.spec, g, tt.want)
		}
	}
}

// TestSparkAggregates checks the new aggregates' types and values on aggSchema's rows (the
// values were checked against pyspark 4.1: tools/window's TestAggregatesLikeSpark).
func TestSparkAggregates(t *testing.T) {
	rows := [][]any{
		// k, ts, value{amount, qty}, u, n, seen, ok
		{"a", "2024-05-01T00:00:03Z", []any{1.5, 2}, "x", 7, "2024-01-02T00:00:00Z", true},
		{"a", "2024-05-01T00:00:01Z", []any{2.5, nil}, "y", 3, "2024-01-01T00:00:00Z", false},
		{"a", "2024-05-01T00:00:02Z", nil, "x", nil, nil, nil},
		{"a", "2024-05-01T00:00:04Z", []any{nil, 5}, nil, 9, "2024-01-03T00:00:00Z", true},
		{"a", "2024-05-01T00:00:06Z", []any{10.0, 5}, "z", 1, "2024-01-03T00:00:00Z", true},
		{"b", "2024-05-01T00:00:05Z", []any{nil, nil}, nil, nil, nil, nil},
		{"c", "2024-05-01T00:00:05Z", []any{4.0, 4}, "w", 2, "2024-01-05T00:00:00Z", false},
	}
	tests := []struct {
		spec   string
		fields string
		want   []string
	}{
		{"median(value.amount), median(n), percentile(value.qty, 0.25), percentile(n, array(0, 0.9, 1))",
			"float64 float64 float64 list<item: float64>",
			[]string{"a 2.5 5 3.5 [1,8.4,9]", "b null null null null", "c 4 2 4 [2,2,2]"}},
		{"percentile_approx(value.amount, 0.5), percentile_approx(n, array(0.25, 0.5, 0.9), 100), approx_percentile(seen, 0.5)",
			"float64 list<item: uint32> timestamp[us, tz=UTC]",
			[]string{"a 2.5 [1,3,9] 2024-01-02T00:00:00Z", "b null null null", "c 4 [2,2,2] 2024-01-05T00:00:00Z"}},
		{"stddev(n), stddev_pop(n), var_samp(value.qty), var_pop(value.qty)",
			"float64 float64 float64 float64",
			[]string{"a 3.6514837167011076 3.1622776601683795 3 2", "b null null null null", "c null 0 null 0"}},
		{"approx_count_distinct(u), approx_count_distinct(value.qty, 0.01) as d, approx_count_distinct(ok)",
			"int64 int64 int64",
			[]string{"a 3 2 2", "b 0 0 0", "c 1 1 1"}},
		{"collect_list(u), collect_set(u), collect_list(value.qty), collect_set(ok)",
			"list<item: utf8> list<item: utf8> list<item: int32> list<item: bool>",
			[]string{`a ["x","y","x","z"] ["x","y","z"] [2,5,5] [true,false]`, "b [] [] [] []", `c ["w"] ["w"] [4] [false]`}},
		{"max_by(u, n), min_by(u, n), max_by(value.amount, seen) as ma, min_by(n, u) as mn",
			"utf8 utf8 float64 uint32",
			[]string{"a null z 10 null", "b null null null null", "c w w 4 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			for _, steps := range splits(rows) {
				mem := checkedMem(t)
				calls, err := ParseAggs(tt.spec)
				if err != nil {
					t.Fatal(err)
				}
				m := newManager(t, mem, nil, Config{Assigner: NewGlobal(), Key: []string{"k"}, Time: "ts", Aggs: calls}, aggSchema)
				var types []string
				for _, f := range m.Schema().Fields()[3 : m.Schema().NumFields()-1] {
					types = append(types, f.Type.String())
				}
				if got := strings.Join(types, " "); got != tt.fields {
					t.Errorf("output types %s, want %s", got, tt.fields)
				}
				out := runSteps(t, mem, m, nil, aggSchema, append(steps, step{final: true}), time.RFC3339).out
				var got []string
				for _, r := range out {
					f := splitRow(r)
					got = append(got, strings.Join(f[2:len(f)-1], " "))
				}
				slices.Sort(got)
				diffRows(t, got, tt.want)
			}
		})
	}
}

// splitRow splits a row of rowsOf at the spaces outside brackets.
func splitRow(r string) []string {
	var out []string
	depth, from := 0, 0
	for i, c := range r {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ' ':
			if depth == 0 {
				out = append(out, r[from:i])
				from = i + 1
			}
		}
	}
	return append(out, r[from:])
}

func TestRestoreEquivalenceSparkAggregates(t *testing.T) {
	restoreEquivalence(t, stateCasesOf("median(v), percentile(v, array(0.1, 0.9)) as p, percentile_approx(v, array(0.25, 0.5), 4) as pa, "+
		"stddev(v), var_pop(v), approx_count_distinct(v), collect_list(v), collect_set(k), max_by(k, v), min_by(v, ts)"))
}

// TestQuantileSummaryBoundAndRestore feeds 300 000 values through the sketch of
// percentile_approx at accuracy 100, saving it to Arrow state and loading it into a fresh
// accumulator at irregular points: every answer must be the same as the uninterrupted
// sketch's, within rank error n/accuracy of the exact rank, and the sketch bounded (Spark's
// summary compresses once it holds gkCompressThreshold samples).
func TestQuantileSummaryBoundAndRestore(t *testing.T) {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(5, 6))
	const n, accuracy = 300000, 100
	ps := []float64{0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999}
	newAgg := func() *approxPercentileAgg {
		a := &approxPercentileAgg{ps: ps, array: true, relErr: 1.0 / accuracy, cat: "f64"}
		a.grow(1)
		return a
	}
	ref, cur := newAgg(), newAgg()
	vals := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		v := math.Round(r.NormFloat64()*1000) / 10 // with ties
		vals = append(vals, v)
		ref.slot(0).insert(v, ref.relErr)
		cur.slot(0).insert(v, cur.relErr)
		if i%27919 == 0 || i == n-1 {
			next := newAgg()
			roundTripState(t, mem, cur, next)
			cur = next
			if got, want := answers(t, mem, cur), answers(t, mem, ref); got != want {
				t.Fatalf("after %d values: restored answers %s, uninterrupted %s", i+1, got, want)
			}
		}
	}
	q := ref.q[0]
	if len(q.sampled) > gkCompressThreshold+gkHeadSize {
		t.Errorf("%d samples for %d values at accuracy %d: not bounded", len(q.sampled), n, accuracy)
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	w := ref.work
	w.sampled, w.head, w.count = slices.Clone(q.sampled), slices.Clone(q.head), q.count
	w.compress(ref.relErr)
	for i, got := range w.query(ps, ref.relErr, nil) {
		// the ranks (1-based) the value occupies in the sorted input
		lo, _ := slices.BinarySearch(sorted, got)
		hi, _ := slices.BinarySearch(sorted, math.Nextafter(got, math.Inf(1)))
		want := math.Ceil(ps[i] * n)
		if want < float64(lo+1)-n/accuracy || want > float64(hi)+n/accuracy {
			t.Errorf("p=%g: %g has ranks [%d, %d], want within %d of %g", ps[i], got, lo+1, hi, n/accuracy, want)
		}
	}
}

// roundTripState copies slot 0 of from into to through the Arrow state columns.
func roundTripState(t *testing.T, mem memory.Allocator, from, to aggImpl) {
	t.Helper()
	fields := from.stateFields("p")
	bs := make([]array.Builder, len(fields))
	cols := make([]arrow.Array, len(fields))
	for i, f := range fields {
		bs[i] = array.NewBuilder(mem, f.Type)
	}
	from.saveState(0, bs)
	for i := range bs {
		cols[i] = bs[i].NewArray()
		bs[i].Release()
	}
	to.loadState(0, cols, 0)
	for _, c := range cols {
		c.Release()
	}
}

// answers renders the result of slot 0.
func answers(t *testing.T, mem memory.Allocator, a aggImpl) string {
	b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Float64)
	defer b.Release()
	a.result(0, b)
	arr := b.NewArray()
	defer arr.Release()
	return arr.ValueStr(0)
}

// TestHLLWithinBound checks approx_count_distinct's estimate against the exact count for
// cardinalities from 1 to 200 000: within 3 relativeSD (Spark's bound is a standard
// deviation), exact-ish for small counts, and the merge of two halves equal to the whole.
func TestHLLWithinBound(t *testing.T) {
	mem := checkedMem(t)
	vc, _ := newValueCodec(arrow.PrimitiveTypes.Int64)
	for _, rsd := range []float64{0.05, 0.01} {
		p, _ := hllPrecision(rsd)
		a := &hllAgg{p: p, codec: vc}
		a.grow(3)
		for _, card := range []int{1, 2, 10, 100, 1000, 10000, 200000} {
			b := array.NewInt64Builder(mem)
			rows := make([]int32, card)
			halves := make([]int32, card)
			for i := range card {
				b.Append(int64(i) * 7919)
				rows[i], halves[i] = int32(i), int32(1+i%2) // halves in slots 1 and 2
			}
			arr := b.NewArray()
			b.Release()
			for s := range int32(3) {
				a.reset(s)
			}
			c := codec.Column{Arr: arr}
			a.update(c, rows, make([]int32, card), nil)
			a.update(c, rows, halves, nil)
			arr.Release()
			a.merge(1, 2)
			est := a.estimate(a.regs[0])
			if merged := a.estimate(a.regs[1]); merged != est {
				t.Errorf("rsd %g, %d values: merged halves estimate %d, whole %d", rsd, card, merged, est)
			}
			if err := math.Abs(float64(est)-float64(card)) / float64(card); err > 3*rsd || card <= 10 && est != int64(card) {
				t.Errorf("rsd %g, %d distinct values: estimate %d (error %.3f)", rsd, card, est, err)
			} else {
				t.Logf("rsd %g, %d distinct values: estimate %d (error %.4f)", rsd, card, est, err)
			}
		}
	}
}
