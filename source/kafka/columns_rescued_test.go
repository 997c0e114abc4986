package kafka

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestProjectionRescuedOrigin: with --columns 'key.*,value.*' over a json key and a json
// value both contribute a rescue member, so every member object goes under its label: a row
// whose key alone has an unparsed field ({"k":1,"x":2} / {"a":1}) and a row whose value alone
// has it ({"k":1} / {"a":1,"x":2}) must differ and say where x came from, whatever the column
// order (the key's label comes first). (Found by break test 4: the first member object took
// the top-level's place unlabelled, so both rows gave {"x":2,"_file":...}.)
func TestProjectionRescuedOrigin(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// One position for all, so that only the origin of x can tell them apart.
	full, rec := testBatch(t, mem, testCodec(t, FormatJSON, "k BIGINT", "--key-format"), testCodec(t, FormatJSON, "a BIGINT", "--value-format"),
		testRecord(0, 5, `{"k":1,"x":2}`, `{"a":1}`),          // x is the key's
		testRecord(0, 5, `{"k":1}`, `{"a":1,"x":2}`),          // x is the value's
		testRecord(0, 5, `{"k":1,"x":2}`, `{"a":1,"y":3}`),    // both
		testRecord(0, 5, `nokey`, `{"a":1,"y":3}`),            // an undecodable key and the value's y
		testRecord(0, 5, `{"k":1}`, `{"a":1}`),                // nothing rescued
		testRecord(0, 5, `{"k":1,"x":2}`, ``),                 // the key's x, a tombstone value
		testRecord(0, 5, `{"k":"bad"}`, `{"a":"bad","x":[]}`)) // mistyped fields of both
	defer rec.Release()
	rescued := []string{
		`{"key._rescued_data":{"x":2,"_file":"t/0@5"}}`,
		`{"value._rescued_data":{"x":2,"_file":"t/0@5"}}`,
		`{"key._rescued_data":{"x":2,"_file":"t/0@5"},"value._rescued_data":{"y":3,"_file":"t/0@5"}}`,
		`{"key":"nokey","_error":"key: invalid literal at byte 0","_file":"t/0@5","value._rescued_data":{"y":3,"_file":"t/0@5"}}`,
		`(null)`,
		`{"key._rescued_data":{"x":2,"_file":"t/0@5"}}`,
		`{"key._rescued_data":{"k":"bad","_file":"t/0@5"},"value._rescued_data":{"x":[],"a":"bad","_file":"t/0@5"}}`,
	}
	for cols, members := range map[string][]string{
		"key.*,value.*": {"1 | 1", "1 | 1", "1 | 1", "(null) | 1", "1 | 1", "1 | (null)", "(null) | (null)"},
		"value.a,key.k": {"1 | 1", "1 | 1", "1 | 1", "1 | (null)", "1 | 1", "(null) | 1", "(null) | (null)"}, // the key's label first all the same
	} {
		p, err := newProjection(full, strings.Split(cols, ","))
		if err != nil {
			t.Fatal(err)
		}
		got := projectRows(t, mem, p, rec)
		want := make([]string, len(rescued))
		for i := range want {
			want[i] = members[i] + " | " + rescued[i]
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", cols, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestProjectionAvroFieldNamedRescued: an Avro value whose record has its own field
// "_rescued_data" (a legal Avro name; here a long) holds data there, not the json codec's
// rescued fields. Picking its members apart (value.seq, value.*, value._rescued_data) is a
// usage error naming the field and the ways out, never a panic (break test 4:
// mergeRescued took it for the rescue member, "interface conversion: arrow.Array is
// *array.Int64, not *array.String"); the whole value keeps the field as data.
func TestProjectionAvroFieldNamedRescued(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	valC := testCodec(t, FormatAvro, `{"type":"record","name":"R","fields":[{"name":"seq","type":"long"},{"name":"_rescued_data","type":"long"}]}`, "--value-format")
	full, rec := testBatch(t, mem, &binaryCodec{}, valC, testRecord(0, 0, "", "\x02\x0a")) // seq 1, _rescued_data 5
	defer rec.Release()
	for _, cols := range []string{"value.seq", "value.*", "value._rescued_data", "offset,value.seq"} {
		_, err := newProjection(full, strings.Split(cols, ","))
		want := `the avro value has its own field "_rescued_data", which --columns cannot tell apart from the _rescued_data column it always keeps; output the whole value (--columns value,...)`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--columns %s: got %v, want %q", cols, err, want)
		}
	}
	p, err := newProjection(full, []string{"value", "offset"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := projectRows(t, mem, p, rec), `{"_rescued_data":5,"seq":1} | 0 | (null)`; len(got) != 1 || got[0] != want {
		t.Errorf("--columns value,offset: got %q, want %q", got, want)
	}
}
