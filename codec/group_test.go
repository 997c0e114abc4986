package codec

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBarrierOffsets: a barrier's streamkit.offsets survives the wire (written after the
// epoch, read back into Control.Offsets, parsed into the same progress), a barrier without it
// reads as before, and the group metadata of a schema round-trips and replaces an older value.
func TestBarrierOffsets(t *testing.T) {
	one := int64(41)
	want := map[string]OffsetProgress{"orders/3": {Txn: &one, Next: 57}, "orders/5": {Next: 3}}
	c := BarrierControl(7)
	c.Offsets = FormatOffsets(want)
	if c.Offsets != `{"orders/3":{"txn":41,"next":57},"orders/5":{"txn":null,"next":3}}` {
		t.Fatalf("FormatOffsets = %s", c.Offsets)
	}
	md := c.Metadata()
	if md.Keys()[2] != KeyOffsets {
		t.Fatalf("metadata keys %v: want %s after the epoch", md.Keys(), KeyOffsets)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	mem := memory.NewGoAllocator()
	w := NewWriter(&buf, sc, mem)
	if err := w.WriteControl(c); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteControl(BarrierControl(8)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteControl(EndControl(Final)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var got []Control
	for {
		m, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if m.Control == nil {
			t.Fatal("a data batch")
		}
		got = append(got, *m.Control)
		if m.Control.Kind == End {
			break
		}
	}
	if got[0] != c || got[1] != BarrierControl(8) {
		t.Fatalf("read back %+v, want %+v and barrier 8 without offsets", got, c)
	}
	back, err := ParseOffsets(got[0].Offsets)
	if err != nil || len(back) != 2 || *back["orders/3"].Txn != 41 || back["orders/3"].Next != 57 || back["orders/5"].Txn != nil || back["orders/5"].Next != 3 {
		t.Fatalf("ParseOffsets = %+v, %v", back, err)
	}
	if _, err := ParseOffsets("[1]"); err == nil {
		t.Fatal("ParseOffsets accepted a JSON array")
	}

	g := GroupInfo{Group: "g", Flow: "f", Table: "s3://b/t"}
	s2 := WithGroup(WithGroup(sc, GroupInfo{Group: "old", Flow: "o", Table: "x"}), g)
	if gg, ok, err := Group(s2); err != nil || !ok || gg != g || s2.Metadata().Len() != 1 {
		t.Fatalf("Group = %+v %v %v (metadata %v)", gg, ok, err, s2.Metadata())
	}
	if _, ok, _ := Group(sc); ok {
		t.Fatal("Group found group metadata in a plain schema")
	}
	if TxnAppID("f", "orders/3") != "f-orders-3" {
		t.Fatalf("TxnAppID = %s", TxnAppID("f", "orders/3"))
	}
	if a := g.TxnAppID("orders/3"); a != "f-orders-3" {
		t.Fatalf("GroupInfo.TxnAppID without an AppID = %s, want the flow's f-orders-3", a)
	}
	k := GroupInfo{Group: "g", Flow: "f", AppID: "kafka_delta_ingest", Table: "t"}
	if a := k.TxnAppID("my-orders/12"); a != "kafka_delta_ingest-12" {
		t.Fatalf("GroupInfo.TxnAppID with AppID = %s, want kafka-delta-ingest's kafka_delta_ingest-12", a)
	}
	if gg, _, err := Group(WithGroup(sc, k)); err != nil || gg != k {
		t.Fatalf("Group of a GroupInfo with an AppID = %+v %v, want %+v", gg, err, k)
	}
}
