package window

import (
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// ---- percentile_approx: Spark's QuantileSummaries ----
//
// quantiles is the Greenwald-Khanna variant of Spark's QuantileSummaries
// (org.apache.spark.sql.catalyst.util.QuantileSummaries, used by percentile_approx): sampled
// values with g (rank distance to the previous sample) and delta (rank uncertainty), plus a
// buffer of values not yet merged in. Any answer's rank is within relErr·n of the asked rank
// (relErr = 1/accuracy; rounded up, as ranks are whole). The same algorithm on the same rows
// gives Spark's answers; below accuracy/2 rows every delta is 0 and nothing is merged, so the
// answer is exact (the value of rank ⌈p·n⌉).
// Memory is bounded by O(accuracy · log(n/accuracy)) samples plus the buffer.

// gkSample is one sample of a quantile summary.
type gkSample struct {
	v        float64
	g, delta int64
}

type quantiles struct {
	sampled []gkSample
	head    []float64 // values not merged into sampled yet, in arrival order
	count   int64     // values in sampled
}

const (
	gkHeadSize          = 1024  // buffered values before they are merged (Spark: 50000; smaller keeps a window's state small)
	gkCompressThreshold = 10000 // samples beyond which a merge of the buffer also compresses (Spark's default)
)

// sortTotal sorts v as Spark sorts doubles (totalLess).
func sortTotal(v []float64) { slices.SortFunc(v, totalCmp) }

func (q *quantiles) insert(x float64, relErr float64) {
	q.head = append(q.head, x)
	if len(q.head) >= gkHeadSize {
		q.flush(relErr)
		if len(q.sampled) >= gkCompressThreshold {
			q.compress(relErr)
		}
	}
}

// flush merges the buffer into the samples (Spark's withHeadBufferInserted): a new value gets
// g = 1 and delta = ⌊2·relErr·n⌋, or 0 as the new minimum or maximum.
func (q *quantiles) flush(relErr float64) {
	if len(q.head) == 0 {
		return
	}
	sortTotal(q.head)
	out := make([]gkSample, 0, len(q.sampled)+len(q.head))
	i, n := 0, q.count
	for k, x := range q.head {
		for i < len(q.sampled) && !totalLess(x, q.sampled[i].v) {
			out = append(out, q.sampled[i])
			i++
		}
		n++
		var delta int64
		if len(out) > 0 && (i < len(q.sampled) || k < len(q.head)-1) {
			delta = int64(math.Floor(2 * relErr * float64(n)))
		}
		out = append(out, gkSample{v: x, g: 1, delta: delta})
	}
	q.sampled = append(out, q.sampled[i:]...)
	q.count = n
	q.head = q.head[:0]
}

// compress merges the buffer, then neighbouring samples whose combined rank range stays below
// 2·relErr·n (Spark's compress and compressImmut, from the largest sample down).
func (q *quantiles) compress(relErr float64) {
	q.flush(relErr)
	q.sampled = compressSamples(q.sampled, 2*relErr*float64(q.count))
}

func compressSamples(s []gkSample, threshold float64) []gkSample {
	if len(s) < 2 {
		return s
	}
	res := make([]gkSample, 0, len(s))
	head := s[len(s)-1]
	for i := len(s) - 2; i >= 1; i-- {
		if x := s[i]; float64(x.g+head.g+head.delta) < threshold {
			head.g += x.g
		} else {
			res = append(res, head)
			head = x
		}
	}
	res = append(res, head)
	if !totalLess(head.v, s[0].v) {
		res = append(res, s[0])
	}
	slices.Reverse(res)
	return res
}

// merge folds a compressed copy of src into q, compressed (Spark's merge).
func (q *quantiles) merge(src *quantiles, relErr float64) {
	if src.count == 0 && len(src.head) == 0 {
		return
	}
	o := src.clone()
	o.compress(relErr)
	q.compress(relErr)
	if q.count == 0 {
		*q = *o
		return
	}
	all := append(q.sampled, o.sampled...)
	slices.SortStableFunc(all, func(a, b gkSample) int { return totalCmp(a.v, b.v) })
	q.count += o.count
	q.sampled = compressSamples(all, 2*relErr*float64(q.count))
}

func (q *quantiles) clone() *quantiles {
	return &quantiles{sampled: slices.Clone(q.sampled), head: slices.Clone(q.head), count: q.count}
}

// query returns the approximate value at each of ps of a compressed summary (Spark's query:
// the percentages in increasing order, each search going on from the previous one's sample).
func (q *quantiles) query(ps []float64, relErr float64, out []float64) []float64 {
	s := q.sampled
	var maxErr int64 = math.MinInt64
	for _, x := range s {
		maxErr = max(maxErr, x.delta+x.g)
	}
	target := float64(maxErr / 2)
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return totalCmp(ps[a], ps[b]) })
	out = append(out[:0], make([]float64, len(ps))...)
	idx, minRank := 0, s[0].g
	for _, k := range order {
		p := ps[k]
		switch {
		case p <= relErr:
			out[k] = s[0].v
		case p >= 1-relErr:
			out[k] = s[len(s)-1].v
		default:
			rank := int64(math.Ceil(p * float64(q.count)))
			found := false
			for idx < len(s)-1 {
				cur := s[idx]
				if float64(minRank+cur.delta)-target <= float64(rank) && float64(rank) <= float64(minRank)+target {
					out[k], found = cur.v, true
					break
				}
				idx++
				minRank += s[idx].g
			}
			if !found {
				idx, minRank = len(s)-1, 0
				out[k] = s[len(s)-1].v
			}
		}
	}
	return out
}

// approxPercentileAgg is percentile_approx(x, p[, accuracy]) over numbers, dates, timestamps
// and durations: the sketch holds them as float64 (as Spark's), the result is converted back
// to x's type (truncated toward zero for integers, as Spark's toLong).
type approxPercentileAgg struct {
	ps      []float64
	array   bool
	relErr  float64
	cat     string // value category of x: "i64", "u64" or "f64"
	q       []*quantiles
	scratch []float64
	iscr    []int64
	work    quantiles
	res     []float64
}

func (a *approxPercentileAgg) grow(n int)     { a.q = growTo(a.q, n) }
func (a *approxPercentileAgg) reset(s int32)  { a.q[s] = nil }
func (a *approxPercentileAgg) slotBytes() int { return 8 }

// floats returns the values of arr as float64 (temporal types through their integers).
func (a *approxPercentileAgg) floats(arr arrow.Array) []float64 {
	if a.cat != "i64" {
		return f64Ops{}.batch(arr, &a.scratch)
	}
	ints := i64Ops{}.batch(arr, &a.iscr)
	return widen(ints, &a.scratch)
}

func (a *approxPercentileAgg) slot(s int32) *quantiles {
	if a.q[s] == nil {
		a.q[s] = &quantiles{}
	}
	return a.q[s]
}

func (a *approxPercentileAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	vals := a.floats(c.Arr)
	nulls := c.HasNulls()
	for j, s := range slots {
		if r := rows[j]; !nulls || !c.IsNull(int(r)) {
			a.slot(s).insert(vals[r], a.relErr)
		}
	}
}
func (a *approxPercentileAgg) merge(dst, src int32) {
	if a.q[src] != nil {
		a.slot(dst).merge(a.q[src], a.relErr)
	}
}
func (a *approxPercentileAgg) result(s int32, b array.Builder) {
	q := a.q[s]
	if q == nil || q.count == 0 && len(q.head) == 0 {
		b.AppendNull()
		return
	}
	// Answer from a compressed copy, so that emitting (early or on time) leaves the state as
	// it was.
	a.work.sampled = append(a.work.sampled[:0], q.sampled...)
	a.work.head = append(a.work.head[:0], q.head...)
	a.work.count = q.count
	a.work.compress(a.relErr)
	a.res = a.work.query(a.ps, a.relErr, a.res)
	if !a.array {
		a.appendValue(b, a.res[0])
		return
	}
	lb := b.(*array.ListBuilder)
	lb.Append(true)
	for _, v := range a.res {
		a.appendValue(lb.ValueBuilder(), v)
	}
}

func (a *approxPercentileAgg) appendValue(b array.Builder, v float64) {
	switch a.cat {
	case "i64":
		i64Ops{}.append(b, int64(v))
	case "u64":
		u64Ops{}.append(b, uint64(v))
	default:
		f64Ops{}.append(b, v)
	}
}

var gkSampleType = arrow.StructOf(
	arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "g", Type: arrow.PrimitiveTypes.Int64},
	arrow.Field{Name: "delta", Type: arrow.PrimitiveTypes.Int64},
)

func (a *approxPercentileAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{
		{Name: name + ".count", Type: arrow.PrimitiveTypes.Int64},
		{Name: name + ".sampled", Type: arrow.ListOfNonNullable(gkSampleType)},
		{Name: name + ".head", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)},
	}
}
func (a *approxPercentileAgg) saveState(s int32, bs []array.Builder) {
	q := a.q[s]
	if q == nil {
		q = &a.work
		q.sampled, q.head, q.count = q.sampled[:0], q.head[:0], 0
	}
	bs[0].(*array.Int64Builder).Append(q.count)
	lb := bs[1].(*array.ListBuilder)
	lb.Append(true)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	vb := sb.FieldBuilder(0).(*array.Float64Builder)
	gb := sb.FieldBuilder(1).(*array.Int64Builder)
	db := sb.FieldBuilder(2).(*array.Int64Builder)
	for _, x := range q.sampled {
		sb.Append(true)
		vb.Append(x.v)
		gb.Append(x.g)
		db.Append(x.delta)
	}
	appendFloatList(bs[2], q.head)
}
func (a *approxPercentileAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	q := &quantiles{count: cols[0].(*array.Int64).Value(row)}
	if l := cols[1].(*array.List); l.IsValid(row) {
		lo, hi := l.ValueOffsets(row)
		st := l.ListValues().(*array.Struct)
		v := st.Field(0).(*array.Float64)
		g := st.Field(1).(*array.Int64)
		d := st.Field(2).(*array.Int64)
		for i := int(lo); i < int(hi); i++ {
			q.sampled = append(q.sampled, gkSample{v: v.Value(i), g: g.Value(i), delta: d.Value(i)})
		}
	}
	q.head = readFloatList(cols[2], row, nil)
	if q.count > 0 || len(q.head) > 0 {
		a.q[s] = q
	}
}
