package delta

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestIcebergCompatV2Write: appends to a table with writer feature icebergCompatV2 (the log of
// a Spark table: column mapping name, nested ids under delta.columnMapping.nested.ids) are
// accepted where streamkit meets the writer requirements and refused, naming the feature and
// the requirement, where it does not; the data-file schema carries the nested ids as the
// Parquet field ids of list elements and map keys and values, as Spark's files do.
func TestIcebergCompatV2Write(t *testing.T) {
	field := func(name, typ, meta string) string {
		return `{"name":"` + name + `","type":` + typ + `,"nullable":true,"metadata":{` + meta + `}}`
	}
	cm := func(id int, phys string, nested string) string {
		return `"delta.columnMapping.id":` + string(rune('0'+id)) + `,"delta.columnMapping.physicalName":"` + phys + `","delta.columnMapping.nested.ids":{` + nested + `}`
	}
	fields := []string{
		field("id", `"long"`, cm(1, "c1", "")),
		field("tags", `{"type":"array","elementType":"string","containsNull":true}`, cm(2, "c2", `"c2.element":8`)),
		field("m", `{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"integer","containsNull":true},"valueContainsNull":true}`,
			cm(3, "c3", `"c3.key":9,"c3.value":10,"c3.value.element":11`)),
		field("s", `{"type":"struct","fields":[`+field("l", `{"type":"array","elementType":"long","containsNull":true}`, cm(5, "c5", `"c5.element":12`))+`]}`, cm(4, "c4", "")),
	}
	schema := func(fs ...string) string { return `{"type":"struct","fields":[` + strings.Join(fs, ",") + `]}` }
	proto := &Protocol{MinReaderVersion: 2, MinWriterVersion: 7, WriterFeatures: []string{FeatureColumnMapping, FeatureIcebergCompatV2, FeatureInvariants, FeatureAppendOnly}}
	conf := func(kv ...string) map[string]string {
		c := map[string]string{"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "12"}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i]] = kv[i+1]
		}
		return c
	}
	meta := func(s string, c map[string]string, parts ...string) *Metadata {
		return &Metadata{Format: Format{Provider: "parquet"}, SchemaString: s, Configuration: c, PartitionColumns: parts}
	}
	withDV := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureColumnMapping, FeatureDeletionVectors},
		WriterFeatures: []string{FeatureColumnMapping, FeatureIcebergCompatV2, FeatureDeletionVectors}}
	for _, c := range []struct {
		name string
		p    *Protocol
		m    *Metadata
		want string // "" accepted
	}{
		{"Spark's table", proto, meta(schema(fields...), conf()), ""},
		{"not enabled", proto, meta(schema(field("tags", `{"type":"array","elementType":"string","containsNull":true}`, cm(2, "c2", ""))), conf("delta.enableIcebergCompatV2", "false")), ""},
		{"missing element id", proto, meta(schema(field("tags", `{"type":"array","elementType":"string","containsNull":true}`, cm(2, "c2", ""))), conf()), "column tags has no nested id for tags.element"},
		{"missing nested value id", proto, meta(schema(field("m", `{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"integer","containsNull":true},"valueContainsNull":true}`, cm(3, "c3", `"c3.key":9,"c3.value":10`))), conf()), "no nested id for m.value.element"},
		{"partitioned", proto, meta(schema(fields[0], field("day", `"string"`, cm(6, "c6", ""))), conf(), "day"), "the table is partitioned (by day)"},
		{"no column mapping", proto, meta(schema(`{"name":"id","type":"long","nullable":true,"metadata":{}}`), conf("delta.columnMapping.mode", "none")), `column mapping mode "none"`},
		{"deletion vectors", withDV, meta(schema(fields[0]), conf("delta.enableDeletionVectors", "true")), "deletion vectors are active"},
		{"IcebergCompatV1 too", proto, meta(schema(fields[0]), conf("delta.enableIcebergCompatV1", "true")), "IcebergCompatV1 is active too"},
		{"property without the feature", &Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, meta(schema(fields[0]), conf()), "delta.enableIcebergCompatV2=true needs feature icebergCompatV2"},
	} {
		err := checkWrite(c.p, c.m)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrUnsupportedProtocol) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "icebergCompatV2") {
			t.Errorf("%s: err = %v, want an unsupported-protocol error naming icebergCompatV2 and %q", c.name, err, c.want)
		}
	}

	st, err := ParseSchema(schema(fields...))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := st.DataFileArrow(MappingName)
	if err != nil {
		t.Fatal(err)
	}
	id := func(f arrow.Field) string {
		v, _ := f.Metadata.GetValue(ParquetFieldIDKey)
		return v
	}
	tags := sc.Field(1).Type.(*arrow.ListType).ElemField()
	m := sc.Field(2).Type.(*arrow.MapType)
	inner := m.ItemField().Type.(*arrow.ListType).ElemField()
	sl := sc.Field(3).Type.(*arrow.StructType).Field(0)
	got := []string{id(sc.Field(1)), id(tags), id(m.KeyField()), id(m.ItemField()), id(inner), id(sl), id(sl.Type.(*arrow.ListType).ElemField())}
	if want := []string{"2", "8", "9", "10", "11", "5", "12"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("data-file field ids (tags, its element, m's key, value, value element, s.l, its element) = %v, want %v", got, want)
	}
	// The schema the reader matches files by keeps no nested ids.
	ps, err := st.PhysicalArrow(MappingName)
	if err != nil {
		t.Fatal(err)
	}
	if v := id(ps.Field(1).Type.(*arrow.ListType).ElemField()); v != "" {
		t.Errorf("PhysicalArrow: element field id %q, want none", v)
	}
}
