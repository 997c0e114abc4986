package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var (
	tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

func f(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

func nn(name string, t arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: t} }

func TestParseDDL(t *testing.T) {
	tests := []struct {
		ddl  string
		want []arrow.Field
	}{
		{
			ddl: "id long, amount double, ts timestamp, tags array<string>, user struct<id:long,name:string>, m map<string,int>, d decimal(10,2), day date, b binary, flag boolean, n int, s short, t tinyint, ntz timestamp_ntz, f float",
			want: []arrow.Field{
				f("id", arrow.PrimitiveTypes.Int64), f("amount", arrow.PrimitiveTypes.Float64), f("ts", tsUTC),
				f("tags", arrow.ListOf(arrow.BinaryTypes.String)),
				f("user", arrow.StructOf(f("id", arrow.PrimitiveTypes.Int64), f("name", arrow.BinaryTypes.String))),
				f("m", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)),
				f("d", &arrow.Decimal128Type{Precision: 10, Scale: 2}), f("day", arrow.FixedWidthTypes.Date32),
				f("b", arrow.BinaryTypes.Binary), f("flag", arrow.FixedWidthTypes.Boolean), f("n", arrow.PrimitiveTypes.Int32),
				f("s", arrow.PrimitiveTypes.Int16), f("t", arrow.PrimitiveTypes.Int8), f("ntz", tsNTZ), f("f", arrow.PrimitiveTypes.Float32),
			},
		},
		{
			ddl:  "`odd name` STRING NOT NULL, `a``b` BIGINT comment 'the id', x DECIMAL, y varchar(10), z struct<a int not null, b: array<map<string, struct<c:int>>>>",
			want: []arrow.Field{nn("odd name", arrow.BinaryTypes.String), {Name: "a`b", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"the id"})}, f("x", &arrow.Decimal128Type{Precision: 10}), f("y", arrow.BinaryTypes.String), f("z", arrow.StructOf(nn("a", arrow.PrimitiveTypes.Int32), f("b", arrow.ListOf(arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(f("c", arrow.PrimitiveTypes.Int32)))))))},
		},
		{ddl: "  e struct<> ", want: []arrow.Field{f("e", arrow.StructOf())}},
	}
	for _, tt := range tests {
		got, err := ParseDDL(tt.ddl)
		if err != nil {
			t.Fatalf("ParseDDL(%q): %v", tt.ddl, err)
		}
		want := arrow.NewSchema(tt.want, nil)
		if !got.Equal(want) {
			t.Errorf("ParseDDL(%q)\n got %v\nwant %v", tt.ddl, got, want)
		}
		// Round trip through DDL().
		again, err := ParseDDL(DDL(got))
		if err != nil || !again.Equal(got) {
			t.Errorf("round trip %q: %v %v", DDL(got), again, err)
		}
	}
}

func TestParseDDLErrors(t *testing.T) {
	tests := []struct {
		ddl     string
		wantPos int
		wantMsg string
	}{
		{"", 0, "empty schema"},
		{"id long,", 8, "expected a column name"},
		{"id lng", 3, `unknown type "lng"`},
		{"id long amount double", 8, "expected ',' or end of input"},
		{"a array<int", 11, `expected '>'`},
		{"a decimal(40,2)", 2, "precision 40 out of range"},
		{"a int, a long", 0, `duplicate column "a"`},
		{"`unterminated int", 0, "unterminated backquoted name"},
		{"a int not nul", 10, "expected NULL after NOT"},
		{"a map<string>", 12, "expected ','"},
		{"a struct<x:int y:int>", 15, "expected ',' or '>'"},
		{"a", 1, `expected a type for column "a"`},
	}
	for _, tt := range tests {
		_, err := ParseDDL(tt.ddl)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseDDL(%q) = %v, want a *SyntaxError", tt.ddl, err)
			continue
		}
		if se.Pos != tt.wantPos || !strings.Contains(se.Msg, tt.wantMsg) {
			t.Errorf("ParseDDL(%q): got pos %d %q, want pos %d %q", tt.ddl, se.Pos, se.Msg, tt.wantPos, tt.wantMsg)
		}
		if !strings.Contains(err.Error(), "^") {
			t.Errorf("error has no caret: %v", err)
		}
	}
}

func TestFromJSONSchema(t *testing.T) {
	doc := `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object",
	  "required": ["order_id", "ts", "note"],
	  "properties": {
	    "order_id": {"type": "integer"},
	    "amount": {"type": "number"},
	    "ts": {"type": "string", "format": "date-time"},
	    "day": {"type": "string", "format": "date"},
	    "note": {"type": ["string", "null"], "description": "free text"},
	    "paid": {"type": "boolean"},
	    "tags": {"type": "array", "items": {"type": "string"}},
	    "user": {"$ref": "#/$defs/user"},
	    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
	    "any": {},
	    "mixed": {"type": ["integer", "string"]},
	    "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
	    "blob": {"type": "string", "contentEncoding": "base64"},
	    "kind": {"enum": ["a", "b"]}
	  },
	  "$defs": {"user": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}
	}`
	got, err := FromJSONSchema([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.NewSchema([]arrow.Field{
		nn("order_id", arrow.PrimitiveTypes.Int64), f("amount", arrow.PrimitiveTypes.Float64), nn("ts", tsUTC),
		f("day", arrow.FixedWidthTypes.Date32),
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"free text"})},
		f("paid", arrow.FixedWidthTypes.Boolean), f("tags", arrow.ListOf(arrow.BinaryTypes.String)),
		f("user", arrow.StructOf(f("id", arrow.PrimitiveTypes.Int64), f("name", arrow.BinaryTypes.String))),
		f("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)),
		f("any", arrow.BinaryTypes.String), f("mixed", arrow.BinaryTypes.String), f("maybe", arrow.PrimitiveTypes.Float64),
		f("blob", arrow.BinaryTypes.Binary), f("kind", arrow.BinaryTypes.String),
	}, nil)
	if !got.Equal(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if _, err := FromJSONSchema([]byte(`{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}`)); err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive $ref: got %v", err)
	}
}

func TestFromAvro(t *testing.T) {
	doc := `{"type":"record","name":"Order","namespace":"shop","fields":[
	  {"name":"id","type":"long"},
	  {"name":"amount","type":["null","double"],"doc":"EUR"},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	  {"name":"ts_us","type":{"type":"long","logicalType":"timestamp-micros"}},
	  {"name":"local","type":{"type":"long","logicalType":"local-timestamp-micros"}},
	  {"name":"day","type":{"type":"int","logicalType":"date"}},
	  {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"uid","type":{"type":"string","logicalType":"uuid"}},
	  {"name":"user","type":{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}},
	  {"name":"buyer","type":["null","User"]},
	  {"name":"tags","type":{"type":"array","items":"string"}},
	  {"name":"attrs","type":{"type":"map","values":"int"}},
	  {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}},
	  {"name":"hash","type":{"type":"fixed","name":"MD5","size":16}},
	  {"name":"either","type":["int","string","null"]},
	  {"name":"f","type":"float"},{"name":"b","type":"boolean"},{"name":"raw","type":"bytes"}
	]}`
	got, err := FromAvro([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	user := arrow.StructOf(nn("id", arrow.PrimitiveTypes.Int64), nn("name", arrow.BinaryTypes.String))
	want := arrow.NewSchema([]arrow.Field{
		nn("id", arrow.PrimitiveTypes.Int64),
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: arrow.NewMetadata([]string{"comment"}, []string{"EUR"})},
		nn("ts", tsUTC), nn("ts_us", tsUTC), nn("local", tsNTZ), nn("day", arrow.FixedWidthTypes.Date32),
		nn("price", &arrow.Decimal128Type{Precision: 10, Scale: 2}), nn("uid", arrow.BinaryTypes.String),
		nn("user", user), f("buyer", user), nn("tags", arrow.ListOf(arrow.BinaryTypes.String)),
		nn("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)), nn("state", arrow.BinaryTypes.String),
		nn("hash", &arrow.FixedSizeBinaryType{ByteWidth: 16}),
		f("either", arrow.StructOf(f("member0", arrow.PrimitiveTypes.Int32), f("member1", arrow.BinaryTypes.String))),
		nn("f", arrow.PrimitiveTypes.Float32), nn("b", arrow.FixedWidthTypes.Boolean), nn("raw", arrow.BinaryTypes.Binary),
	}, nil)
	if !got.Equal(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	_, err = FromAvro([]byte(`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`))
	if err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Errorf("recursive record: got %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return "@" + p
	}
	want := arrow.NewSchema([]arrow.Field{f("id", arrow.PrimitiveTypes.Int64), f("name", arrow.BinaryTypes.String)}, nil)
	tests := []struct{ name, spec string }{
		{"inline ddl", "id bigint, name string"},
		{"ddl file", write("s.ddl", "id bigint,\n  name string\n")},
		{"json schema file", write("s.json", `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`)},
		{"avro file", write("s.avsc", `{"type":"record","name":"r","fields":[{"name":"id","type":["null","long"]},{"name":"name","type":["string","null"]}]}`)},
		{"spark json", `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}`},
	}
	for _, tt := range tests {
		got, err := Load(tt.spec)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, want)
		}
	}
	if _, err := Load("@" + filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
}

// TestLoadBarePath: a path without "@" is read when it is not valid DDL and names an existing
// file (relative or absolute); valid DDL stays DDL even when a file of that name exists; a
// missing file that looks like a path says so; other invalid DDL keeps the DDL error.
func TestLoadBarePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idName := arrow.NewSchema([]arrow.Field{f("id", arrow.PrimitiveTypes.Int64), f("name", arrow.BinaryTypes.String)}, nil)
	write("orders.json", `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`)
	write("schemas/order.avsc", `{"type":"record","name":"r","fields":[{"name":"id","type":["null","long"]},{"name":"name","type":["string","null"]}]}`)
	write("hb", "id bigint, name string")
	write("x int", `{"type":"object","properties":{"y":{"type":"string"}}}`) // a file named like valid DDL
	if err := os.Mkdir("dir.json", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"orders.json", "@orders.json", filepath.Join(dir, "orders.json"), "schemas/order.avsc", "hb", "./hb"} {
		got, err := Load(spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
		} else if !got.Equal(idName) {
			t.Errorf("%s: got %v, want %v", spec, got, idName)
		}
	}
	got, err := Load("x int")
	if want := arrow.NewSchema([]arrow.Field{f("x", arrow.PrimitiveTypes.Int32)}, nil); err != nil || !got.Equal(want) {
		t.Errorf("valid DDL named like a file: got %v, %v; want the DDL %v", got, err, want)
	}
	for spec, want := range map[string][]string{
		"missing.json":   {"missing.json is not a readable schema file", "no such file", "parse schema ddl"},
		"conf/schema":    {"conf/schema is not a readable schema file", "no such file"},
		"dir.json":       {"dir.json is not a readable schema file", "not a regular file"},
		"id bigint,":     {"parse schema ddl"},
		"id":             {"parse schema ddl"},
		"@missing.json":  {"load schema", "no such file"},
		"id bigint name": {"parse schema ddl"},
	} {
		_, err := Load(spec)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: got %v, want an error containing %q", spec, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "readable schema file") && !strings.Contains(spec, ".") && !strings.Contains(spec, "/") {
			t.Errorf("%q: reported as a file: %v", spec, err)
		}
	}
}

func TestMergeHints(t *testing.T) {
	base := arrow.NewSchema([]arrow.Field{
		f("amount", arrow.PrimitiveTypes.Int64),
		f("user", arrow.StructOf(f("id", arrow.PrimitiveTypes.Int64))),
		f("tags", arrow.ListOf(arrow.PrimitiveTypes.Int64)),
		f("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)),
	}, nil)
	hints, err := ParseHints("amount decimal(10,2), user.id string, user.name string, tags.element double, attrs.value int, extra.x date")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Merge(base, hints)
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.NewSchema([]arrow.Field{
		f("amount", &arrow.Decimal128Type{Precision: 10, Scale: 2}),
		f("user", arrow.StructOf(f("id", arrow.BinaryTypes.String), f("name", arrow.BinaryTypes.String))),
		f("tags", arrow.ListOf(arrow.PrimitiveTypes.Float64)),
		f("attrs", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)),
		f("extra", arrow.StructOf(f("x", arrow.FixedWidthTypes.Date32))),
	}, nil)
	if !got.Equal(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	bad, _ := ParseHints("amount.x int")
	if _, err := Merge(base, bad); err == nil {
		t.Error("hint through a bigint: no error")
	}
	bad, _ = ParseHints("tags.x int")
	if _, err := Merge(base, bad); err == nil || !strings.Contains(err.Error(), "tags.element") {
		t.Errorf("hint into a list without element: %v", err)
	}
}

func TestWiden(t *testing.T) {
	i32, i64, f64, str := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String
	tests := []struct{ a, b, want arrow.DataType }{
		{i32, i64, i64},
		{i64, f64, f64},
		{arrow.Null, i32, i32},
		{arrow.FixedWidthTypes.Boolean, i64, str},
		{f64, str, str},
		{arrow.FixedWidthTypes.Date32, tsUTC, tsUTC},
		{arrow.ListOf(i64), arrow.ListOf(f64), arrow.ListOf(f64)},
		{arrow.ListOf(i64), i64, str},
		{
			arrow.StructOf(nn("a", i64), nn("b", str)),
			arrow.StructOf(nn("b", i64), nn("c", f64)),
			arrow.StructOf(f("a", i64), nn("b", str), f("c", f64)),
		},
	}
	for _, tt := range tests {
		if got := Widen(tt.a, tt.b); !arrow.TypeEqual(got, tt.want) {
			t.Errorf("Widen(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
}
