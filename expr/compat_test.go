package expr

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// canonCase is one expression over a one-row, column-less batch and its canonical value
// (canon's form: s:text, f:double, n:number, null), as pyspark 4 (ANSI) gives it.
type canonCase struct{ src, want string }

func checkCanon(t *testing.T, cases []canonCase) {
	t.Helper()
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer rec.Release()
	for _, c := range cases {
		got, err := evalCanon(c.src, rec)
		if err != nil || got[0] != c.want {
			t.Errorf("%s: got %v %v, want %s", c.src, got, err, c.want)
		}
	}
}

// concat_ws joins an array argument's non-NULL elements, not the array's text.
func TestConcatWSArrays(t *testing.T) {
	checkCanon(t, []canonCase{
		{"concat_ws('-', split('a,b', ','))", "s:a-b"},
		{"concat_ws('-', 'x', array('y', 'z'), NULL, 'w')", "s:x-y-z-w"},
		{"concat_ws(',', array('a', NULL, 'b'))", "s:a,b"},
		{"concat_ws(',', if(false, array('q'), NULL), 'a', array())", "s:a"},
		{"concat_ws('-', array(1, 2), 3)", "s:1-2-3"},
		{"concat_ws(NULL, array('a'))", "NULL"},
	})
}

// String literals unescape as Spark 4's unescapeSQLString does.
func TestStringLiteralEscapes(t *testing.T) {
	checkCanon(t, []canonCase{
		{`'\u0041'`, "s:A"},
		{`'\u0041\u0042'`, "s:AB"},
		{`'\u00'`, "s:u00"},
		{`'\u00zz'`, "s:u00zz"},
		{`'\uD83D\uDE00'`, "s:😀"},
		{`'\U0001F600x'`, "s:😀x"},
		{`'\U0001F6'`, "s:U0001F6"},
		{`'\101\060'`, "s:A0"},
		{`'\012'`, "s:\n"},
		{`'\241'`, "s:241"},
		{`'\18'`, "s:18"},
		{`'\0'`, "s:\x00"},
		{`'\b\Z'`, "s:\b\x1a"},
		{`'a\%b\_c'`, `s:a\%b\_c`},
		{`'\q\\'`, `s:q\`},
		{`'it''s'`, "s:it's"},
		{`get_json_object('{"a":"\u00e9"}', '$.a')`, "s:é"},
	})
}

// abs of a double is Java's Math.abs: abs(-0.0) is 0.0.
func TestAbsNegativeZero(t *testing.T) {
	checkCanon(t, []canonCase{
		{"CAST(abs(-0.0D) AS STRING)", "s:0.0"},
		{"CAST(abs(CAST('-0' AS DOUBLE)) AS STRING)", "s:0.0"},
		{"abs(-1.5D)", "f:1.5"},
		{"CAST(abs(CAST('NaN' AS DOUBLE)) AS STRING)", "s:NaN"},
	})
}

// CAST(str AS DOUBLE) reads NaN and the infinities as Spark 4 does (pyspark 4, ANSI).
func TestCastSpecialDoubles(t *testing.T) {
	var cases []canonCase
	for _, c := range []struct{ in, want string }{
		{"inf", "Infinity"}, {"Inf", "Infinity"}, {"INF", "Infinity"}, {"iNf", "Infinity"},
		{"infinity", "Infinity"}, {"INFINITY", "Infinity"}, {"+inf", "Infinity"}, {"+Infinity", "Infinity"},
		{"-inf", "-Infinity"}, {"-INF", "-Infinity"}, {"-infinity", "-Infinity"}, {"  -Infinity  ", "-Infinity"},
		{" inf ", "Infinity"}, {"\tinf\n", "Infinity"},
		{"nan", "NaN"}, {"NAN", "NaN"}, {"nAn", "NaN"}, {" nan ", "NaN"}, {"-NaN", "NaN"}, {"+NaN", "NaN"},
		{"1e400", "Infinity"}, {"1.5d", "1.5"}, {"1.5F", "1.5"},
		{"-nan", "NULL"}, {"+nan", "NULL"}, {"infinit", "NULL"}, {"Infinityx", "NULL"}, {"infd", "NULL"},
		{"Infinityd", "NULL"}, {"NaNd", "NULL"}, {"nanf", "NULL"}, {"- inf", "NULL"}, {"infinityf", "NULL"},
	} {
		want := "s:" + c.want
		if c.want == "NULL" {
			want = "NULL"
		}
		cases = append(cases, canonCase{"CAST(try_cast('" + c.in + "' AS DOUBLE) AS STRING)", want})
	}
	checkCanon(t, cases)
}

// hash and xxhash64 of a float (float32) column hash a float as Spark does; the values are
// pyspark 4's for hash(CAST(x AS FLOAT)) and xxhash64(CAST(x AS FLOAT)).
func TestHashFloat32Column(t *testing.T) {
	fb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer fb.Release()
	fb.AppendValues([]float32{1.5, float32(math.NaN()), float32(math.Copysign(0, -1)), 0}, nil)
	fb.AppendNull()
	fa := fb.NewArray()
	defer fa.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{fa}, 5)
	defer rec.Release()
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"hash(f)", []string{"n:-221251528", "n:-349261430", "n:933211791", "n:933211791", "n:42"}},
		{"xxhash64(f)", []string{"n:6163473420726370430", "n:2692338816207849720", "n:3614696996920510707", "n:3614696996920510707", "n:42"}},
		{"hash(CAST(f AS DOUBLE)) = hash(CAST(1.5 AS DOUBLE))", []string{"true", "false", "false", "false", "false"}},
	} {
		got, err := evalCanon(c.src, rec)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s row %d: got %s, want %s", c.src, i, got[i], c.want[i])
			}
		}
	}
}

// CAST of NaN or an infinity to DECIMAL is NULL in Spark 4, ANSI included (pyspark 4).
func TestCastNaNToDecimal(t *testing.T) {
	checkCanon(t, []canonCase{
		{"CAST(CAST('NaN' AS DOUBLE) AS DECIMAL(10,2))", "NULL"},
		{"CAST(CAST('Infinity' AS DOUBLE) AS DECIMAL(10,2))", "NULL"},
		{"CAST(CAST('-Infinity' AS DOUBLE) AS DECIMAL(10,2))", "NULL"},
		{"CAST(1.5D AS DECIMAL(10,2))", "n:1.5"},
	})
}
