package expr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The differential test of arrays, structs, maps and the JSON functions: a table of nested
// columns with NULLs at every level, empty values and malformed JSON, and expressions over it
// compared with DuckDB (where DuckDB agrees with Spark) or pyspark (doc.go lists where not).

// canonNested prints a nested value as testdata/difftest.py does: [a,b], {field,…}, {k:v,…}.
func canonNested(t Type, a arrow.Array, i int) string {
	if nullAt(a, i) {
		return "NULL"
	}
	var b strings.Builder
	switch t.Kind {
	case KArray:
		offs, vals := listParts(a)
		b.WriteByte('[')
		for j := offs[i]; j < offs[i+1]; j++ {
			if j > offs[i] {
				b.WriteByte(',')
			}
			b.WriteString(canonLeaf(t.Elem(), vals, int(j)))
		}
		b.WriteByte(']')
	case KStruct:
		st := a.(*array.Struct)
		b.WriteByte('{')
		for k, f := range t.Fields() {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(canonLeaf(f.Type, st.Field(k), i))
		}
		b.WriteByte('}')
	case KMap: // entries sorted, as the reference prints them
		offs, keys, vals := mapParts(a)
		var es []string
		for j := offs[i]; j < offs[i+1]; j++ {
			es = append(es, canonLeaf(t.Key(), keys, int(j))+":"+canonLeaf(t.Elem(), vals, int(j)))
		}
		sort.Strings(es)
		b.WriteString("{" + strings.Join(es, ",") + "}")
	}
	return b.String()
}

// canonLeaf is canon with doubles printed as Python's repr does (inside a nested value the
// text is compared, not the number).
func canonLeaf(t Type, a arrow.Array, i int) string {
	if nullAt(a, i) {
		return "NULL"
	}
	if t.Kind != KDouble {
		return canon(t, a, i)
	}
	f := f64s(a)[i]
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return canon(t, a, i)
	}
	if af := math.Abs(f); af != 0 && (af < 1e-4 || af >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		if m, e, ok := strings.Cut(s, "e"); ok && len(e) == 2 { // Python: 1e-05, Go: 1e-05 already
			s = m + "e" + e
		}
		return "f:" + s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return "f:" + s
}

// nestedTable has one row per case of interest; NULL is nil.
func nestedTable(t *testing.T) arrow.RecordBatch {
	t.Helper()
	ints := func(vs ...any) []any { return vs }
	type row struct {
		i   any
		s   any
		arr any // []any of int32 / nil
		sa  any // []any of string / nil
		st  any // [2]any{a int32|nil, b string|nil} / nil
		mp  any // [][2]any / nil
		js  any
		ll  any // []any of int64
	}
	rows := []row{
		{int32(0), "a,b,,c", ints(int32(1), int32(2), int32(3)), ints("a", "b"), [2]any{int32(1), "x"}, [][2]any{{"a", int32(1)}, {"b", int32(2)}}, `{"a":1,"b":"x","c":[1,2],"d":{"e":1.5}}`, ints(int64(1), int64(2))},
		{int32(1), "", ints(), ints(), [2]any{nil, "y"}, [][2]any{}, `{"a":"bad","b":"y"}`, ints()},
		{nil, nil, nil, nil, nil, nil, nil, nil},
		{int32(2), ",x,", ints(nil), ints("x", nil), [2]any{int32(3), nil}, [][2]any{{"k", nil}}, `{bad`, ints(nil)},
		{int32(-1), "abc", ints(int32(5), nil, int32(7)), ints(""), [2]any{int32(-4), "z,w"}, [][2]any{{"a", int32(10)}}, ``, ints(int64(1) << 40)},
		{int32(5), "a1b22c3", ints(int32(2147483647)), ints("a", "a"), [2]any{int32(7), "a"}, [][2]any{{"x", int32(-1)}, {"a", nil}}, `[1,2]`, ints(int64(-3), nil, int64(5))},
		{int32(3), "a.b.c", ints(int32(-1), int32(0)), ints("b", "a"), nil, nil, `null`, ints(int64(0))},
		{int32(1), "x,y", ints(int32(2), int32(2)), ints("a", "b"), [2]any{int32(1), "x"}, [][2]any{{"b", int32(2)}, {"a", int32(1)}}, `{"a":1} junk`, ints(int64(7), int64(8), int64(9))},
		{int32(0), "  ", ints(int32(1), int32(2)), ints("a", "b", "c"), [2]any{int32(1), "y"}, [][2]any{{"a", int32(1)}}, `{"c":[1,"x"],"d":{"e":"NaN"}}`, ints(int64(1))},
		{int32(2), "1,2,3", ints(int32(3), int32(2), int32(1)), nil, [2]any{nil, nil}, [][2]any{{"b", int32(5)}}, `{"a":2147483648,"b":{"x":[1,{"y":2}]}}`, nil},
		{int32(4), "a,b", ints(int32(1), int32(2), int32(3), int32(4), int32(5)), ints("q"), [2]any{int32(2), "b"}, [][2]any{{"c", int32(3)}, {"d", int32(4)}, {"a", int32(0)}}, `{"a":1,"a":2,"b":"\u00e9\n"}`, ints(int64(2))},
		{int32(-3), ",", ints(int32(0)), ints(), [2]any{int32(0), ""}, [][2]any{}, `  {"a" : 3 , "c" : [] }`, ints()},
		{int32(1), "a,", ints(int32(1), nil), ints("a", "b"), [2]any{int32(1), "x"}, [][2]any{{"a", nil}}, `{"c":[3,4,5],"d":{"e":-2}}`, ints(int64(1), int64(2))},
		{int32(0), "no sep", ints(int32(9), int32(8)), ints("z"), [2]any{int32(9), "9"}, [][2]any{{"z", int32(26)}}, `{"d":{"e":1e10,"f":true},"b":null}`, ints(int64(4))},
		{int32(7), "a,b,c,d", ints(int32(4)), ints("d", "c"), [2]any{int32(4), "d"}, [][2]any{{"a", int32(4)}}, `{"c":[{"x":1},{"x":2}],"a":-7}`, ints(int64(-1))},
		{int32(-2), "x", ints(int32(6), int32(6), int32(6)), ints("e"), [2]any{int32(6), "e"}, nil, `{"b":"x\"y","c":null}`, nil},
	}
	st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "rid", Type: arrow.PrimitiveTypes.Int32},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "sa", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "st", Type: st, Nullable: true},
		{Name: "mp", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "js", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ll", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	appendAny := func(fb array.Builder, v any) {
		switch v := v.(type) {
		case nil:
			fb.AppendNull()
		case int32:
			fb.(*array.Int32Builder).Append(v)
		case int64:
			fb.(*array.Int64Builder).Append(v)
		case string:
			fb.(*array.StringBuilder).Append(v)
		default:
			panic(fmt.Sprintf("%T", v))
		}
	}
	for k, r := range rows {
		b.Field(0).(*array.Int32Builder).Append(int32(k))
		appendAny(b.Field(1), r.i)
		appendAny(b.Field(2), r.s)
		for _, c := range []struct {
			col int
			v   any
		}{{3, r.arr}, {4, r.sa}, {8, r.ll}} {
			if c.v == nil {
				b.Field(c.col).AppendNull()
				continue
			}
			var vb array.Builder
			switch lb := b.Field(c.col).(type) {
			case *array.ListBuilder:
				lb.Append(true)
				vb = lb.ValueBuilder()
			case *array.LargeListBuilder:
				lb.Append(true)
				vb = lb.ValueBuilder()
			}
			for _, e := range c.v.([]any) {
				appendAny(vb, e)
			}
		}
		sb := b.Field(5).(*array.StructBuilder)
		if r.st == nil {
			sb.AppendNull()
		} else {
			sb.Append(true)
			appendAny(sb.FieldBuilder(0), r.st.([2]any)[0])
			appendAny(sb.FieldBuilder(1), r.st.([2]any)[1])
		}
		mb := b.Field(6).(*array.MapBuilder)
		if r.mp == nil {
			mb.AppendNull()
		} else {
			mb.Append(true)
			for _, kv := range r.mp.([][2]any) {
				appendAny(mb.KeyBuilder(), kv[0])
				appendAny(mb.ItemBuilder(), kv[1])
			}
		}
		appendAny(b.Field(7), r.js)
	}
	return b.NewRecordBatch()
}

// nestedCases lists the expressions: Spark text, and the DuckDB translation when DuckDB
// agrees with Spark on them ("" takes pyspark as the reference).
func nestedExprs() []gexpr {
	var out []gexpr
	add := func(sp, dk string) { out = append(out, gexpr{sp: sp, dk: dk, spark: dk == ""}) }
	// columns as they are, and their parts
	for _, c := range []string{"arr", "sa", "st", "mp", "ll"} {
		add(c, c)
		add("("+c+" IS NULL)", "("+c+" IS NULL)")
	}
	add("st.a", "st.a")
	add("st.b", "st.b")
	add("(st.a + i)", "(st.a + i)")
	add("coalesce(st.b, s)", "coalesce(st.b, s)")
	// sizes
	add("size(arr)", "CAST(len(arr) AS INTEGER)")
	add("size(sa)", "CAST(len(sa) AS INTEGER)")
	add("size(ll)", "CAST(len(ll) AS INTEGER)")
	add("size(mp)", "CAST(cardinality(mp) AS INTEGER)")
	add("cardinality(arr)", "CAST(len(arr) AS INTEGER)")
	add("size(split(s, ','))", "")
	// subscripts: 0-based, ANSI errors out of range; CASE evaluates them only where taken
	for _, k := range []int{0, 1, 2} {
		add(fmt.Sprintf("CASE WHEN size(arr) > %d THEN arr[%d] END", k, k), fmt.Sprintf("CASE WHEN len(arr) > %d THEN arr[%d] END", k, k+1))
		add(fmt.Sprintf("CASE WHEN size(sa) > %d THEN sa[%d] END", k, k), fmt.Sprintf("CASE WHEN len(sa) > %d THEN sa[%d] END", k, k+1))
	}
	add("CASE WHEN i >= 0 AND i < size(arr) THEN arr[i] ELSE -100 END", "CASE WHEN i >= 0 AND i < len(arr) THEN arr[i + 1] ELSE -100 END")
	add("CASE WHEN size(ll) > 0 THEN ll[0] END", "CASE WHEN len(ll) > 0 THEN ll[1] END")
	add("array(10, 20, 30)[CASE WHEN i BETWEEN 0 AND 2 THEN i ELSE 0 END]", "")
	add("mp['a']", "mp['a']")
	add("mp['b']", "mp['b']")
	add("mp['zz']", "mp['zz']")
	add("mp[st.b]", "")
	add("map('x', i, 'y', 2)['x']", "MAP {'x': i, 'y': 2}['x']")
	// element_at and try_element_at: 1-based, negative from the end
	for _, k := range []int{1, -1, 2, -2} {
		add(fmt.Sprintf("try_element_at(arr, %d)", k), "")
		add(fmt.Sprintf("CASE WHEN size(arr) >= %d THEN element_at(arr, %d) END", max(k, -k), k), fmt.Sprintf("CASE WHEN len(arr) >= %d THEN arr[%d] END", max(k, -k), k))
	}
	add("try_element_at(arr, CASE WHEN i = 0 THEN 1 ELSE i END)", "")
	add("try_element_at(sa, 2)", "")
	add("element_at(mp, 'a')", "")
	add("element_at(mp, s)", "")
	add("try_element_at(mp, 'b')", "")
	// constructors
	add("array(i, st.a, 3)", "[i, st.a, 3]")
	add("array(s, st.b)", "[s, st.b]")
	add("array()", "")
	add("array(i, CAST(NULL AS INT))", "[i, NULL]")
	add("array(arr, array(0))", "[arr, [0]]")
	add("array(i, 2L)", "[CAST(i AS BIGINT), CAST(2 AS BIGINT)]")
	add("named_struct('x', i, 'y', s)", "struct_pack(x := i, y := s)")
	add("named_struct('x', arr, 'y', named_struct('z', st.b))", "struct_pack(x := arr, y := struct_pack(z := st.b))")
	add("named_struct('x', i, 'y', s).y", "s")
	add("struct(i, s)", "struct_pack(i := i, s := s)")
	add("struct(i, s).i", "i")
	add("struct(st.a, 1).col2", "1")
	add("map('k', i)", "MAP {'k': i}")
	add("map(coalesce(s, 'null'), i)", "")
	add("map('a', 1, 'b', i)", "MAP {'a': 1, 'b': i}")
	add("map_keys(mp)", "map_keys(mp)")
	add("map_values(mp)", "map_values(mp)")
	add("size(map_keys(mp))", "CAST(len(map_keys(mp)) AS INTEGER)")
	// comparisons: = agrees with DuckDB (NULL elements equal); ordering puts NULL elements
	// first in Spark, last in DuckDB
	add("(arr = array(1, 2, 3))", "(arr = [1, 2, 3])")
	add("(arr <> array(2, 2))", "(arr <> [2, 2])")
	add("(arr = arr)", "(arr = arr)")
	add("(arr <=> array(1, 2))", "(arr IS NOT DISTINCT FROM [1, 2])")
	add("(st = named_struct('a', 1, 'b', 'x'))", "(st = struct_pack(a := 1, b := 'x'))")
	add("(st <=> named_struct('a', 1, 'b', 'x'))", "(st IS NOT DISTINCT FROM struct_pack(a := 1, b := 'x'))")
	add("(arr < array(2))", "")
	add("(arr >= array(1, 2))", "")
	add("(st > named_struct('a', 1, 'b', 'x'))", "")
	add("(sa = array('a', 'b'))", "(sa = ['a', 'b'])")
	// nested types widen to a common type
	add("(arr = array(1L, 2L, 3L))", "(arr = [CAST(1 AS BIGINT), 2, 3])")
	add("coalesce(arr, array(1.5))", "")
	add("array(arr, array(2.5D))", "")
	add("if(i = 0, mp, map('z', 1L))", "")
	// CASE, IF and COALESCE over nested values
	add("coalesce(arr, array(0))", "coalesce(arr, [0])")
	add("coalesce(NULL, arr)", "coalesce(NULL, arr)")
	add("coalesce(NULL, i)", "coalesce(NULL, i)")
	add("(NULL IS NOT NULL)", "(NULL IS NOT NULL)")
	add("array(NULL)", "[NULL]")
	add("named_struct('a', NULL, 'b', i)", "struct_pack(a := NULL, b := i)")
	add("if(i > 0, arr, array(-1))", "if(i > 0, arr, [-1])")
	add("CASE WHEN i = 0 THEN st WHEN i = 1 THEN named_struct('a', 9, 'b', 'n') END", "CASE WHEN i = 0 THEN st WHEN i = 1 THEN struct_pack(a := 9, b := 'n') END")
	add("coalesce(mp, map('none', 0))", "coalesce(mp, MAP {'none': 0})")
	// array_contains: NULL when absent but a NULL element is present
	add("array_contains(arr, 2)", "")
	add("array_contains(arr, i)", "")
	add("array_contains(sa, 'a')", "")
	add("array_contains(sa, s)", "")
	// CAST AS STRING prints as Spark does
	for _, c := range []string{"arr", "sa", "st", "mp", "ll", "array(arr, NULL)", "named_struct('a', arr, 'b', mp)", "array(1.5D, 1e10, -0.0D)", "array(DATE '2024-02-29', NULL)", "array(TIMESTAMP '2024-01-01 10:00:00.5')", "array(1.50, NULL)", "array(true, NULL)"} {
		add("CAST("+c+" AS STRING)", "")
	}
	// split: Java regular expressions (the RE2 subset), limit
	for _, c := range []string{"split(s, ',')", "split(s, ',', 2)", "split(s, ',', 1)", "split(s, ',', -1)", "split(s, '[0-9]+')", "split(s, '')", "split(s, '\\\\.')", "split(s, ',')[0]", "split('a,b', s)"} {
		add(c, "")
	}
	// from_json: PERMISSIVE partial results, malformed records, duplicate keys, trailing text
	for _, c := range []string{
		"from_json(js, 'a INT, b STRING')",
		"from_json(js, 'a INT, b STRING').a",
		"from_json(js, 'a BIGINT, c ARRAY<INT>')",
		"from_json(js, 'c ARRAY<INT>').c[0]",
		"from_json(js, 'd STRUCT<e: DOUBLE, f: BOOLEAN>')",
		"from_json(js, 'd STRUCT<e: DOUBLE, f: BOOLEAN>').d.e",
		"from_json(js, 'b STRING, d STRING')",
		"from_json(js, 'a DECIMAL(5,1), d MAP<STRING, DOUBLE>')",
		"from_json(js, 'c ARRAY<STRUCT<x: INT>>')",
		"from_json(js, 'c ARRAY<STRUCT<x: INT>>').c.x",
		"try_element_at(from_json(js, 'c ARRAY<STRUCT<x: INT>>').c.x, 2)",
		"from_json(js, 'b STRUCT<x: ARRAY<STRING>>')",
		"from_json(js, 'STRUCT<a: INT>')",
		"from_json(js, 'MAP<STRING, STRING>')",
		"from_json(js, 'ARRAY<INT>')",
		"size(from_json(js, 'c ARRAY<INT>').c)",
		"from_json(CASE WHEN rid = 0 THEN js END, 'a INT', map('mode', 'FAILFAST'))",
	} {
		add(c, "")
	}
	// get_json_object: Spark's JSONPath subset
	for _, p := range []string{"$", "$.a", "$.b", "$.c", "$.c[0]", "$.c[*]", "$.c[*].x", "$.d", "$.d.e", "$['d']['e']", "$.b.x[1].y", "$.b.x[*]", "$.c[5]", "$[0]", "$[*]", "$.", "$..a", "$.d.*", "a"} {
		add(fmt.Sprintf("get_json_object(js, '%s')", p), "")
	}
	add("get_json_object(js, s)", "")
	for _, c := range []string{"st", "arr", "mp", "sa", "named_struct('x', sa, 'm', mp, 'n', CAST(NULL AS INT))", "from_json(js, 'a INT, c ARRAY<INT>, d STRUCT<e: DOUBLE>')", "array(named_struct('t', TIMESTAMP '2024-01-01 10:00:00.123456', 'd', DATE '2024-02-29'))"} {
		add("to_json("+c+")", "")
	}
	// hash and xxhash64 over arrays and structs: elements and fields chained in order, NULLs
	// skipped (Spark's HashExpression)
	for _, f := range []string{"hash", "xxhash64"} {
		for _, x := range []string{"arr", "sa", "st", "ll", "arr, st, i", "array(st)", "named_struct('x', arr, 'y', sa)", "array(arr, arr)", "split(s, ',')", "array(1.5D, -0.0D, CAST('NaN' AS DOUBLE))", "array(CAST(i AS DECIMAL(20,2)), CAST(i AS DECIMAL(5,1)))", "struct(st, arr)"} {
			add(f+"("+x+")", "")
		}
	}
	// errors: DuckDB raises them through error() where Spark does; the two only Spark can
	// check come last (a failing Spark query is rerun in halves to find its expression)
	add("arr[0]", "CASE WHEN arr IS NOT NULL AND len(arr) < 1 THEN error('INVALID_ARRAY_INDEX') ELSE arr[1] END")
	add("element_at(arr, 1)", "CASE WHEN arr IS NOT NULL AND len(arr) < 1 THEN error('INVALID_ARRAY_INDEX_IN_ELEMENT_AT') ELSE arr[1] END")
	add("element_at(arr, 0)", "CASE WHEN arr IS NOT NULL THEN error('INVALID_INDEX_OF_ZERO') END")
	add("try_element_at(arr, i)", "CASE WHEN arr IS NOT NULL AND i = 0 THEN error('INVALID_INDEX_OF_ZERO') WHEN abs(i) > len(arr) THEN NULL ELSE arr[i] END")
	add("map(s, i)", "")
	add("from_json(js, 'a INT', map('mode', 'FAILFAST'))", "")
	return out
}

// nestedCases are the expressions of nestedExprs as the differential test's cases (at least
// 80, or the test fails).
func nestedCases(t *testing.T) []diffCase {
	var cases []diffCase
	for k, e := range nestedExprs() {
		engine := "duckdb"
		if e.spark {
			engine = "spark"
		}
		cases = append(cases, diffCase{ID: strconv.Itoa(k), Spark: e.sp, Duck: e.dk, Engine: engine})
	}
	if len(cases) < 80 {
		t.Fatalf("only %d nested cases", len(cases))
	}
	return cases
}
