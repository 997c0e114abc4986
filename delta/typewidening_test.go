package delta

import (
	"errors"
	"strings"
	"testing"
)

func TestWideningSupported(t *testing.T) {
	dec := func(p, s int) DataType { return DecimalType{Precision: p, Scale: s} }
	for _, c := range []struct {
		from, to DataType
		want     bool
	}{
		{TypeByte, TypeShort, true}, {TypeByte, TypeLong, true}, {TypeShort, TypeInteger, true},
		{TypeInteger, TypeLong, true}, {TypeLong, TypeInteger, false}, {TypeInteger, TypeInteger, false},
		{TypeFloat, TypeDouble, true}, {TypeInteger, TypeDouble, true}, {TypeByte, TypeDouble, true},
		{TypeLong, TypeDouble, false}, {TypeDouble, TypeFloat, false},
		{TypeDate, TypeTimestampNTZ, true}, {TypeDate, TypeTimestamp, false}, {TypeTimestamp, TypeTimestampNTZ, false},
		{dec(6, 2), dec(10, 4), true}, {dec(6, 2), dec(7, 2), true}, {dec(6, 2), dec(7, 3), true},
		{dec(6, 2), dec(7, 4), false}, // k1=1 < k2=2: fewer integer digits
		{dec(6, 2), dec(6, 1), false}, {dec(6, 2), dec(6, 2), false},
		{TypeInteger, dec(10, 0), true}, {TypeInteger, dec(12, 2), true}, {TypeInteger, dec(11, 2), false},
		{TypeShort, dec(10, 0), true}, {TypeLong, dec(20, 0), true}, {TypeLong, dec(19, 0), false},
		{TypeLong, dec(22, 2), true}, {TypeString, TypeLong, false}, {TypeInteger, TypeString, false},
	} {
		if got := WideningSupported(c.from, c.to); got != c.want {
			t.Errorf("WideningSupported(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestTypeWideningChecks: a typeWidening table is read and written when each recorded change
// is a supported widening (nested and map/array ones included), refused naming the column
// otherwise; delta.enableTypeWidening stops no append on such a table.
func TestTypeWideningChecks(t *testing.T) {
	p := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{FeatureTypeWidening}, WriterFeatures: []string{FeatureTypeWidening}}
	schema := func(changes string) string {
		return `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},` +
			`{"name":"s","type":{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":"decimal(10, 4)","valueContainsNull":true},"nullable":true,"metadata":{"delta.typeChanges":` + changes + `}}]},"nullable":true,"metadata":{}}]}`
	}
	meta := func(changes string) *Metadata {
		return &Metadata{Format: Format{Provider: "parquet"}, SchemaString: schema(changes),
			Configuration: map[string]string{"delta.enableTypeWidening": "true"}}
	}
	good := `[{"fromType":"decimal(6, 2)","toType":"decimal(8,2)","fieldPath":"value"},{"fromType":"decimal(8,2)","toType":"decimal(10,4)","fieldPath":"value"}]`
	if err := checkRead(p, meta(good)); err != nil {
		t.Errorf("read refused: %v", err)
	}
	if err := checkWrite(p, meta(good)); err != nil {
		t.Errorf("write refused: %v", err)
	}
	preview := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{FeatureTypeWideningPreview}, WriterFeatures: []string{FeatureTypeWideningPreview}}
	if err := checkWrite(preview, meta(good)); err != nil {
		t.Errorf("typeWidening-preview refused: %v", err)
	}
	for _, c := range []struct{ changes, want string }{
		{`[{"fromType":"string","toType":"decimal(10,4)","fieldPath":"value"}]`, "column s.m.value changed type from string to decimal(10,4)"},
		{`[{"fromType":"decimal(10, 4)","toType":"decimal(10,2)","fieldPath":"value"}]`, "from decimal(10,4) to decimal(10,2)"},
		{`{"fromType":"x"}`, "delta.typeChanges"},
	} {
		for _, err := range []error{checkRead(p, meta(c.changes)), checkWrite(p, meta(c.changes))} {
			if !errors.Is(err, ErrUnsupportedProtocol) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want one naming %q", c.changes, err, c.want)
			}
		}
	}
	// Without the feature the property still needs it (create, or a table lacking it).
	plain := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	if err := checkWrite(plain, meta(good)); err == nil || !strings.Contains(err.Error(), "delta.enableTypeWidening=true needs feature typeWidening") {
		t.Errorf("enableTypeWidening without the feature: %v", err)
	}
}
