package expr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func structBatch(t *testing.T) arrow.RecordBatch {
	t.Helper()
	vt := arrow.StructOf(arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{{Name: "key", Type: arrow.BinaryTypes.String}, {Name: "value", Type: vt, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"k1", "k2", "k3"}, nil)
	sb := b.Field(1).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int64Builder).Append(10)
	sb.FieldBuilder(1).(*array.StringBuilder).Append("ann")
	sb.AppendNull() // a null struct (the builder appends nulls to its fields)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int64Builder).Append(30)
	sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
	b.Field(2).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	return b.NewRecordBatch()
}

func TestSelectList(t *testing.T) {
	rec := structBatch(t)
	defer rec.Release()
	for _, tc := range []struct{ src, names, first string }{
		{"*", "key,value,n", ""},
		{"* EXCEPT (value)", "key,n", ""},
		{"value.*", "amount,name", "amount=10,NULL,30"},
		{"key AS k, value.amount * 2 AS twice, `n` + 1", "k,twice,`n` + 1", "k=k1,k2,k3"},
		{"value.amount", "amount", "amount=10,NULL,30"},
	} {
		p, err := CompileSelect(tc.src, rec.Schema(), Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		var names []string
		for _, f := range p.Schema().Fields() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, ","); got != tc.names {
			t.Errorf("%s: columns %s, want %s", tc.src, got, tc.names)
		}
		out, err := p.Eval(context.Background(), rec, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if tc.first != "" {
			ty, _ := FromArrow(out.Column(0).DataType())
			var vals []string
			for i := 0; i < int(out.NumRows()); i++ {
				vals = append(vals, formatValue(ty, out.Column(0), i))
			}
			if got := out.ColumnName(0) + "=" + strings.Join(vals, ","); got != tc.first {
				t.Errorf("%s: first column %s, want %s", tc.src, got, tc.first)
			}
		}
		out.Release()
	}
	for _, tc := range []struct{ src, want string }{
		{"key, key", "two output columns are named `key`"},
		{"value.amont", "struct `value` has no field `amont` (did you mean `amount`?)"},
		{"key.*", "key.* needs a struct"},
		{"* EXCEPT (nope)", "unknown column `nope`"},
		{"lower(n, key)", "lower takes 1 argument(s), but got 2"},
		{"key +", "expected an expression"},
	} {
		_, err := CompileSelect(tc.src, rec.Schema(), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestPrecedenceAndErrors(t *testing.T) {
	rec := smokeBatch(t)
	defer rec.Release()
	checkValues(t, rec, []evalCase{
		{"1 + 2 * 3", "int:7,7,7,7"},
		{"(a > 1) < TRUE", "boolean:true,false,NULL,false"},
		{"-2 * 3 + 10 % 4", "int:-4,-4,-4,-4"},
		{"NOT 1 = 2 AND 2 > 1 OR FALSE", "boolean:true,true,true,true"},
		{"1 < 2 = TRUE", "boolean:true,true,true,true"},
		{"a BETWEEN 1 AND 5 AND TRUE", "boolean:true,false,NULL,true"},
		{"7 div 2 + 1", "bigint:4,4,4,4"},
		{"'a' || 'b' || 1", "string:ab1,ab1,ab1,ab1"},
		{"CAST('  12 ' AS INT) + 1", "int:13,13,13,13"},
		{"TRY_CAST(s AS INT)", "int:NULL,NULL,NULL,12"},
		{"NULL <=> a", "boolean:false,false,true,false"},
		{"CASE a WHEN 1 THEN 'x' END", "string:x,NULL,NULL,NULL"},
		{"2147483648", "bigint:2147483648,2147483648,2147483648,2147483648"},
		{"-2147483648", "int:-2147483648,-2147483648,-2147483648,-2147483648"},
		{"1.50 * 2", "decimal(5,2):3.00,3.00,3.00,3.00"},
		{"TIMESTAMP '2024-01-01 10:00:00' + INTERVAL '90' MINUTE", "timestamp:2024-01-01 11:30:00,2024-01-01 11:30:00,2024-01-01 11:30:00,2024-01-01 11:30:00"},
		{"s LIKE '1!%' ESCAPE '!'", "boolean:false,false,NULL,false"},
		{"a = 1 OR 1 / (a - 1) > 0", "boolean:true,true,NULL,true"},
	})
	checkErrors(t, rec, []evalCase{
		{"a +* 2", "syntax error at position 4: expected an expression, found '*'\n  a +* 2\n     ^"},
		{"a IN (1, 2", "expected ',', found end of expression"},
		{"CAST(a AS blob)", "expected a type name"},
		{"a NOT 1", "expected IN, BETWEEN, LIKE or RLIKE after NOT"},
		{"'abc", "expected a closing '"},
		{"CASE WHEN a THEN 1 END", "WHEN needs a boolean, but column a (int)"},
		{"s - DATE '2024-01-01'", "- (subtract) needs numbers, but an argument of type date"},
		{"year(a)", "year: argument 1 must be a date or timestamp, but column a (int)"},
		{"a / (a - a)", "[DIVIDE_BY_ZERO] division by zero in / (divide) at in.csv:1"},
		{"CAST(2147483647L + a AS INT)", "[CAST_OVERFLOW] the value 2147483648 of type bigint cannot be cast to int at in.csv:1"},
		{"CAST('2024-13-01' AS DATE)", "[CAST_INVALID_INPUT]"},
	})
}

// A struct that is null where its field holds a value: the field reads as NULL there.
func TestStructParentNulls(t *testing.T) {
	amt := array.NewInt64Builder(memory.DefaultAllocator)
	amt.AppendValues([]int64{1, 2, 3}, nil)
	amounts := amt.NewArray()
	defer amounts.Release()
	valid := memory.NewBufferBytes([]byte{0b101})
	st, err := array.NewStructArrayWithNulls([]arrow.Array{amounts}, []string{"amount"}, valid, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "value", Type: st.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{st}, 3)
	defer rec.Release()
	got, err := evalStrings(t, "value.amount + 0L", rec)
	if err != nil {
		t.Fatal(err)
	}
	if got != "bigint:1,NULL,3" {
		t.Errorf("value.amount = %s, want bigint:1,NULL,3", got)
	}
}

// A year-month interval leaves select as Arrow's month_interval, and a month_interval column
// is read back as an interval month, so a second stage computes on the first one's output.
func TestSelectMonthInterval(t *testing.T) {
	rec := structBatch(t)
	defer rec.Release()
	p, err := CompileSelect("INTERVAL '1-2' YEAR TO MONTH AS m", rec.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Schema().Field(0).Type; !arrow.TypeEqual(got, arrow.FixedWidthTypes.MonthInterval) {
		t.Fatalf("output type %s, want month_interval", got)
	}
	out, err := p.Eval(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := out.Column(0).(*array.MonthInterval).Value(0); got != 14 {
		t.Fatalf("months %d, want 14", got)
	}
	q, err := CompileSelect("m + INTERVAL 1 MONTH AS m2, CAST(m AS STRING) AS s, DATE '2024-01-31' + m AS d", out.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := q.Eval(context.Background(), out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out2.Release()
	var got []string
	for c := 0; c < 3; c++ {
		ty, _ := FromArrow(out2.Column(c).DataType())
		got = append(got, formatValue(ty, out2.Column(c), 0))
	}
	if s := strings.Join(got, " | "); s != "INTERVAL '15' MONTH | INTERVAL '14' MONTH | 2025-03-31" {
		t.Fatalf("got %s", s)
	}
}

// round and bround with a scale far past any value's digits give the value (or 0) at once,
// where raising 10 to the scale hung and filled memory.
func TestRoundExtremeScale(t *testing.T) {
	rec := structBatch(t)
	defer rec.Release()
	for src, want := range map[string]string{
		"round(1.5D, 2147483647)":            "1.5",
		"round(15, -2147483648)":             "0",
		"bround(123.456BD, -2147483648)":     "0",
		"round(123.456BD, 2147483647)":       "123.456",
		"round(-1.5e300D, -2147483647)":      "0.0",
		"bround(2.5D, 0) + round(1.0D, 400)": "3.0",
	} {
		p, err := CompileSelect(src+" AS v", rec.Schema(), Options{})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		done := make(chan string, 1)
		go func() {
			out, err := p.Eval(context.Background(), rec, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			defer out.Release()
			ty, _ := FromArrow(out.Column(0).DataType())
			done <- formatValue(ty, out.Column(0), 0)
		}()
		select {
		case got := <-done:
			if got != want {
				t.Errorf("%s = %s, want %s", src, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not finish in 10 s", src)
		}
	}
}
