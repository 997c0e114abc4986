package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

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
		p, err := Compile(fn+"(s)", schema, Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Eval(context.Background(), rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*array.String)
		for i, v := range vals {
			if got.IsNull(i) || got.Value(i) != want(v) {
				t.Errorf("%s(%q) = %q, want %q", fn, v, got.ValueStr(i), want(v))
			}
		}
		if !got.IsNull(len(vals)) {
			t.Errorf("%s(NULL) = %q", fn, got.Value(len(vals)))
		}
		out.Release()
	}
}
