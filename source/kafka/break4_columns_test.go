package kafka

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBreak4RescuedOrigin (break-test 4): with --columns 'key.*,value.*' over a json key and a
// json value, the merged _rescued_data must say where an unparsed field came from. Today a row
// whose key alone has an unparsed field ({"k":1,"x":2} / {"a":1}) and a row whose value alone
// has it ({"k":1} / {"a":1,"x":2}) get the same _rescued_data, {"x":2,"_file":...}: the first
// member object with rescued data takes the top-level's place unlabelled, so a consumer cannot
// tell a key field from a value field (nor re-build the record); only when two objects meet is
// the second one labelled ("value._rescued_data"), and which one depends on the column order.
func TestBreak4RescuedOrigin(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	keyC, err := codecFor(FormatJSON, "k BIGINT", "--key-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	valC, err := codecFor(FormatJSON, "a BIGINT", "--value-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	full := schemaFor(keyC, valC, true)
	p, err := newProjection(full, []string{"key.*", "value.*"})
	if err != nil {
		t.Fatal(err)
	}
	bl, err := newBuilder(mem, full, keyC, valC)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.release()
	for _, r := range []struct{ k, v string }{
		{`{"k":1,"x":2}`, `{"a":1}`}, // x is the key's
		{`{"k":1}`, `{"a":1,"x":2}`}, // x is the value's
	} {
		// One position for both, so that only the origin of x can tell them apart.
		if err := bl.add(&kgo.Record{Topic: "t", Offset: 5, Key: []byte(r.k), Value: []byte(r.v)}); err != nil {
			t.Fatal(err)
		}
	}
	rec := bl.finish()
	defer rec.Release()
	got := projectRows(t, mem, p, rec)
	if got[0] == got[1] {
		t.Errorf("a key field and a value field give the same row, origin lost:\n%s\n%s", got[0], got[1])
	}
}

// TestBreak4AvroFieldNamedRescued (break-test 4): an Avro value whose record has its own field
// "_rescued_data" (a legal Avro name; here a long) makes --columns value.seq (and value.*)
// panic in mergeRescued ("interface conversion: arrow.Array is *array.Int64, not
// *array.String"): the projection takes any struct member of that name for the json codec's
// rescue column. Repro against the broker: produce the Avro bytes 0x02 0x0a and run
// read-kafka --value-format avro --value-schema rd.avsc --columns value.seq. Only the json
// codec adds a rescue member; an Avro (or user) field of that name is data and must come out
// as such (or be refused with a usage error), never panic.
func TestBreak4AvroFieldNamedRescued(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	valC, err := codecFor(FormatAvro, `{"type":"record","name":"R","fields":[{"name":"seq","type":"long"},{"name":"_rescued_data","type":"long"}]}`, "--value-format", nil)
	if err != nil {
		t.Fatal(err)
	}
	full := schemaFor(&binaryCodec{}, valC, true)
	p, err := newProjection(full, []string{"value.seq"})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	bl, err := newBuilder(mem, full, &binaryCodec{}, valC)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.release()
	if err := bl.add(&kgo.Record{Topic: "t", Value: []byte{2, 10}}); err != nil { // seq 1, _rescued_data 5
		t.Fatal(err)
	}
	rec := bl.finish()
	defer rec.Release()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("--columns value.seq over an Avro field named _rescued_data panics: %v", r)
		}
	}()
	got := projectRows(t, mem, p, rec)
	if len(got) != 1 || !strings.Contains(got[0], "5") {
		t.Errorf("the Avro field _rescued_data (5) is lost: %q", got)
	}
}
