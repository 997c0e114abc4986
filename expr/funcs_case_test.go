package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// evalString evaluates the string expression src over rec (the caller releases the result).
func evalString(t *testing.T, src string, rec arrow.RecordBatch, mem memory.Allocator) *array.String {
	t.Helper()
	p, err := Compile(src, rec.Schema(), Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Eval(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*array.String)
}

// lower and upper map ASCII text byte by byte and other text as strings.ToLower/ToUpper do;
// NULL stays NULL.
func TestCaseMap(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := []string{"", "Alpha", "BETA", "gamma", "Delta-Force 42!", "ÄÖÜ straße", "İstanbul", "mIxEd\x7f@[`{"}
	b := array.NewStringBuilder(mem)
	for _, v := range vals {
		b.Append(v)
	}
	b.AppendNull()
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	col.Release()
	defer rec.Release()
	for fn, want := range map[string]func(string) string{"lower": strings.ToLower, "upper": strings.ToUpper, "lcase": strings.ToLower, "ucase": strings.ToUpper} {
		got := evalString(t, fn+"(s)", rec, mem)
		for i, v := range vals {
			if got.IsNull(i) || got.Value(i) != want(v) {
				t.Errorf("%s(%q) = %q, want %q", fn, v, got.ValueStr(i), want(v))
			}
		}
		if !got.IsNull(len(vals)) {
			t.Errorf("%s(NULL) = %q", fn, got.Value(len(vals)))
		}
		got.Release()
	}
}

// A column of ASCII text (mapped in one pass over its bytes), with nulls, also as a slice
// (non-zero offsets): every value as strings.ToLower/ToUpper gives it.
func TestCaseMapASCII(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	var vals []string
	for i := 0; i < 100; i++ {
		v := []string{"Alpha", "BETA", "", "gamma-9 Z@[", "x"}[i%5]
		vals = append(vals, v)
		if i%7 == 3 {
			b.AppendNull()
		} else {
			b.Append(v)
		}
	}
	whole := b.NewArray()
	b.Release()
	defer whole.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, lo := range []int{0, 13} {
		col := array.NewSlice(whole, int64(lo), 100)
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		col.Release()
		for fn, want := range map[string]func(string) string{"lower": strings.ToLower, "upper": strings.ToUpper} {
			got := evalString(t, fn+"(s)", rec, mem)
			if err := got.ValidateFull(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < got.Len(); i++ {
				r := lo + i
				if r%7 == 3 {
					if !got.IsNull(i) {
						t.Errorf("slice %d: %s(NULL) = %q", lo, fn, got.Value(i))
					}
				} else if got.IsNull(i) || got.Value(i) != want(vals[r]) {
					t.Errorf("slice %d: %s(%q) = %q, want %q", lo, fn, vals[r], got.ValueStr(i), want(vals[r]))
				}
			}
			got.Release()
		}
		rec.Release()
	}
}
