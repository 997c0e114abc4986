package kafka

import (
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
