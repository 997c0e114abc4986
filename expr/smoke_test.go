package expr

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func smokeBatch(t *testing.T) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2147483647, 0, 5}, []bool{true, true, false, true})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"Ab", "x", "", "12"}, []bool{true, true, false, true})
	return b.NewRecordBatch()
}

func evalStrings(t *testing.T, src string, rec arrow.RecordBatch) (string, error) {
	p, err := Compile(src, rec.Schema(), Options{})
	if err != nil {
		return "", err
	}
	a, err := p.Eval(context.Background(), rec, func(i int) string { return "in.csv:" + string(rune('1'+i)) })
	if err != nil {
		return "", err
	}
	defer a.Release()
	var out []string
	for i := 0; i < a.Len(); i++ {
		out = append(out, formatValue(p.Type(), a, i))
	}
	return p.Type().String() + ":" + strings.Join(out, ","), nil
}

func TestSmoke(t *testing.T) {
	rec := smokeBatch(t)
	defer rec.Release()
	checkValues(t, rec, []evalCase{
		{"a + 1L", "bigint:2,2147483648,NULL,6"},
		{"a > 1 AND s IS NOT NULL", "boolean:false,true,false,true"},
		{"lower(s) || '-'", "string:ab-,x-,NULL,12-"},
		{"CASE WHEN a = 1 THEN 'one' WHEN a IS NULL THEN 'none' ELSE 'many' END", "string:one,many,none,many"},
		{"1.5 + 1", "decimal(3,1):2.5,2.5,2.5,2.5"},
		{"a / 2", "double:0.5,1.0737418235E9,NULL,2.5"},
		{"coalesce(a, -1)", "int:1,2147483647,-1,5"},
		{"try_add(a, 1)", "int:2,NULL,NULL,6"},
		{"CASE WHEN a < 10 THEN a + 1 ELSE 0 END", "int:2,0,0,6"},
		{"a IN (1, 5)", "boolean:true,false,NULL,true"},
		{"s LIKE 'A%'", "boolean:true,false,NULL,false"},
		{"substring(s, 2)", "string:b,,NULL,2"},
		{"year(DATE '2024-02-29')", "int:2024,2024,2024,2024"},
	})
	checkErrors(t, rec, []evalCase{
		{"a + 1", "[ARITHMETIC_OVERFLOW] int overflow in + (add) at in.csv:2"},
		{"a div (a - a)", "[DIVIDE_BY_ZERO]"},
		{"cast(s as int)", "[CAST_INVALID_INPUT] the value 'Ab' of type string cannot be cast to int at in.csv:1"},
		{"a +", "expected an expression, found end of expression\n  a +\n     ^"},
		{"b + 1", "unknown column `b` (have `a`, `s`)"},
		{"lowr(s)", "unknown function lowr (did you mean `lower`?)"},
		{"a AND s", "AND needs a boolean, but column a (int)"},
	})
}

// evalCase is an expression and its expected result: "type:v1,v2,…" or an error substring.
type evalCase struct{ src, want string }

// checkValues evaluates each case over rec and compares the printed result.
func checkValues(t *testing.T, rec arrow.RecordBatch, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		got, err := evalStrings(t, tc.src, rec)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %s, want %s", tc.src, got, tc.want)
		}
	}
}

// checkErrors evaluates each case over rec and expects an error containing want.
func checkErrors(t *testing.T, rec arrow.RecordBatch, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := evalStrings(t, tc.src, rec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}
