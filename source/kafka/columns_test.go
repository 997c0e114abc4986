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
	keyC, err := codecFor(FormatJSON, "k BIGINT", "--key-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	valC, err := codecFor(FormatJSON, "a BIGINT, b STRING", "--value-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	full := schemaFor(keyC, valC, true)
	p, err := newProjection(full, []string{"value.*", "partition", "offset"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.schema.String(), "schema:\n  fields: 5\n    - a: type=int64, nullable\n    - b: type=utf8, nullable\n    - partition: type=int32\n    - offset: type=int64\n    - _rescued_data: type=utf8, nullable"; got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	bl, err := newBuilder(mem, full, keyC, valC)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.release()
	for i, r := range []struct{ k, v string }{
		{`{"k":1}`, `{"a":1,"b":"x"}`},
		{`{"k":2}`, `nope`},
		{`{"k":3}`, `{"a":"bad","b":"y"}`},
		{`nokey`, `{"a":4,"z":true}`},
		{`{"k":5}`, ""},
	} {
		rec := &kgo.Record{Topic: "t", Partition: 1, Offset: int64(10 + i), Key: []byte(r.k), Value: []byte(r.v)}
		if r.v == "" {
			rec.Value = nil
		}
		if err := bl.add(rec); err != nil {
			t.Fatal(err)
		}
	}
	rec := bl.finish()
	defer rec.Release()
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
	// their struct, and the value's unparsed fields still merged into _rescued_data.
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
		`y | 3 | 12 | {"a":"bad","_file":"t/1@12"}`,
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
	valC, err := codecFor(FormatJSON, "u STRUCT<id BIGINT, name STRING>, n BIGINT", "--value-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	full := schemaFor(&binaryCodec{}, valC, true)
	bl, err := newBuilder(mem, full, &binaryCodec{}, valC)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.release()
	for i, v := range []string{`{"u":{"id":7,"name":"ann"},"n":1}`, `{"n":2}`, ``} {
		r := &kgo.Record{Topic: "t", Offset: int64(i), Value: []byte(v)}
		if v == "" {
			r.Value = nil
		}
		if err := bl.add(r); err != nil {
			t.Fatal(err)
		}
	}
	rec := bl.finish()
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
	valC, err := codecFor(FormatJSON, "partition BIGINT", "--value-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	full := schemaFor(&binaryCodec{}, valC, true)
	for cols, want := range map[string]string{
		"value.*,partition":   `value.* and partition both give a column "partition"`,
		"nope":                `no column "nope"`,
		"key.*":               `key.* needs --key-format json or avro`,
		"_rescued_data":       `no column "_rescued_data"`,
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
