package delta

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestFromArrowSchemaJSON(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"}},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.LargeString, Nullable: false})},
		{Name: "l", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64)},
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	st, err := FromArrowSchema(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[` +
		`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"u8","type":"short","nullable":true,"metadata":{}},` +
		`{"name":"u64","type":"decimal(20,0)","nullable":true,"metadata":{}},` +
		`{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},` +
		`{"name":"d","type":"date","nullable":true,"metadata":{}},` +
		`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
		`{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"l","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":"double","valueContainsNull":true},"nullable":true,"metadata":{}},` +
		`{"name":"dict","type":"string","nullable":true,"metadata":{}}]}`
	if got := st.JSON(); got != want {
		t.Errorf("schema JSON\n got: %s\nwant: %s", got, want)
	}
	back, err := ParseSchema(want)
	if err != nil {
		t.Fatal(err)
	}
	if back.JSON() != want {
		t.Errorf("round trip changed the schema:\n%s", back.JSON())
	}
	p, m, err := NewTableMetadata(sc, CreateOptions{PartitionColumns: []string{"d"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || len(p.ReaderFeatures) != 1 || p.WriterFeatures[0] != FeatureTimestampNTZ {
		t.Errorf("protocol for a timestamp_ntz table: %+v", p)
	}
	if m.PartitionColumns[0] != "d" || m.Format.Provider != "parquet" {
		t.Errorf("metadata: %+v", m)
	}
}

func TestParseSparkSchema(t *testing.T) {
	// Pretty-printed, as Spark's example in PROTOCOL.md, with metadata and non-null fields.
	s := `{"type" : "struct", "fields" : [ {"name" : "a", "type" : "integer", "nullable" : false, "metadata" : { "comment": "x" }},
	 {"name" : "e", "type" : {"type" : "array", "elementType" : {"type" : "struct", "fields" : [ {"name" : "d", "type" : "integer", "nullable" : false, "metadata" : { }} ]}, "containsNull" : true}, "nullable" : true, "metadata" : { }},
	 {"name" : "f", "type" : {"type" : "map", "keyType" : "string", "valueType" : "decimal(38, 18)", "valueContainsNull" : false}, "nullable" : true, "metadata" : { }} ]}`
	st, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fields[0].Nullable || string(st.Fields[0].Metadata["comment"]) != `"x"` {
		t.Errorf("field a: %+v", st.Fields[0])
	}
	if got := st.Fields[2].Type.String(); got != "map<string,decimal(38,18)>" {
		t.Errorf("field f: %s", got)
	}
	sc, err := st.ToArrow()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Field(1).Type.(*arrow.ListType).ElemField().Name != "element" {
		t.Errorf("list element name: %s", sc.Field(1).Type)
	}
}

func TestFromArrowSchemaRefuses(t *testing.T) {
	for _, c := range []struct {
		f    arrow.Field
		want string
	}{
		{arrow.Field{Name: "h", Type: arrow.FixedWidthTypes.Float16}, "column h"},
		{arrow.Field{Name: "t", Type: arrow.FixedWidthTypes.Time32ms}, "column t"},
		{arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "dur", Type: arrow.FixedWidthTypes.Duration_s})}, "column s.dur"},
		{arrow.Field{Name: "n", Type: arrow.Null}, "column n"},
		{arrow.Field{Name: "big", Type: &arrow.Decimal256Type{Precision: 60, Scale: 0}}, "column big"},
	} {
		_, err := FromArrowSchema(arrow.NewSchema([]arrow.Field{c.f}, nil))
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrUnsupportedType naming %q", c.f.Type, err, c.want)
		}
	}
	for _, names := range [][]string{{"a", "A"}, {"bad name"}, {"x=y"}} {
		var fs []arrow.Field
		for _, n := range names {
			fs = append(fs, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32})
		}
		if _, err := FromArrowSchema(arrow.NewSchema(fs, nil)); err == nil {
			t.Errorf("names %q accepted", names)
		}
	}
}

func TestCheckWriteRefusesUnknownFeatures(t *testing.T) {
	m := &Metadata{Format: Format{Provider: "parquet"}, SchemaString: `{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}}]}`, Configuration: map[string]string{}}
	for _, c := range []struct {
		p    Protocol
		want string
	}{
		{Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"variantType"}, WriterFeatures: []string{"variantType"}}, `reader feature "variantType"`},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking"}}, `writer feature "rowTracking"`},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"someFutureThing"}}, `writer feature "someFutureThing"`},
		{Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, "reader version 4"},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, "writer version 8"},
	} {
		err := checkWrite(&c.p, m)
		if !errors.Is(err, ErrUnsupportedProtocol) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want one naming %s", c.p, err, c.want)
		}
	}
	for _, p := range []Protocol{
		{MinReaderVersion: 1, MinWriterVersion: 2},
		{MinReaderVersion: 1, MinWriterVersion: 4},
		{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz", "deletionVectors"}, WriterFeatures: []string{"timestampNtz", "deletionVectors", "appendOnly", "invariants", "domainMetadata"}},
	} {
		if err := checkWrite(&p, m); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	inv := *m
	inv.SchemaString = `{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"a > 3\"}}"}}]}`
	if err := checkWrite(&Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, &inv); err == nil || !strings.Contains(err.Error(), "invariants") {
		t.Errorf("invariants accepted: %v", err)
	}
}
