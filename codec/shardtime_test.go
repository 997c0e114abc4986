package codec

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The declaration goes after the other keys, reads back, and is removed by the zero value; a
// schema written at once (WriteSchema) is read before any batch, and only once.
func TestShardEventTime(t *testing.T) {
	md := arrow.NewMetadata([]string{"a", SchemaKey}, []string{"1", "id"})
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, &md)
	want := ShardEventTimeColumn{Column: "v.ts", Unit: "ms", TZ: "UTC"}
	d := WithShardEventTime(s, want)
	if v, _ := d.Metadata().GetValue(SchemaShardEventTime); v != `{"column":"v.ts","unit":"ms","tz":"UTC"}` {
		t.Errorf("value %s", v)
	}
	if got, ok := ShardEventTime(d); !ok || got != want || Info(d).Key[0] != "id" {
		t.Errorf("got %+v %v", got, ok)
	}
	if got, ok := ShardEventTime(WithShardEventTime(d, ShardEventTimeColumn{})); ok || got != (ShardEventTimeColumn{}) {
		t.Errorf("removed: got %+v", got)
	}
	if WithShardEventTime(s, ShardEventTimeColumn{}) != s {
		t.Error("removing an absent declaration made a new schema")
	}

	var buf bytes.Buffer
	w := NewWriter(&buf, d, memory.NewGoAllocator())
	if err := w.WriteSchema(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), memory.NewGoAllocator())
	if err != nil {
		t.Fatalf("schema alone: %v", err)
	}
	if got, _ := ShardEventTime(r.Schema()); got != want {
		t.Errorf("read %+v", got)
	}
	r.Release()
	if err := w.WriteControl(EndControl(Final)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = NewReader(bytes.NewReader(buf.Bytes()), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if m, err := r.Next(); err != nil || m.Control == nil || m.Control.Kind != End {
		t.Fatalf("after the schema: %+v %v", m, err)
	}
}
