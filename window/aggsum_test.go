package window

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestIntSumOverflowStateAndMerge: try_sum's overflow survives a checkpoint (its
// <name>.overflow state column) and a merge (session windows), and sum reports an overflow
// that only a merge causes.
func TestIntSumOverflowStateAndMerge(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	calls, err := ParseAggs("try_sum(x) as t, sum(x) as s")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAggs(s, calls)
	if err != nil {
		t.Fatal(err)
	}
	var over []int32
	a.OnOverflow(func(slot int32, c AggCall) {
		if c.Func != FuncSum {
			t.Errorf("OnOverflow for %s", c)
		}
		over = append(over, slot)
	})
	a.Grow(4)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{math.MaxInt64, 1, math.MaxInt64, 3}, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(s, []arrow.Array{col}, 4)
	col.Release()
	defer rec.Release()
	a.Bind(rec)
	a.Update([]int32{0, 2}, []int32{0, 1}, nil) // slot 0: MaxInt64, slot 1: MaxInt64
	a.Update([]int32{1}, []int32{0}, nil)       // slot 0 overflows
	a.Bind(nil)
	if len(over) != 1 || over[0] != 0 {
		t.Fatalf("sum overflows reported for slots %v, want [0]", over)
	}
	// Checkpoint slot 0 and restore it into slot 2: try_sum stays null.
	sb := make([]array.Builder, len(a.StateFields()))
	for i, f := range a.StateFields() {
		sb[i] = array.NewBuilder(mem, f.Type)
		defer sb[i].Release()
	}
	a.AppendState(0, sb)
	cols := make([]arrow.Array, len(sb))
	for i, b := range sb {
		cols[i] = b.NewArray()
		defer cols[i].Release()
	}
	a.LoadState(2, cols, 0)
	result := func(slot int32) arrow.Array {
		rb, sum := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		defer rb.Release()
		defer sum.Release()
		a.AppendResults(slot, []array.Builder{rb, sum})
		return rb.NewArray()
	}
	if r := result(2); !r.IsNull(0) {
		t.Errorf("try_sum restored from an overflowed state = %v, want null", r)
	} else {
		r.Release()
	}
	// A merge that overflows: try_sum null, sum reported.
	over = nil
	a.Merge(1, 3) // empty slot 3: nothing
	a.Merge(3, 1) // slot 3 = MaxInt64
	a.Merge(1, 3) // MaxInt64 + MaxInt64
	if len(over) != 1 || over[0] != 1 {
		t.Errorf("merge overflow reported for slots %v, want [1]", over)
	}
	if r := result(1); !r.IsNull(0) {
		t.Errorf("try_sum after an overflowing merge = %v, want null", r)
	} else {
		r.Release()
	}
}
