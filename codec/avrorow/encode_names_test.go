package avrorow

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestEncodeTimestampsAndNames: nullable zone-less timestamps of every unit, nanosecond
// timestamps (kept exact), and columns whose names are not Avro names (written under the
// sanitized names, not as nulls) round-trip through FromArrow, the Encoder and the Decoder.
func TestEncodeTimestampsAndNames(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	typ := arrow.StructOf(
		arrow.Field{Name: "weird name", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		arrow.Field{Name: "1digit", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.StructOf(arrow.Field{Name: "my-field", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true}), Nullable: true},
		arrow.Field{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		arrow.Field{Name: "zns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	)
	a, _, err := array.FromJSON(mem, typ, strings.NewReader(`[
	 {"weird name":1714557600123,"1digit":1714557601,"n":{"my-field":1714557600123456},"ns":1714557600123456789,"zns":1714557600123456789},
	 {"weird name":null,"1digit":null,"n":{"my-field":null},"ns":null,"zns":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	doc, err := FromArrow(typ, "Row")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSchema(doc)
	if err != nil {
		t.Fatal(err)
	}
	enc, d := NewEncoder(s), NewDecoder(s, nil)
	d.Open(mem)
	defer d.Release()
	for i := 0; i < a.Len(); i++ {
		b, err := enc.Append(nil, a, i)
		if err != nil {
			t.Fatalf("encode row %d: %v", i, err)
		}
		if why := d.Append(b); why != "" {
			t.Fatalf("decode row %d: %s", i, why)
		}
	}
	got := d.NewArray()
	defer got.Release()
	rename := strings.NewReplacer(`"weird name"`, `"weird_name"`, `"1digit"`, `"_digit"`, `"my-field"`, `"my_field"`)
	for i := 0; i < a.Len(); i++ {
		if want, have := rename.Replace(rowJSON(t, a, i)), rowJSON(t, got, i); want != have {
			t.Errorf("row %d:\n got %s\nwant %s", i, have, want)
		}
	}
	// A coarser writer schema refuses to truncate nanoseconds.
	ms, err := ParseSchema(`{"type":"record","name":"Row","fields":[{"name":"zns","type":["null",{"type":"long","logicalType":"timestamp-micros"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEncoder(ms).Append(nil, a, 0); err == nil || !strings.Contains(err.Error(), "$.zns: timestamp 1714557600123456789 ns is not a whole number of us") {
		t.Errorf("ns → timestamp-micros: %v", err)
	}
	// Two columns with the same Avro name: a clear error naming both.
	_, err = FromArrow(arrow.StructOf(arrow.Field{Name: "a b", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "a_b", Type: arrow.PrimitiveTypes.Int64}), "Row")
	if err == nil || !strings.Contains(err.Error(), `columns "a b" and "a_b" both become Avro field name "a_b"`) {
		t.Errorf("duplicate sanitized names: %v", err)
	}
}
