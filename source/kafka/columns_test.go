package kafka

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProjection builds batches the way read-kafka does (json key and value) and checks
// --columns: order, flattened members null for a null struct, the rescued columns merged.
func TestProjection(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full, rec := testBatch(t, mem, testCodec(t, FormatJSON, "k BIGINT", "--key-format"),
		testCodec(t, FormatJSON, "a BIGINT, b STRING", "--value-format"),
		testRecord(1, 10, `{"k":1}`, `{"a":1,"b":"x"}`),
		testRecord(1, 11, `{"k":2}`, `nope`),
		testRecord(1, 12, `{"k":3}`, `{"a":"bad","b":"y"}`),
		testRecord(1, 13, `nokey`, `{"a":4,"z":true}`),
		testRecord(1, 14, `{"k":5}`, ""))
	defer rec.Release()
	p, err := newProjection(full, []string{"value.*", "partition", "offset"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.schema.String(), "schema:\n  fields: 5\n    - a: type=int64, nullable\n    - b: type=utf8, nullable\n    - partition: type=int32\n    - offset: type=int64\n    - _rescued_data: type=utf8, nullable"; got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	got := projectRows(t, mem, p, rec)
	want := []string{
		`1 | x | 1 | 10 | (null)`,
		`(null) | (null) | 1 | 11 | {"value":"nope","_error":"value: invalid literal at byte 0","_file":"t/1@11"}`,
		`(null) | y | 1 | 12 | {"a":"bad","_file":"t/1@12"}`,
		`4 | (null) | 1 | 13 | {"key":"nokey","_error":"key: invalid literal at byte 0","_file":"t/1@13","value._rescued_data":{"z":true,"_file":"t/1@13"}}`,
		`(null) | (null) | 1 | 14 | (null)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Single members, as Spark's select("v.b", "k.k"): named by their last part, null with
	// their struct, and the value's unparsed fields still merged into _rescued_data — under
	// "value._rescued_data", since the key contributes its rescue member too.
	p, err = newProjection(full, []string{"value.b", "key.k", "offset"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.schema.String(), "schema:\n  fields: 4\n    - b: type=utf8, nullable\n    - k: type=int64, nullable\n    - offset: type=int64\n    - _rescued_data: type=utf8, nullable"; got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	got = projectRows(t, mem, p, rec)
	want = []string{
		`x | 1 | 10 | (null)`,
		`(null) | 2 | 11 | {"value":"nope","_error":"value: invalid literal at byte 0","_file":"t/1@11"}`,
		`y | 3 | 12 | {"value._rescued_data":{"a":"bad","_file":"t/1@12"}}`,
		`(null) | (null) | 13 | {"key":"nokey","_error":"key: invalid literal at byte 0","_file":"t/1@13","value._rescued_data":{"z":true,"_file":"t/1@13"}}`,
		`(null) | 5 | 14 | (null)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("members: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A nested member path and a nested .*: value.u.id and value.u.* reach into a struct member.
func TestProjectionNested(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full, rec := testBatch(t, mem, &binaryCodec{}, testCodec(t, FormatJSON, "u STRUCT<id BIGINT, name STRING>, n BIGINT", "--value-format"),
		testRecord(0, 0, "", `{"u":{"id":7,"name":"ann"},"n":1}`), testRecord(0, 1, "", `{"n":2}`), testRecord(0, 2, "", ""))
	defer rec.Release()
	for cols, want := range map[string]string{
		"value.u.id,value.n": "7 | 1 | (null)\n(null) | 2 | (null)\n(null) | (null) | (null)",
		"value.u.*":          "7 | ann | (null)\n(null) | (null) | (null)\n(null) | (null) | (null)",
	} {
		p, err := newProjection(full, strings.Split(cols, ","))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(projectRows(t, mem, p, rec), "\n"); got != want {
			t.Errorf("%s: got\n%s\nwant\n%s", cols, got, want)
		}
	}
}

// testCodec is codecFor(format, spec) of a key or value (flag: --key-format, --value-format).
func testCodec(t *testing.T, format, spec, flag string) fieldCodec {
	t.Helper()
	c, err := codecFor(format, spec, flag, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testRecord is a record of topic "t"; an empty key or value is null (a tombstone value).
func testRecord(partition int32, offset int64, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: "t", Partition: partition, Offset: offset}
	if key != "" {
		r.Key = []byte(key)
	}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

// testBatch decodes recs with keyC and valC into one batch of their full schema (schemaFor,
// with _rescued_data), as read-kafka does; the caller releases the batch.
func testBatch(t *testing.T, mem memory.Allocator, keyC, valC fieldCodec, recs ...*kgo.Record) (*arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	full := schemaFor(keyC, valC, true)
	bl, err := newBuilder(mem, full, keyC, valC)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.release()
	for _, r := range recs {
		if err := bl.add(r); err != nil {
			t.Fatal(err)
		}
	}
	return full, bl.finish()
}

// projectRows applies p to rec and renders each output row as "v | v | ...".
func projectRows(t *testing.T, mem memory.Allocator, p *projection, rec arrow.RecordBatch) []string {
	t.Helper()
	out := p.apply(mem, rec)
	defer out.Release()
	var got []string
	for j := 0; j < int(out.NumRows()); j++ {
		var row []string
		for c := 0; c < int(out.NumCols()); c++ {
			row = append(row, out.Column(c).ValueStr(j))
		}
		got = append(got, strings.Join(row, " | "))
	}
	return got
}

func TestProjectionErrors(t *testing.T) {
	full := schemaFor(&binaryCodec{}, testCodec(t, FormatJSON, "partition BIGINT", "--value-format"), true)
	for cols, want := range map[string]string{
		"value.*,partition":   `value.* and partition both give a column "partition"`,
		"nope":                `no column "nope"`,
		"key.*":               `key.* needs --key-format json or avro`,
		"_rescued_data":       `_rescued_data is always written, as the last column; leave it out of --columns`,
		"value.nope":          `value.nope: value has no member "nope" (members: partition, _rescued_data)`,
		"value.partition.x":   `value.partition.x: value.partition is int64, not a struct`,
		"offset.x":            `offset.x: offset is int64, not a struct`,
		"key.x":               `key.x needs --key-format json or avro`,
		"value._rescued_data": `value._rescued_data is always kept, merged into the _rescued_data column`,
	} {
		_, err := newProjection(full, strings.Split(cols, ","))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", cols, err, want)
		}
	}
}
