package expr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestNestedTypeErrors(t *testing.T) {
	rec := nestedTable(t)
	defer rec.Release()
	for _, c := range []struct{ src, want string }{
		{"st.zz", "struct `st` has no field `zz`"},
		{"array(1).a", "field access .a needs a struct, but the value is array<int>"},
		{"named_struct('a', 1).b", "struct<a:int> has no field `b`"},
		{"i[0]", "[] needs an array or a map, but column i (int)"},
		{"arr['x']", "[]: the index must be an int, but an argument of type string"},
		{"mp[1]", "[]: the key must be string, but an argument of type int"},
		{"mp = mp", "=: cannot compare column mp (map<string,int>) with column mp (map<string,int>)"},
		{"arr = sa", "=: cannot compare column arr (array<int>) with column sa (array<string>)"},
		{"array_contains(arr, NULL)", "array_contains: argument 2 must be a value (not an untyped NULL)"},
		{"array_contains(i, 1)", "array_contains: argument 1 must be an array, but column i (int)"},
		{"size(s)", "size: argument 1 must be an array or a map, but column s (string)"},
		{"from_json(js, s)", "from_json: argument 2 must be a constant DDL schema string, but column s (string)"},
		{"from_json(js, 'a INT,')", "from_json: parse schema ddl"},
		{"from_json(js, 'a INT', map('mode', 'DROPMALFORMED'))", "option mode = DROPMALFORMED is not supported"},
		{"named_struct(s, 1)", "named_struct: argument 1 must be a constant string field name, but column s (string)"},
		{"element_at(s, 1)", "element_at: argument 1 must be an array or a map, but column s (string)"},
		{"map_keys(arr)", "map_keys: argument 1 must be a map, but column arr (array<int>)"},
	} {
		_, err := Compile(c.src, rec.Schema(), Options{})
		var te *TypeError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a TypeError containing %q", c.src, err, c.want)
		}
	}
}

func TestNestedRuntimeErrors(t *testing.T) {
	rec := nestedTable(t)
	defer rec.Release()
	pos := func(i int) string { return "in.json:" + string(rune('0'+i%10)) }
	for _, c := range []struct {
		src, class string
		row        int
	}{
		{"arr[2]", "INVALID_ARRAY_INDEX", 1},
		{"element_at(arr, 3)", "INVALID_ARRAY_INDEX_IN_ELEMENT_AT", 1},
		{"element_at(arr, i)", "INVALID_INDEX_OF_ZERO", 0},
		{"try_element_at(arr, i - i)", "INVALID_INDEX_OF_ZERO", 0},
		{"map(s, 1)", "NULL_MAP_KEY", 2},
		{"map('a,b', 1, coalesce(s, 'n'), 2)", "DUPLICATED_MAP_KEY", 10},
		{"from_json(js, 'a INT', map('mode', 'FAILFAST'))", "MALFORMED_RECORD_IN_PARSING", 1},
	} {
		p, err := Compile(c.src, rec.Schema(), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		_, err = p.Eval(context.Background(), rec, pos)
		var re *RuntimeError
		if !errors.As(err, &re) || re.Class != c.class || re.Row != c.row || re.Pos != pos(c.row) {
			t.Errorf("%s: got %v, want [%s] at row %d", c.src, err, c.class, c.row)
		}
	}
	// only the rows a CASE branch takes count
	p, err := Compile("CASE WHEN size(arr) > 2 THEN arr[2] END", rec.Schema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Eval(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
}

// A select passes nested columns through unchanged and computes nested columns; element
// types narrower than the evaluated ones and non-nullable elements are read as usual.
func TestNestedSelect(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	lt := arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int8, Nullable: false})
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: lt, Nullable: true}, {Name: "js", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	lb := b.Field(0).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int8Builder).AppendValues([]int8{1, 2}, nil)
	lb.AppendNull()
	b.Field(1).(*array.StringBuilder).AppendValues([]string{`{"a":{"b":[7]}}`, `{"a":null}`}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	proj, err := CompileSelect("l, l[1] + 1 AS second, from_json(js, 'a STRUCT<b: ARRAY<INT>>') AS j, from_json(js, 'a STRUCT<b: ARRAY<INT>>').a.b[0] AS b0, CAST(l AS STRING) AS txt", schema, Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	out, err := proj.Eval(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !arrow.TypeEqual(out.Schema().Field(0).Type, lt) || out.Column(0) != rec.Column(0) {
		t.Errorf("l is not passed through: %s", out.Schema().Field(0).Type)
	}
	if got, want := out.Schema().Field(2).Type.String(), "struct<a: struct<b: list<element: int32, nullable> nullable> nullable>"; got != want {
		t.Errorf("j: got %s, want %s", got, want)
	}
	for k, want := range []string{"[[1 2] (null)]", "[3 (null)]", "", "[7 (null)]", `["[1, 2]" (null)]`} {
		if want != "" && out.Column(k).String() != want {
			t.Errorf("column %s: got %s, want %s", out.Schema().Field(k).Name, out.Column(k), want)
		}
	}
}

func TestNestedFunctionsDocumented(t *testing.T) {
	have := map[string]Function{}
	for _, f := range Functions() {
		have[f.Name] = f
	}
	for _, n := range []string{"array", "struct", "named_struct", "map", "element_at", "try_element_at", "size", "cardinality", "array_contains", "map_keys", "map_values", "split", "from_json", "get_json_object"} {
		if f, ok := have[n]; !ok || f.Sig == "" || f.Doc == "" {
			t.Errorf("%s: not registered with a signature and a doc line: %+v", n, f)
		}
	}
}

// list_view columns are read as arrays (their values gathered in row order).
func TestNestedListView(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	lb := array.NewListViewBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.Int64Builder)
	lb.AppendWithSize(true, 2)
	vb.AppendValues([]int64{1, 2}, nil)
	lb.AppendNull()
	lb.AppendWithSize(true, 1)
	vb.Append(3)
	col := lb.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "lv", Type: col.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	p, err := Compile("CAST(lv AS STRING) || ' ' || CAST(size(lv) AS STRING)", schema, Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Eval(context.Background(), rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if got, want := a.String(), `["[1, 2] 2" (null) "[3] 1"]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// to_json, checked against pyspark 4 by hand (the differential test covers column values).
func TestToJSON(t *testing.T) {
	schema := arrow.NewSchema(nil, nil)
	rec := array.NewRecordBatch(schema, nil, 1)
	defer rec.Release()
	for _, c := range []struct{ src, want string }{
		{"to_json(named_struct('a', 1, 'b', 'x', 'c', CAST(NULL AS INT)))", `{"a":1,"b":"x"}`},
		{"to_json(array(1, 2))", `[1,2]`},
		{"to_json(map('a', 1.5D))", `{"a":1.5}`},
		{"to_json(named_struct('d', DATE '2024-01-01', 't', TIMESTAMP '2024-01-01 10:00:00', 'f', 1e10, 'n', CAST('NaN' AS DOUBLE), 'm', 1.50))", `{"d":"2024-01-01","t":"2024-01-01T10:00:00.000Z","f":1.0E10,"n":"NaN","m":1.50}`},
	} {
		got, err := evalCanon(c.src, rec)
		if err != nil || got[0] != "s:"+c.want {
			t.Errorf("%s: got %v %v, want %s", c.src, got, err, c.want)
		}
	}
}

// to_json writes binary as base64 (Jackson's byte[]), as pyspark 4 prints it.
func TestToJSONBinary(t *testing.T) {
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer rec.Release()
	for _, c := range []struct{ src, want string }{
		{"to_json(named_struct('b', X'00FF'))", `{"b":"AP8="}`},
		{"to_json(array(X'', X'414243'))", `["","QUJD"]`},
	} {
		got, err := evalCanon(c.src, rec)
		if err != nil || got[0] != "s:"+c.want {
			t.Errorf("%s: got %v %v, want %s", c.src, got, err, c.want)
		}
	}
}

// A JSON value read into a string field is its compact text, escapes included.
func TestFromJSONStringOfObject(t *testing.T) {
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer rec.Release()
	got, err := evalCanon(`from_json('{"a":{"x":"q\\"r","y":[1.50, "\\u00e9"]}}', 'a STRING').a`, rec)
	if want := `s:{"x":"q\"r","y":[1.5,"é"]}`; err != nil || got[0] != want {
		t.Errorf("got %v %v, want %s", got, err, want)
	}
}

// Arrays, maps and structs widen to a common type as in Spark (array<int> = array<bigint>).
func TestNestedWidening(t *testing.T) {
	rec := nestedTable(t)
	defer rec.Release()
	for _, c := range []struct{ src, typ, row0 string }{
		{"arr = array(1L, 2L, 3L)", "boolean", "true"},
		{"coalesce(arr, array(1.5))", "array<decimal(11,1)>", "[n:1,n:2,n:3]"},
		{"array(arr, array(2.5D))", "array<array<double>>", "[[f:1.0,f:2.0,f:3.0],[f:2.5]]"},
		{"if(i = 0, mp, map('z', 1L))", "map<string,bigint>", "{s:a:n:1,s:b:n:2}"},
		{"named_struct('a', 1L, 'b', 'q') = st", "boolean", "false"},
	} {
		p, err := Compile(c.src, rec.Schema(), Options{})
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := evalCanon(c.src, rec)
		if p.Type().String() != c.typ || err != nil || got[0] != c.row0 {
			t.Errorf("%s: got %s %v %v, want %s %s", c.src, p.Type(), got, err, c.typ, c.row0)
		}
	}
}

// Every nested function releases what it allocates.
func TestNestedNoLeaks(t *testing.T) {
	rec := nestedTable(t)
	defer rec.Release()
	for _, src := range []string{
		"arr[0]", "CASE WHEN size(arr) > 0 THEN arr[0] END", "element_at(mp, 'a')", "try_element_at(arr, -1)",
		"array(i, st.a)", "array()", "struct(i, s)", "named_struct('a', arr).a", "map('k', i)", "map_keys(mp)", "map_values(mp)",
		"array_contains(arr, 1)", "split(s, ',')", "from_json(js, 'a INT, c ARRAY<INT>, d MAP<STRING, DOUBLE>')",
		"get_json_object(js, '$.c[*]')", "to_json(st)", "CAST(mp AS STRING)", "coalesce(arr, array(1L))", "if(i > 0, st, NULL)",
		"arr = array(1, 2, 3)", "ll[0]", "size(ll)",
	} {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		p, err := Compile(src, rec.Schema(), Options{Mem: mem})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		a, err := p.Eval(context.Background(), rec, nil)
		if err == nil {
			a.Release()
		}
		if n := mem.CurrentAlloc(); n != 0 {
			t.Errorf("%s: %d bytes not released", src, n)
		}
	}
}

// BenchmarkNestedJSON measures the JSON functions and split over 64Ki rows of ~90-byte JSON
// records (rows/s per expression).
func BenchmarkNestedJSON(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "js", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	const n = 1 << 16
	for i := 0; i < n; i++ {
		bld.Field(0).(*array.StringBuilder).Append(`{"id":` + string(rune('0'+i%10)) + `,"user":"u` + string(rune('a'+i%26)) + `","tags":["x","y"],"geo":{"lat":1.5,"lon":-2.25}}`)
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	defer rec.Release()
	for _, src := range []string{
		"from_json(js, 'id INT, user STRING, tags ARRAY<STRING>, geo STRUCT<lat: DOUBLE, lon: DOUBLE>')",
		"get_json_object(js, '$.geo.lat')",
		"split(js, ',')",
	} {
		b.Run(src[:strings.IndexByte(src, '(')], func(b *testing.B) {
			p, err := Compile(src, schema, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				a, err := p.Eval(context.Background(), rec, nil)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// arr.field over an array of structs is the array of that field, on columns and values.
func TestArrayOfStructField(t *testing.T) {
	st := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{{Name: "items", Type: arrow.ListOf(st), Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	lb := b.Field(0).(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	lb.Append(true)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(1)
	sb.AppendNull() // appends a NULL to the field too
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
	lb.AppendNull()
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, c := range []struct{ src, want string }{
		{"items.x", "[n:1,NULL,NULL]"},
		{"items.X", "[n:1,NULL,NULL]"},
		{"from_json('{\"c\":[{\"x\":1},{\"x\":2}]}', 'c ARRAY<STRUCT<x: INT>>').c.x", "[n:1,n:2]"},
	} {
		got, err := evalCanon(c.src, rec)
		if err != nil || got[0] != c.want {
			t.Errorf("%s: got %v %v, want %s", c.src, got, err, c.want)
		}
	}
	if _, err := Compile("items.zz", schema, Options{}); err == nil || !strings.Contains(err.Error(), "is list") {
		t.Errorf("items.zz: got %v, want the path's own error", err)
	}
}
