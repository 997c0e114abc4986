package expr

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestConstant(t *testing.T) {
	for _, c := range []struct {
		src, typ, val string
		ok            bool
	}{
		{"5", "int", "5", true},
		{"-5L", "bigint", "-5", true},
		{"1.25", "decimal(3,2)", "1.25", true},
		{"DATE '2024-05-01'", "date", "2024-05-01", true},
		{"CAST('7' AS BIGINT)", "bigint", "7", true},
		{"CAST('x' AS BIGINT)", "", "", false}, // fails per row, not folded
		{"NULL", "void", "null", true},
		{"a + 1", "", "", false}, // reads a column
	} {
		n, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		typ, sc, ok := Constant(n)
		if ok != c.ok {
			t.Fatalf("%s: ok %v, want %v", c.src, ok, c.ok)
		}
		if !ok {
			continue
		}
		val := "null"
		if sc.IsValid() {
			val = sc.String()
		}
		if typ.String() != c.typ || val != c.val {
			t.Errorf("%s: %s %s, want %s %s", c.src, typ, val, c.typ, c.val)
		}
	}
}

// IS [NOT] NULL on a decimal column (arrow-go's is_null kernel panics on decimals).
func TestIsNullDecimal(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	sc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt, Nullable: true}}, nil)
	b := array.NewDecimal128Builder(mem, dt)
	b.Append(decimal128.FromI64(125))
	b.AppendNull()
	b.Append(decimal128.FromI64(200))
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 3)
	col.Release()
	defer rec.Release()
	for src, want := range map[string]string{"d IS NULL": "[false true false]", "d IS NOT NULL": "[true false true]", "NOT (d IS NULL) AND d > 1.5": "[false false true]"} {
		p, err := CompilePredicate(src, sc, Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Eval(context.Background(), rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := m.String(); got != want {
			t.Errorf("%s: %s, want %s", src, got, want)
		}
		m.Release()
	}
}
