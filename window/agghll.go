package window

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cespare/xxhash/v2"

	"github.com/streamkit/streamkit/codec"
)

// ---- approx_count_distinct: HyperLogLog ----
//
// hllAgg is approx_count_distinct(x[, relativeSD]): a dense HyperLogLog sketch of 2^p
// registers per window, p = ⌈2·log2(1.106/relativeSD)⌉ as Spark's HyperLogLogPlusPlus
// (p = 9, 512 registers, for the default 0.05). A value's register and rank come from the
// 64-bit xxHash of its normalised encoding (valueCodec: -0.0 is 0.0, every NaN one NaN). The
// estimate is Ertl's improved raw estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", 2017, algorithm 6), which is unbiased over the whole range without
// HLL++'s empirical bias tables, with the standard error 1.04/√m ≤ relativeSD of HLL.
// Estimates are not Spark's bit for bit (Spark hashes with XXH64 of its own row encoding) but
// have the same error bound. The registers are state: merging takes their maxima.
type hllAgg struct {
	p     uint8
	codec *valueCodec
	regs  [][]byte // nil: no value yet
	buf   []byte
}

// maxHLLPrecision bounds p (2^18 registers, 256 KiB per window: relativeSD ≥ 0.0022).
const maxHLLPrecision = 18

// hllPrecision is Spark's number of index bits for relativeSD: at least 4 (relativeSD ≤
// 0.39), here at most maxHLLPrecision.
func hllPrecision(relativeSD float64) (uint8, error) {
	p := math.Ceil(2 * math.Log2(1.106/relativeSD))
	switch {
	case p < 4:
		return 0, fmt.Errorf("relativeSD %g is too large: HyperLogLog needs at least 4 index bits, so at most 0.39 (as Spark)", relativeSD)
	case p > maxHLLPrecision:
		return 0, fmt.Errorf("relativeSD %g is too small: it needs %g index bits, at most %d are kept (256 KiB per window; relativeSD ≥ 0.0022)", relativeSD, p, maxHLLPrecision)
	}
	return uint8(p), nil
}

func (a *hllAgg) grow(n int)     { a.regs = growTo(a.regs, n) }
func (a *hllAgg) reset(s int32)  { a.regs[s] = nil }
func (a *hllAgg) slotBytes() int { return 24 }

// add folds the hash of one value into the registers of slot s.
func (a *hllAgg) add(s int32, h uint64) {
	r := a.regs[s]
	if r == nil {
		r = make([]byte, 1<<a.p)
		a.regs[s] = r
	}
	q := 64 - int(a.p)
	rank := byte(min(bits.LeadingZeros64(h<<a.p), q) + 1)
	if i := h >> q; rank > r[i] {
		r[i] = rank
	}
}

func (a *hllAgg) update(c codec.Column, rows, slots []int32, _ []int64) {
	nulls := c.HasNulls()
	for j, s := range slots {
		r := int(rows[j])
		if nulls && c.IsNull(r) {
			continue
		}
		a.buf = a.codec.append(a.buf[:0], c.Arr, r)
		a.add(s, xxhash.Sum64(a.buf))
	}
}
func (a *hllAgg) merge(dst, src int32) {
	rs := a.regs[src]
	if rs == nil {
		return
	}
	if a.regs[dst] == nil {
		a.regs[dst] = make([]byte, len(rs))
	}
	rd := a.regs[dst]
	for i, v := range rs {
		rd[i] = max(rd[i], v)
	}
}

// estimate is Ertl's improved raw estimate of the distinct values behind registers r.
func (a *hllAgg) estimate(r []byte) int64 {
	if r == nil {
		return 0
	}
	q := 64 - int(a.p)
	counts := make([]int, q+2)
	for _, v := range r {
		counts[v]++
	}
	m := float64(len(r))
	z := m * hllTau(1-float64(counts[q+1])/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + float64(counts[k]))
	}
	z += m * hllSigma(float64(counts[0])/m)
	return int64(math.Round(m * m / (2 * math.Ln2) / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

func (a *hllAgg) result(s int32, b array.Builder) {
	b.(*array.Int64Builder).Append(a.estimate(a.regs[s]))
}

// hllRegisterType is one non-zero register in the state: its index and rank.
var hllRegisterType = arrow.StructOf(
	arrow.Field{Name: "register", Type: arrow.PrimitiveTypes.Uint32},
	arrow.Field{Name: "rank", Type: arrow.PrimitiveTypes.Uint8},
)

func (a *hllAgg) stateFields(name string) []arrow.Field {
	return []arrow.Field{{Name: name + ".registers", Type: arrow.ListOfNonNullable(hllRegisterType)}}
}

// saveState writes the non-zero registers only: a window with few values has a short list.
func (a *hllAgg) saveState(s int32, bs []array.Builder) {
	lb := bs[0].(*array.ListBuilder)
	lb.Append(true)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	ib := sb.FieldBuilder(0).(*array.Uint32Builder)
	rb := sb.FieldBuilder(1).(*array.Uint8Builder)
	for i, v := range a.regs[s] {
		if v != 0 {
			sb.Append(true)
			ib.Append(uint32(i))
			rb.Append(v)
		}
	}
}
func (a *hllAgg) loadState(s int32, cols []arrow.Array, row int) {
	a.reset(s)
	l := cols[0].(*array.List)
	if l.IsNull(row) {
		return
	}
	lo, hi := l.ValueOffsets(row)
	if lo == hi {
		return
	}
	st := l.ListValues().(*array.Struct)
	idx := st.Field(0).(*array.Uint32)
	rank := st.Field(1).(*array.Uint8)
	r := make([]byte, 1<<a.p)
	for i := int(lo); i < int(hi); i++ {
		if j := int(idx.Value(i)); j < len(r) {
			r[j] = rank.Value(i)
		}
	}
	a.regs[s] = r
}
