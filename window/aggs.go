package window

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// neverNull lists the functions whose result is never null (0 or an empty array for no rows).
var neverNull = map[string]bool{FuncCount: true, FuncCountDistinct: true, FuncApproxDistinct: true, FuncCollectList: true, FuncCollectSet: true}

// Aggs is a bound list of aggregate functions with their accumulators, stored column-wise and
// indexed by slot (one slot per open window and key; the caller allocates slot numbers).
// Updates are vectorised: one typed loop per aggregate and batch. Every accumulator can be
// written to and read back from Arrow columns (StateFields), so state is checkpointed as
// Arrow IPC:
//
//	count, count(x)   <name> int64
//	sum(x)            <name> int64|float64, null when no non-null x was seen
//	try_sum(x)        as sum; of integers also <name>.overflow bool (the sum overflowed: null)
//	avg(x)            <name>.sum float64, <name>.count int64
//	min(x), max(x)    <name> of x's type, null when none
//	first(x), last(x) <name> of x's type, <name>.time timestamp[us, UTC] (event time of the value)
//	count_distinct(x) <name>.values list<x's type> (the distinct values, unordered)
//	stddev(x), stddev_samp, stddev_pop, std, variance, var_samp, var_pop
//	                  <name>.n int64, <name>.avg float64 (mean), <name>.m2 float64 (Σ(x−mean)²)
//	median(x), percentile(x, p)
//	                  <name>.values list<float64> (every non-null x, arrival order)
//	percentile_approx(x, p[, accuracy]), approx_percentile
//	                  <name>.count int64 (values summarised), <name>.sampled
//	                  list<struct<value float64, g int64, delta int64>> (the quantile summary,
//	                  ascending), <name>.head list<float64> (values not summarised yet)
//	approx_count_distinct(x[, relativeSD])
//	                  <name>.registers list<struct<register uint32, rank uint8>> (the non-zero
//	                  HyperLogLog registers)
//	collect_list(x), collect_set(x)
//	                  <name>.values list<x's type> (the values collected, in order)
//	max_by(x, ord), min_by(x, ord)
//	                  <name> of x's type (null when x was), <name>.ord of ord's type (null when none)
//
// Aggs is not safe for concurrent use.
type Aggs struct {
	calls   []AggCall
	inputs  []*codec.Path // nil for count(*)
	ords    []*codec.Path // max_by's and min_by's ordering column, else nil
	impls   []aggImpl
	fields  []arrow.Field
	sfields []arrow.Field
	spans   [][2]int // state columns of impl i: sfields[spans[i][0]:spans[i][1]]
	cols    []codec.Column
	slots   int
	// onOverflow receives integer sums that overflow bigint (see OnOverflow).
	onOverflow func(s int32, c AggCall)
}

// NewAggs binds calls to the input schema s: resolves argument paths and checks types.
// Output types: count → int64; sum and try_sum of integers → int64 (see OnOverflow), of
// floats → float64; avg → float64;
// min, max, first, last keep the input type (numbers, booleans, temporal incl. timestamps,
// strings, binaries); count_distinct → int64; stddev and variance (all forms), median and
// percentile → float64 (percentile of array(…) → list<float64>); percentile_approx keeps the
// input type (numbers, dates, timestamps, durations; of array(…): a list of it);
// approx_count_distinct → int64; collect_list and collect_set → list<x's type>; max_by and
// min_by → x's type. Errors wrap ErrPath or ErrAggSpec.
func NewAggs(s *arrow.Schema, calls []AggCall) (*Aggs, error) {
	a := &Aggs{calls: calls}
	for _, c := range calls {
		var fp *codec.Path
		var dt arrow.DataType
		if c.Arg != "" {
			p, err := codec.ResolvePath(s, c.Arg)
			if err != nil {
				return nil, fmt.Errorf("aggregate %s: %w", c, err)
			}
			fp, dt = &p, p.Field.Type
		}
		var ord *codec.Path
		var impl aggImpl
		var out arrow.DataType
		var err error
		if c.By != "" {
			p, perr := codec.ResolvePath(s, c.By)
			if perr != nil {
				return nil, fmt.Errorf("aggregate %s: %w", c, perr)
			}
			ord = &p
			impl, out, err = newByAgg(c, dt, p.Field.Type)
		} else {
			impl, out, err = newAggImpl(c, dt)
		}
		if err != nil {
			return nil, err
		}
		if sum, ok := impl.(*intSumAgg); ok && !sum.try {
			sum.report = func(s int32) {
				if a.onOverflow != nil {
					a.onOverflow(s, c)
				}
			}
		}
		a.inputs = append(a.inputs, fp)
		a.ords = append(a.ords, ord)
		a.impls = append(a.impls, impl)
		nullable := !neverNull[c.Func]
		a.fields = append(a.fields, arrow.Field{Name: c.Name, Type: out, Nullable: nullable})
		lo := len(a.sfields)
		a.sfields = append(a.sfields, impl.stateFields(c.Name)...)
		a.spans = append(a.spans, [2]int{lo, len(a.sfields)})
	}
	a.cols = make([]codec.Column, len(calls))
	return a, nil
}

// OnOverflow sets fn to be called, during Update or Merge, when sum(x) of integers leaves
// the bigint range in slot s (c is the call). As Spark's ANSI mode (ARITHMETIC_OVERFLOW), the
// sum has no valid result then: the caller must fail before the slot's result is used;
// try_sum(x) gives null instead and never calls fn.
func (a *Aggs) OnOverflow(fn func(s int32, c AggCall)) { a.onOverflow = fn }

// Calls returns the bound calls.
func (a *Aggs) Calls() []AggCall { return a.calls }

// Fields returns the output fields, one per call, in spec order.
func (a *Aggs) Fields() []arrow.Field { return a.fields }

// StateFields returns the accumulator columns of all calls, in spec order (see Aggs).
func (a *Aggs) StateFields() []arrow.Field { return a.sfields }

// SlotBytes estimates the fixed accumulator bytes of one slot; what grows with the rows is not
// included (count_distinct sets, the values of median, percentile and collect_*, quantile
// summaries, HyperLogLog registers).
func (a *Aggs) SlotBytes() int {
	n := 0
	for _, im := range a.impls {
		n += im.slotBytes()
	}
	return n
}

// Grow makes slots [0, n) addressable; new slots are zero (as after Reset).
func (a *Aggs) Grow(n int) {
	if n <= a.slots {
		return
	}
	for _, im := range a.impls {
		im.grow(n)
	}
	a.slots = n
}

// Reset clears slot s to the empty accumulator.
func (a *Aggs) Reset(s int32) {
	for _, im := range a.impls {
		im.reset(s)
	}
}

// Bind resolves the input columns of rec for the following Update calls; rec must stay alive
// until then. Bind(nil) drops the references.
func (a *Aggs) Bind(rec arrow.RecordBatch) {
	if rec == nil {
		clear(a.cols)
		for i, o := range a.ords {
			if o != nil {
				a.impls[i].(ordBinder).bindOrd(codec.Column{})
			}
		}
		return
	}
	for i, in := range a.inputs {
		if in != nil {
			a.cols[i] = in.Column(rec)
		}
		if o := a.ords[i]; o != nil {
			a.impls[i].(ordBinder).bindOrd(o.Column(rec))
		}
	}
}

// Update folds row rows[j] of the bound batch into slot slots[j], for every j (the slices are
// parallel; a row may appear several times, e.g. once per sliding window). ts holds the event
// time of every row of the batch (µs), used by first and last.
func (a *Aggs) Update(rows, slots []int32, ts []int64) {
	if len(slots) == 0 {
		return
	}
	for i, im := range a.impls {
		im.update(a.cols[i], rows, slots, ts)
	}
}

// Merge folds slot src into slot dst (session merging, count-window slices); src is unchanged.
func (a *Aggs) Merge(dst, src int32) {
	for _, im := range a.impls {
		im.merge(dst, src)
	}
}

// AppendResults appends the result of every call for slot s, one builder per Fields() entry.
func (a *Aggs) AppendResults(s int32, bs []array.Builder) {
	for i, im := range a.impls {
		im.result(s, bs[i])
	}
}

// AppendState appends the accumulators of slot s, one builder per StateFields() entry.
func (a *Aggs) AppendState(s int32, bs []array.Builder) {
	for i, im := range a.impls {
		sp := a.spans[i]
		im.saveState(s, bs[sp[0]:sp[1]])
	}
}

// LoadState overwrites slot s with the accumulators in row row of cols (one array per
// StateFields() entry, as written by AppendState).
func (a *Aggs) LoadState(s int32, cols []arrow.Array, row int) {
	for i, im := range a.impls {
		sp := a.spans[i]
		im.loadState(s, cols[sp[0]:sp[1]], row)
	}
}
