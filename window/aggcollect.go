package window

import (
	"cmp"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// ---- collect_list, collect_set ----

// collectAgg is collect_list(x) (set false) and collect_set(x) (set true): the non-null
// values of the window as valueCodec encodings, concatenated in arrival order; collect_set
// keeps the first arrival of each distinct value (floats normalised as in count_distinct:
// -0.0 is 0.0 and NaN equals NaN, where Spark keeps each NaN). The result is never null: an
// empty array when no value was seen, as Spark's. Memory grows with the values kept.
type collectAgg struct {
	set   bool
	codec *valueCodec
	data  [][]byte              // encoded values of slot s, back to back
	n     []int32               // values in data[s]
	seen  []map[string]struct{} // collect_set: the values of data[s]
	buf   []byte
}

func (a *collectAgg) grow(n int) {
	a.data, a.n = growTo(a.data, n), growTo(a.n, n)
	if a.set {
		a.seen = growTo(a.seen, n)
	}
}
func (a *collectAgg) reset(s int32) {
	a.data[s], a.n[s] = nil, 0
	if a.set {
		a.seen[s] = nil
	}
}
func (a *collectAgg) slotBytes() int { return 36 }

// add appends one encoded value to slot s (for a set only when it is new).
func (a *collectAgg) add(s int32, v []byte) {
	if a.set {
		m := a.seen[s]
		if m == nil {
			m = map[string]struct{}{}
			a.seen[s] = m
		}
		if _, ok := m[string(v)]; ok {
			return
		}
		m[string(v)] = struct{}{}
	}
	a.data[s] = append(a.data[s], v...)
	a.n[s]++
}

func (a *collectAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
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

// each calls fn with every encoded value of slot s, in order.
func (a *collectAgg) each(s int32, fn func(v []byte)) {
	b := a.data[s]
	for len(b) > 0 {
		rest := a.codec.skip(b)
		fn(b[:len(b)-len(rest)])
		b = rest
	}
}

func (a *collectAgg) merge(dst, src int32) {
	if !a.set {
		a.data[dst] = append(a.data[dst], a.data[src]...)
		a.n[dst] += a.n[src]
		return
	}
	a.each(src, func(v []byte) { a.add(dst, v) })
}
func (a *collectAgg) result(s int32, b array.Builder) {
	lb := b.(*array.ListBuilder)
	lb.Append(true)
	vb := lb.ValueBuilder()
	vb.Reserve(int(a.n[s]))
	a.each(s, func(v []byte) {
		if _, err := a.codec.decode(v, vb); err != nil {
			panic(err) // bytes were produced by the same codec
		}
	})
}
func (a *collectAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name + ".values", Type: arrow.ListOfNonNullable(a.codec.dt)}}
}
func (a *collectAgg) saveState(s int32, bs []array.Builder) { a.result(s, bs[0]) }
func (a *collectAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	l := cols[0].(*array.List)
	if l.IsNull(row) {
		return
	}
	lo, hi := l.ValueOffsets(row)
	vals := l.ListValues()
	for i := int(lo); i < int(hi); i++ {
		if !vals.IsNull(i) {
			a.buf = a.codec.append(a.buf[:0], vals, i)
			a.add(s, a.buf)
		}
	}
}

// ---- max_by, min_by ----

// ordBinder is an aggregate with a second input column (max_by's and min_by's ordering),
// bound per batch by Aggs.Bind.
type ordBinder interface{ bindOrd(c codec.Column) }

// byAgg is max_by(x, ord) and min_by(x, ord) as Spark's MaxBy and MinBy: x of the row with
// the largest (smallest) non-null ord, in the order of min and max (NaN the largest float); x
// may be null. On equal ords the later row wins, as in Spark, whose update keeps the old
// value only when its ordering is strictly better. x is kept as its valueCodec encoding.
type byAgg[T cmp.Ordered, O valueOps[T]] struct {
	isMax   bool
	xc      *valueCodec
	ordDT   arrow.DataType
	ordCol  codec.Column
	ord     []T
	has     []bool
	x       []string // encoded x; "" with xnull
	xnull   []bool
	scratch []T
	buf     []byte
}

func (a *byAgg[T, O]) bindOrd(c codec.Column) { a.ordCol = c }
func (a *byAgg[T, O]) grow(n int) {
	a.ord, a.has, a.x, a.xnull = growTo(a.ord, n), growTo(a.has, n), growTo(a.x, n), growTo(a.xnull, n)
}
func (a *byAgg[T, O]) reset(s int32) {
	var zero T
	a.ord[s], a.has[s], a.x[s], a.xnull[s] = zero, false, "", false
}
func (a *byAgg[T, O]) slotBytes() int { return int(sizeOf[T]()) + 18 }

// better reports whether ord o replaces the kept one of slot s (ties replace).
func (a *byAgg[T, O]) better(s int32, o T) bool {
	if !a.has[s] {
		return true
	}
	if a.isMax {
		return !sqlLess(o, a.ord[s])
	}
	return !sqlLess(a.ord[s], o)
}

func (a *byAgg[T, O]) update(c codec.Column, rows, slots []int32, _ []int64) {
	var o O
	ords := o.batch(a.ordCol.Arr, &a.scratch)
	onulls, xnulls := a.ordCol.HasNulls(), c.HasNulls()
	for j, s := range slots {
		r := int(rows[j])
		if onulls && a.ordCol.IsNull(r) || !a.better(s, ords[r]) {
			continue
		}
		a.ord[s], a.has[s] = o.clone(ords[r]), true
		if a.xnull[s] = xnulls && c.IsNull(r); a.xnull[s] {
			a.x[s] = ""
		} else {
			a.buf = a.xc.append(a.buf[:0], c.Arr, r)
			a.x[s] = string(a.buf)
		}
	}
}
func (a *byAgg[T, O]) merge(dst, src int32) {
	if a.has[src] && a.better(dst, a.ord[src]) {
		a.ord[dst], a.has[dst], a.x[dst], a.xnull[dst] = a.ord[src], true, a.x[src], a.xnull[src]
	}
}
func (a *byAgg[T, O]) result(s int32, b array.Builder) {
	if !a.has[s] || a.xnull[s] {
		b.AppendNull()
		return
	}
	if _, err := a.xc.decode(unsafeBytes(a.x[s]), b); err != nil {
		panic(err) // bytes were produced by the same codec
	}
}
func (a *byAgg[T, O]) stateFields(name string) []arrow.Field {
	return []arrow.Field{
		{Name: name, Type: a.xc.dt, Nullable: true},
		{Name: name + ".ord", Type: a.ordDT, Nullable: true},
	}
}
func (a *byAgg[T, O]) saveState(s int32, bs []array.Builder) {
	a.result(s, bs[0])
	if !a.has[s] {
		bs[1].AppendNull()
		return
	}
	var o O
	o.append(bs[1], a.ord[s])
}
func (a *byAgg[T, O]) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	if cols[1].IsNull(row) {
		return
	}
	var o O
	a.ord[s], a.has[s] = o.clone(o.read(cols[1], row)), true
	if a.xnull[s] = cols[0].IsNull(row); !a.xnull[s] {
		a.buf = a.xc.append(a.buf[:0], cols[0], row)
		a.x[s] = string(a.buf)
	}
}
