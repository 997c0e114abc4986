package window

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// ---- stddev, stddev_pop, variance, var_pop: central moments ----

// momentsAgg keeps n, the mean and m2 (the sum of squared deviations from the mean) with
// Welford's update and Chan's merge, as Spark's CentralMomentAgg does, so results agree with
// Spark's to the last bits on the same order of rows. var_samp = m2/(n−1) (null for n < 2, as
// Spark without spark.sql.legacy.statisticalAggregate), var_pop = m2/n (null for n = 0);
// the standard deviations are their square roots.
type momentsAgg struct {
	sqrt, pop bool
	n         []int64
	avg, m2   []float64
	scratch   []float64
}

func (a *momentsAgg) grow(n int) {
	a.n, a.avg, a.m2 = growTo(a.n, n), growTo(a.avg, n), growTo(a.m2, n)
}
func (a *momentsAgg) reset(s int32)  { a.n[s], a.avg[s], a.m2[s] = 0, 0, 0 }
func (a *momentsAgg) slotBytes() int { return 24 }
func (a *momentsAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	vals := f64Ops{}.batch(c.Arr, &a.scratch)
	nulls := c.HasNulls()
	for j, s := range slots {
		r := rows[j]
		if nulls && c.IsNull(int(r)) {
			continue
		}
		a.n[s]++
		delta := vals[r] - a.avg[s]
		deltaN := delta / float64(a.n[s])
		a.avg[s] += deltaN
		a.m2[s] += delta * (delta - deltaN)
	}
}
func (a *momentsAgg) merge(dst, src int32) {
	n1, n2 := float64(a.n[dst]), float64(a.n[src])
	n := n1 + n2
	if n2 == 0 {
		return
	}
	delta := a.avg[src] - a.avg[dst]
	deltaN := delta / n
	a.avg[dst] += deltaN * n2
	a.m2[dst] += a.m2[src] + delta*deltaN*n1*n2
	a.n[dst] += a.n[src]
}
func (a *momentsAgg) result(s int32, b array.Builder) {
	n := a.n[s]
	if n == 0 || !a.pop && n == 1 {
		b.AppendNull()
		return
	}
	d := float64(n)
	if !a.pop {
		d--
	}
	v := a.m2[s] / d
	if a.sqrt {
		v = math.Sqrt(v)
	}
	b.(*array.Float64Builder).Append(v)
}
func (a *momentsAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{
		{Name: name + ".n", Type: arrow.PrimitiveTypes.Int64},
		{Name: name + ".avg", Type: arrow.PrimitiveTypes.Float64},
		{Name: name + ".m2", Type: arrow.PrimitiveTypes.Float64},
	}
}
func (a *momentsAgg) saveState(s int32, bs []array.Builder) {
	bs[0].(*array.Int64Builder).Append(a.n[s])
	bs[1].(*array.Float64Builder).Append(a.avg[s])
	bs[2].(*array.Float64Builder).Append(a.m2[s])
}
func (a *momentsAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.n[s] = cols[0].(*array.Int64).Value(row)
	a.avg[s] = cols[1].(*array.Float64).Value(row)
	a.m2[s] = cols[2].(*array.Float64).Value(row)
}

// ---- median, percentile: every value of the window ----

// totalLess orders floats as Spark sorts doubles (java.lang.Double.compare): -0.0 below 0.0,
// NaN above +Inf and equal to itself.
func totalLess(a, b float64) bool {
	switch {
	case a != a:
		return false
	case b != b:
		return true
	case a == b:
		return math.Signbit(a) && !math.Signbit(b)
	}
	return a < b
}

func totalCmp(a, b float64) int {
	switch {
	case totalLess(a, b):
		return -1
	case totalLess(b, a):
		return 1
	}
	return 0
}

// valuesAgg is median(x) and percentile(x, p): Spark's exact Percentile, which keeps every
// non-null value (as double) of the window, so its memory grows with the window's rows. The
// result at p is the linear interpolation between the values at ranks floor((n−1)p) and
// ceil((n−1)p) of the sorted values.
type valuesAgg struct {
	ps      []float64
	array   bool
	vals    [][]float64
	scratch []float64
	sorted  []float64
}

func (a *valuesAgg) grow(n int)     { a.vals = growTo(a.vals, n) }
func (a *valuesAgg) reset(s int32)  { a.vals[s] = nil }
func (a *valuesAgg) slotBytes() int { return 24 }
func (a *valuesAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	vals := f64Ops{}.batch(c.Arr, &a.scratch)
	nulls := c.HasNulls()
	for j, s := range slots {
		if r := rows[j]; !nulls || !c.IsNull(int(r)) {
			a.vals[s] = append(a.vals[s], vals[r])
		}
	}
}
func (a *valuesAgg) merge(dst, src int32) { a.vals[dst] = append(a.vals[dst], a.vals[src]...) }

// percentileAt is Spark's Percentile.getPercentile on sorted values.
func percentileAt(sorted []float64, p float64) float64 {
	pos := float64(len(sorted)-1) * p
	lo, hi := math.Floor(pos), math.Ceil(pos)
	l, h := sorted[int(lo)], sorted[int(hi)]
	if lo == hi || totalCmp(l, h) == 0 {
		return l
	}
	return (hi-pos)*l + (pos-lo)*h
}

func (a *valuesAgg) result(s int32, b array.Builder) {
	v := a.vals[s]
	if len(v) == 0 {
		b.AppendNull()
		return
	}
	a.sorted = append(a.sorted[:0], v...)
	sortTotal(a.sorted)
	appendPercentiles(b, a.array, a.ps, func(p float64) float64 { return percentileAt(a.sorted, p) })
}

// appendPercentiles appends at(p) for every p of ps to b: one float64, or a list of them.
func appendPercentiles(b array.Builder, list bool, ps []float64, at func(float64) float64) {
	if !list {
		b.(*array.Float64Builder).Append(at(ps[0]))
		return
	}
	lb := b.(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.Float64Builder)
	for _, p := range ps {
		vb.Append(at(p))
	}
}

func (a *valuesAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name + ".values", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)}}
}
func (a *valuesAgg) saveState(s int32, bs []array.Builder) { appendFloatList(bs[0], a.vals[s]) }
func (a *valuesAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.vals[s] = readFloatList(cols[0], row, nil)
}

// appendFloatList appends v as one list<float64> row.
func appendFloatList(b array.Builder, v []float64) {
	lb := b.(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Float64Builder).AppendValues(v, nil)
}

// readFloatList appends row row of a list<float64> column to dst (nil for an empty list).
func readFloatList(col arrow.Array, row int, dst []float64) []float64 {
	l := col.(*array.List)
	if l.IsNull(row) {
		return dst
	}
	lo, hi := l.ValueOffsets(row)
	if hi == lo {
		return dst
	}
	return append(dst, l.ListValues().(*array.Float64).Float64Values()[lo:hi]...)
}
