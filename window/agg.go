package window

import (
	"cmp"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// aggImpl is one aggregate's accumulators, stored column-wise and indexed by slot.
type aggImpl interface {
	grow(n int)
	reset(s int32)
	// update folds row rows[j] of c into slot slots[j] for every j; ts[r] is row r's event time.
	update(c codec.Column, rows, slots []int32, ts []int64)
	merge(dst, src int32)
	result(s int32, b array.Builder)
	stateFields(name string) []arrow.Field
	saveState(s int32, bs []array.Builder)
	loadState(s int32, cols []arrow.Array, row int)
	slotBytes() int
}

func growTo[T any](s []T, n int) []T {
	if len(s) >= n {
		return s
	}
	return append(s, make([]T, n-len(s))...)
}

// ---- count ----

type countAgg struct {
	star bool
	n    []int64
}

func (a *countAgg) grow(n int)     { a.n = growTo(a.n, n) }
func (a *countAgg) reset(s int32)  { a.n[s] = 0 }
func (a *countAgg) slotBytes() int { return 8 }
func (a *countAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	n := a.n
	if a.star || !c.HasNulls() {
		for _, s := range slots {
			n[s]++
		}
		return
	}
	for j, s := range slots {
		if !c.IsNull(int(rows[j])) {
			n[s]++
		}
	}
}
func (a *countAgg) merge(dst, src int32)            { a.n[dst] += a.n[src] }
func (a *countAgg) result(s int32, b array.Builder) { b.(*array.Int64Builder).Append(a.n[s]) }
func (a *countAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64}}
}
func (a *countAgg) saveState(s int32, bs []array.Builder) { a.result(s, bs[0]) }
func (a *countAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.n[s] = cols[0].(*array.Int64).Value(row)
}

// ---- sum ----

type number interface{ int64 | float64 }

// sumAgg is sum (and try_sum) of floats: float64, overflowing to ±Inf as in Spark.
type sumAgg[T number, O valueOps[T]] struct {
	v       []T
	has     []bool
	scratch []T
	out     arrow.DataType
}

func (a *sumAgg[T, O]) grow(n int)     { a.v, a.has = growTo(a.v, n), growTo(a.has, n) }
func (a *sumAgg[T, O]) reset(s int32)  { a.v[s], a.has[s] = 0, false }
func (a *sumAgg[T, O]) slotBytes() int { return 9 }
func (a *sumAgg[T, O]) update(c codec.Column, rows, slots []int32, _ []int64) {
	var o O
	vals := o.batch(c.Arr, &a.scratch)
	v, has := a.v, a.has
	if !c.HasNulls() {
		for j, s := range slots {
			v[s] += vals[rows[j]]
			has[s] = true
		}
		return
	}
	for j, s := range slots {
		if r := rows[j]; !c.IsNull(int(r)) {
			v[s] += vals[r]
			has[s] = true
		}
	}
}
func (a *sumAgg[T, O]) merge(dst, src int32) {
	a.v[dst] += a.v[src]
	a.has[dst] = a.has[dst] || a.has[src]
}
func (a *sumAgg[T, O]) result(s int32, b array.Builder) {
	if !a.has[s] {
		b.AppendNull()
		return
	}
	var o O
	o.append(b, a.v[s])
}
func (a *sumAgg[T, O]) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name, Type: a.out, Nullable: true}}
}
func (a *sumAgg[T, O]) saveState(s int32, bs []array.Builder) { a.result(s, bs[0]) }
func (a *sumAgg[T, O]) loadState(s int32, cols []arrow.Array, row int) {
	var o O
	a.has[s] = !cols[0].IsNull(row)
	a.v[s] = 0
	if a.has[s] {
		a.v[s] = o.read(cols[0], row)
	}
}

// intSumAgg is sum and try_sum of integers into bigint (int64), as Spark's Sum of integral
// types in ANSI mode: an overflow is reported (sum: the stage fails with
// ARITHMETIC_OVERFLOW, see Aggs.OnOverflow) or, for try_sum, makes the slot's result null for
// good (Spark's TrySum). uint64 values above the bigint range overflow by themselves.
type intSumAgg struct {
	try      bool
	unsigned bool // the input is uint64 (read as int64 bits)
	v        []int64
	has      []bool
	over     []bool // try_sum: overflowed
	scratch  []int64
	report   func(s int32) // sum: called on the first overflow of a slot
}

func (a *intSumAgg) grow(n int) {
	a.v, a.has = growTo(a.v, n), growTo(a.has, n)
	if a.try {
		a.over = growTo(a.over, n)
	}
}
func (a *intSumAgg) reset(s int32) {
	a.v[s], a.has[s] = 0, false
	if a.try {
		a.over[s] = false
	}
}
func (a *intSumAgg) slotBytes() int { return 10 }

// add folds x into slot s, checking for overflow (the sum's sign differs from both operands').
func (a *intSumAgg) add(s int32, x int64, carry bool) {
	if a.try && a.over[s] {
		return
	}
	sum := a.v[s] + x
	if carry || (a.v[s]^sum)&(x^sum) < 0 {
		a.overflow(s)
		return
	}
	a.v[s], a.has[s] = sum, true
}

func (a *intSumAgg) overflow(s int32) {
	a.has[s] = true
	if a.try {
		a.over[s] = true
		return
	}
	a.report(s)
}

func (a *intSumAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	vals := i64Ops{}.batch(c.Arr, &a.scratch)
	nulls := c.HasNulls()
	for j, s := range slots {
		r := rows[j]
		if nulls && c.IsNull(int(r)) {
			continue
		}
		x := vals[r]
		a.add(s, x, a.unsigned && x < 0)
	}
}
func (a *intSumAgg) merge(dst, src int32) {
	if !a.has[src] {
		return
	}
	if a.try && a.over[src] {
		a.overflow(dst)
		return
	}
	a.add(dst, a.v[src], false)
}
func (a *intSumAgg) result(s int32, b array.Builder) {
	if !a.has[s] || a.try && a.over[s] {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(a.v[s])
}
func (a *intSumAgg) stateFields(name string) []arrow.Field {
	f := []arrow.Field{{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	if a.try {
		f = append(f, arrow.Field{Name: name + ".overflow", Type: arrow.FixedWidthTypes.Boolean})
	}
	return f
}
func (a *intSumAgg) saveState(s int32, bs []array.Builder) {
	if !a.has[s] || a.try && a.over[s] {
		bs[0].AppendNull()
	} else {
		bs[0].(*array.Int64Builder).Append(a.v[s])
	}
	if a.try {
		bs[1].(*array.BooleanBuilder).Append(a.over[s])
	}
}
func (a *intSumAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	if !cols[0].IsNull(row) {
		a.v[s], a.has[s] = cols[0].(*array.Int64).Value(row), true
	}
	if a.try && cols[1].(*array.Boolean).Value(row) {
		a.has[s], a.over[s] = true, true
	}
}

// ---- avg: sum (float64) + count ----

type avgAgg struct {
	sum     []float64
	n       []int64
	scratch []float64
}

func (a *avgAgg) grow(n int)     { a.sum, a.n = growTo(a.sum, n), growTo(a.n, n) }
func (a *avgAgg) reset(s int32)  { a.sum[s], a.n[s] = 0, 0 }
func (a *avgAgg) slotBytes() int { return 16 }
func (a *avgAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	vals := f64Ops{}.batch(c.Arr, &a.scratch)
	sum, n := a.sum, a.n
	nulls := c.HasNulls()
	for j, s := range slots {
		r := rows[j]
		if nulls && c.IsNull(int(r)) {
			continue
		}
		sum[s] += vals[r]
		n[s]++
	}
}
func (a *avgAgg) merge(dst, src int32) { a.sum[dst] += a.sum[src]; a.n[dst] += a.n[src] }
func (a *avgAgg) result(s int32, b array.Builder) {
	if a.n[s] == 0 {
		b.AppendNull()
		return
	}
	b.(*array.Float64Builder).Append(a.sum[s] / float64(a.n[s]))
}
func (a *avgAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{
		{Name: name + ".sum", Type: arrow.PrimitiveTypes.Float64},
		{Name: name + ".count", Type: arrow.PrimitiveTypes.Int64},
	}
}
func (a *avgAgg) saveState(s int32, bs []array.Builder) {
	bs[0].(*array.Float64Builder).Append(a.sum[s])
	bs[1].(*array.Int64Builder).Append(a.n[s])
}
func (a *avgAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.sum[s] = cols[0].(*array.Float64).Value(row)
	a.n[s] = cols[1].(*array.Int64).Value(row)
}

// ---- min / max ----
// Values compare with sqlLess, Spark SQL's order of floats (SQLOrderingUtil.compareDoubles,
// also DuckDB's): NaN equals NaN and is greater than every other value, +Inf included, and
// -0.0 equals 0.0. So max is NaN if any value is NaN, min ignores NaN unless all values are
// NaN, and neither depends on arrival order. Nulls are skipped before comparing.

// sqlLess reports a < b in Spark SQL's order: for floats NaN is the largest value; for other
// types (where x != x never holds) it is a < b.
func sqlLess[T cmp.Ordered](a, b T) bool {
	if a != a { // NaN: less than nothing
		return false
	}
	return b != b || a < b
}

type extremeAgg[T cmp.Ordered, O valueOps[T]] struct {
	isMax   bool
	v       []T
	has     []bool
	scratch []T
	dt      arrow.DataType
}

func (a *extremeAgg[T, O]) grow(n int) { a.v, a.has = growTo(a.v, n), growTo(a.has, n) }
func (a *extremeAgg[T, O]) reset(s int32) {
	var zero T
	a.v[s], a.has[s] = zero, false
}
func (a *extremeAgg[T, O]) slotBytes() int { return int(sizeOf[T]()) + 1 }
func (a *extremeAgg[T, O]) update(c codec.Column, rows, slots []int32, _ []int64) {
	var o O
	vals := o.batch(c.Arr, &a.scratch)
	nulls := c.HasNulls()
	v, has := a.v, a.has
	for j, s := range slots {
		r := rows[j]
		if nulls && c.IsNull(int(r)) {
			continue
		}
		x := vals[r]
		if !has[s] || (a.isMax && sqlLess(v[s], x)) || (!a.isMax && sqlLess(x, v[s])) {
			v[s], has[s] = o.clone(x), true
		}
	}
}
func (a *extremeAgg[T, O]) merge(dst, src int32) {
	if !a.has[src] {
		return
	}
	if x := a.v[src]; !a.has[dst] || (a.isMax && sqlLess(a.v[dst], x)) || (!a.isMax && sqlLess(x, a.v[dst])) {
		a.v[dst], a.has[dst] = x, true
	}
}
func (a *extremeAgg[T, O]) result(s int32, b array.Builder) {
	if !a.has[s] {
		b.AppendNull()
		return
	}
	var o O
	o.append(b, a.v[s])
}
func (a *extremeAgg[T, O]) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name, Type: a.dt, Nullable: true}}
}
func (a *extremeAgg[T, O]) saveState(s int32, bs []array.Builder) { a.result(s, bs[0]) }
func (a *extremeAgg[T, O]) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	if !cols[0].IsNull(row) {
		var o O
		a.v[s], a.has[s] = o.clone(o.read(cols[0], row)), true
	}
}

func sizeOf[T any]() uintptr {
	var z T
	switch any(z).(type) {
	case string:
		return 16
	}
	return 8
}

// ---- first / last by event time ----

type firstLastAgg[T any, O valueOps[T]] struct {
	last    bool
	v       []T
	t       []int64
	has     []bool
	scratch []T
	dt      arrow.DataType
}

func (a *firstLastAgg[T, O]) grow(n int) {
	a.v, a.t, a.has = growTo(a.v, n), growTo(a.t, n), growTo(a.has, n)
}
func (a *firstLastAgg[T, O]) reset(s int32) {
	var zero T
	a.v[s], a.t[s], a.has[s] = zero, 0, false
}
func (a *firstLastAgg[T, O]) slotBytes() int { return int(sizeOf[T]()) + 9 }
func (a *firstLastAgg[T, O]) update(c codec.Column, rows, slots []int32, ts []int64) {
	var o O
	vals := o.batch(c.Arr, &a.scratch)
	nulls := c.HasNulls()
	for j, s := range slots {
		r := rows[j]
		if nulls && c.IsNull(int(r)) {
			continue
		}
		t := ts[r]
		if !a.has[s] || (a.last && t >= a.t[s]) || (!a.last && t < a.t[s]) {
			a.v[s], a.t[s], a.has[s] = o.clone(vals[r]), t, true
		}
	}
}
func (a *firstLastAgg[T, O]) merge(dst, src int32) {
	if !a.has[src] {
		return
	}
	if t := a.t[src]; !a.has[dst] || (a.last && t > a.t[dst]) || (!a.last && t < a.t[dst]) {
		a.v[dst], a.t[dst], a.has[dst] = a.v[src], t, true
	}
}
func (a *firstLastAgg[T, O]) result(s int32, b array.Builder) {
	if !a.has[s] {
		b.AppendNull()
		return
	}
	var o O
	o.append(b, a.v[s])
}
func (a *firstLastAgg[T, O]) stateFields(name string) []arrow.Field {
	return []arrow.Field{
		{Name: name, Type: a.dt, Nullable: true},
		{Name: name + ".time", Type: timestampUS, Nullable: true},
	}
}
func (a *firstLastAgg[T, O]) saveState(s int32, bs []array.Builder) {
	a.result(s, bs[0])
	if a.has[s] {
		bs[1].(*array.TimestampBuilder).Append(arrow.Timestamp(a.t[s]))
	} else {
		bs[1].AppendNull()
	}
}
func (a *firstLastAgg[T, O]) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	if !cols[0].IsNull(row) {
		var o O
		a.v[s], a.has[s] = o.clone(o.read(cols[0], row)), true
		a.t[s] = int64(cols[1].(*array.Timestamp).Value(row))
	}
}

// ---- count_distinct: exact set of encoded values ----

type distinctAgg struct {
	codec *valueCodec
	dt    arrow.DataType
	sets  []map[string]struct{}
	buf   []byte
}

func (a *distinctAgg) grow(n int)     { a.sets = growTo(a.sets, n) }
func (a *distinctAgg) reset(s int32)  { a.sets[s] = nil }
func (a *distinctAgg) slotBytes() int { return 8 }
func (a *distinctAgg) add(s int32, v []byte) {
	set := a.sets[s]
	if set == nil {
		set = make(map[string]struct{}, 1)
		a.sets[s] = set
	}
	if _, ok := set[string(v)]; !ok {
		set[string(v)] = struct{}{}
	}
}
func (a *distinctAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	nulls := c.HasNulls()
	for j, s := range slots {
		r := int(rows[j])
		if nulls && c.IsNull(r) {
			continue
		}
		a.buf = a.codec.append(a.buf[:0], c.Arr, r)
		a.add(s, a.buf)
	}
}
func (a *distinctAgg) merge(dst, src int32) {
	for v := range a.sets[src] {
		a.add(dst, unsafeBytes(v))
	}
}
func (a *distinctAgg) result(s int32, b array.Builder) {
	b.(*array.Int64Builder).Append(int64(len(a.sets[s])))
}
func (a *distinctAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name + ".values", Type: arrow.ListOf(a.dt), Nullable: true}}
}
func (a *distinctAgg) saveState(s int32, bs []array.Builder) {
	lb := bs[0].(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder()
	for v := range a.sets[s] {
		if _, err := a.codec.decode(unsafeBytes(v), vb); err != nil {
			panic(err) // bytes were produced by the same codec
		}
	}
}
func (a *distinctAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	l := cols[0].(*array.List)
	if l.IsNull(row) {
		return
	}
	lo, hi := l.ValueOffsets(row)
	vals := l.ListValues()
	for i := int(lo); i < int(hi); i++ {
		if vals.IsNull(i) {
			continue
		}
		a.buf = a.codec.append(a.buf[:0], vals, i)
		a.add(s, a.buf)
	}
}

// dictionaryOK lists the functions that take dictionary-encoded input (through valueCodec).
var dictionaryOK = map[string]bool{FuncCount: true, FuncCountDistinct: true, FuncApproxDistinct: true, FuncCollectList: true, FuncCollectSet: true}

// listIf is list<dt> (of non-null elements) when list holds, else dt.
func listIf(list bool, dt arrow.DataType) arrow.DataType {
	if list {
		return arrow.ListOfNonNullable(dt)
	}
	return dt
}

// newByAgg builds max_by(x, ord) or min_by(x, ord) over x of type dt and ord of type ordDT.
func newByAgg(c AggCall, dt, ordDT arrow.DataType) (aggImpl, arrow.DataType, error) {
	xc, err := newValueCodec(dt)
	if _, dict := dt.(*arrow.DictionaryType); err != nil || dict {
		return nil, nil, fmt.Errorf("%w: %s: column type %s is not a scalar type", ErrAggSpec, c, dt)
	}
	isMax := c.Func == FuncMaxBy
	switch category(ordDT) {
	case "i64":
		return &byAgg[int64, i64Ops]{isMax: isMax, xc: xc, ordDT: ordDT}, dt, nil
	case "u64":
		return &byAgg[uint64, u64Ops]{isMax: isMax, xc: xc, ordDT: ordDT}, dt, nil
	case "f64":
		return &byAgg[float64, f64Ops]{isMax: isMax, xc: xc, ordDT: ordDT}, dt, nil
	case "str":
		return &byAgg[string, strOps]{isMax: isMax, xc: xc, ordDT: ordDT}, dt, nil
	}
	return nil, nil, fmt.Errorf("%w: %s: ordering column type %s is not a number, boolean, temporal, string or binary type", ErrAggSpec, c, ordDT)
}

var timestampUS = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// newAggImpl builds the accumulator of call c over an input of type dt (nil for count(*)) and
// returns it with its output type.
func newAggImpl(c AggCall, dt arrow.DataType) (aggImpl, arrow.DataType, error) {
	bad := func(want string) (aggImpl, arrow.DataType, error) {
		return nil, nil, fmt.Errorf("%w: %s(%s): column type %s is not %s", ErrAggSpec, c.Func, c.Arg, dt, want)
	}
	if _, ok := dt.(*arrow.DictionaryType); ok && !dictionaryOK[c.Func] {
		return nil, nil, fmt.Errorf("%w: %s(%s): dictionary-encoded columns are only supported by count, count_distinct, approx_count_distinct, collect_list and collect_set", ErrAggSpec, c.Func, c.Arg)
	}
	switch c.Func {
	case FuncCount:
		return &countAgg{star: c.Arg == ""}, arrow.PrimitiveTypes.Int64, nil
	case FuncSum, FuncTrySum:
		switch {
		case isInteger(dt):
			return &intSumAgg{try: c.Func == FuncTrySum, unsigned: dt.ID() == arrow.UINT64}, arrow.PrimitiveTypes.Int64, nil
		case isFloat(dt):
			return &sumAgg[float64, f64Ops]{out: arrow.PrimitiveTypes.Float64}, arrow.PrimitiveTypes.Float64, nil
		}
		return bad("an integer or float")
	case FuncAvg:
		if isInteger(dt) || isFloat(dt) {
			return &avgAgg{}, arrow.PrimitiveTypes.Float64, nil
		}
		return bad("an integer or float")
	case FuncMin, FuncMax:
		isMax := c.Func == FuncMax
		switch category(dt) {
		case "i64":
			return &extremeAgg[int64, i64Ops]{isMax: isMax, dt: dt}, dt, nil
		case "u64":
			return &extremeAgg[uint64, u64Ops]{isMax: isMax, dt: dt}, dt, nil
		case "f64":
			return &extremeAgg[float64, f64Ops]{isMax: isMax, dt: dt}, dt, nil
		case "str":
			return &extremeAgg[string, strOps]{isMax: isMax, dt: dt}, dt, nil
		}
		return bad("a number, boolean, temporal, string or binary type")
	case FuncFirst, FuncLast:
		last := c.Func == FuncLast
		switch category(dt) {
		case "i64":
			return &firstLastAgg[int64, i64Ops]{last: last, dt: dt}, dt, nil
		case "u64":
			return &firstLastAgg[uint64, u64Ops]{last: last, dt: dt}, dt, nil
		case "f64":
			return &firstLastAgg[float64, f64Ops]{last: last, dt: dt}, dt, nil
		case "str":
			return &firstLastAgg[string, strOps]{last: last, dt: dt}, dt, nil
		}
		return bad("a number, boolean, temporal, string or binary type")
	case FuncCountDistinct:
		vc, err := newValueCodec(dt)
		if err != nil {
			return bad("a hashable scalar type")
		}
		return &distinctAgg{codec: vc, dt: vc.dt}, arrow.PrimitiveTypes.Int64, nil
	case FuncStddev, FuncStd, FuncStddevSamp, FuncStddevPop, FuncVariance, FuncVarSamp, FuncVarPop:
		if !isInteger(dt) && !isFloat(dt) {
			return bad("an integer or float")
		}
		pop := c.Func == FuncStddevPop || c.Func == FuncVarPop
		sqrt := c.Func == FuncStddev || c.Func == FuncStd || c.Func == FuncStddevSamp || c.Func == FuncStddevPop
		return &momentsAgg{sqrt: sqrt, pop: pop}, arrow.PrimitiveTypes.Float64, nil
	case FuncMedian, FuncPercentile:
		if !isInteger(dt) && !isFloat(dt) {
			return bad("an integer or float")
		}
		a := &valuesAgg{ps: c.Percentages, array: c.PArray}
		if c.Func == FuncMedian {
			a.ps = []float64{0.5}
		}
		return a, listIf(a.array, arrow.PrimitiveTypes.Float64), nil
	case FuncPercentileApprox, FuncApproxPercentile:
		cat := category(dt)
		switch dt.ID() {
		case arrow.BOOL, arrow.TIME32, arrow.TIME64:
			cat = ""
		}
		if cat == "" || cat == "str" {
			return bad("a number, date, timestamp or duration")
		}
		return &approxPercentileAgg{ps: c.Percentages, array: c.PArray, relErr: 1 / float64(c.Accuracy), cat: cat}, listIf(c.PArray, dt), nil
	case FuncApproxDistinct:
		vc, err := newValueCodec(dt)
		if err != nil {
			return bad("a hashable scalar type")
		}
		p, err := hllPrecision(c.RelativeSD)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrAggSpec, c, err)
		}
		return &hllAgg{p: p, codec: vc}, arrow.PrimitiveTypes.Int64, nil
	case FuncCollectList, FuncCollectSet:
		vc, err := newValueCodec(dt)
		if err != nil {
			return bad("a scalar type")
		}
		return &collectAgg{set: c.Func == FuncCollectSet, codec: vc}, arrow.ListOfNonNullable(vc.dt), nil
	case FuncMaxBy, FuncMinBy:
		return nil, nil, fmt.Errorf("%w: %s needs its ordering column (newByAgg)", ErrAggSpec, c)
	}
	return nil, nil, fmt.Errorf("%w: unknown function %q", ErrAggSpec, c.Func)
}
