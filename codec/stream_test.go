package codec

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func testBatch(mem memory.Allocator, s *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("row")
		}
	}
	return b.NewRecordBatch()
}

func testSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"owner", SchemaKey}, []string{"me", "id"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"unit"}, []string{"count"})},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
}

func TestRoundTripWithControls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var buf bytes.Buffer
	w := NewWriter(&buf, s, mem)
	wm := time.Date(2024, 3, 1, 10, 0, 0, 123456789, time.UTC)
	rec := testBatch(mem, s, 5)
	want := []string{"data 5", "watermark 2024-03-01T10:00:00.123456Z", "progress 2024-03-01T10:00:00.123456Z", "barrier epoch=1", "data 5", "barrier epoch=2", "end pause"}
	steps := []func() error{
		func() error { return w.Write(rec) },
		func() error { return w.WriteControl(WatermarkControl(wm)) },
		func() error { return w.WriteControl(ProgressControl(wm)) },
		func() error { return w.WriteControl(BarrierControl(1)) },
		func() error { return w.Write(rec) },
		func() error { return w.WriteControl(BarrierControl(2)) },
		func() error { return w.WriteControl(EndControl(Pause)) },
		w.Close,
	}
	for _, f := range steps {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	rec.Release()
	r, err := NewReader(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Schema().Equal(s) || !r.Schema().Metadata().Equal(s.Metadata()) {
		t.Fatalf("schema changed in transit: got %v", r.Schema())
	}
	if got := r.Schema().Field(0).Metadata; !got.Equal(s.Field(0).Metadata) {
		t.Fatalf("field metadata: got %v", got)
	}
	var got []string
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			got = append(got, "data "+itoa(m.Batch.NumRows()))
			m.Batch.Release()
		} else {
			got = append(got, m.Control.String())
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("message %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestForeignStreamEndsFinal(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var buf bytes.Buffer
	w := NewWriter(&buf, s, mem)
	rec := testBatch(mem, s, 3)
	w.Write(rec)
	rec.Release()
	w.Close()
	r, err := NewReader(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	m, _ := r.Next()
	m.Batch.Release()
	m, err = r.Next()
	if err != nil || m.Control == nil || m.Control.Kind != End || m.Control.End != Final {
		t.Fatalf("got %+v, %v; want synthesized end final", m.Control, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after end: got %v, want EOF", err)
	}
}

func TestTruncatedStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var buf bytes.Buffer
	w := NewWriter(&buf, s, mem)
	rec := testBatch(mem, s, 100)
	w.Write(rec)
	w.WriteControl(BarrierControl(1))
	w.Write(rec)
	rec.Release()
	w.Close()
	full := buf.Bytes()
	// Every cut point strictly inside the stream must be an error, never a clean end.
	sawTruncated := false
	for cut := 1; cut < len(full)-8; cut++ {
		r, err := NewReader(bytes.NewReader(full[:cut]), mem)
		if err != nil {
			continue
		}
		var last error
		for {
			m, err := r.Next()
			if m.Batch != nil {
				m.Batch.Release()
			}
			if err != nil {
				last = err
				break
			}
			if m.Control != nil && m.Control.Kind == End {
				t.Fatalf("cut at %d of %d: a truncated stream was taken for an end", cut, len(full))
			}
		}
		if last == io.EOF {
			t.Fatalf("cut at %d: clean EOF on a truncated stream", cut)
		}
		if errors.Is(last, ErrTruncated) {
			sawTruncated = true
		}
		r.Release()
	}
	if !sawTruncated {
		t.Fatal("no cut produced ErrTruncated")
	}
}

func TestEmptyInput(t *testing.T) {
	if _, err := NewReader(bytes.NewReader(nil), memory.DefaultAllocator); !errors.Is(err, ErrNoStream) {
		t.Fatalf("got %v, want ErrNoStream", err)
	}
}

func TestParseControlErrors(t *testing.T) {
	cases := []struct {
		name string
		kv   [][2]string
		ok   bool
		err  bool
		want string
	}{
		{"data", nil, false, false, ""},
		{"barrier", [][2]string{{KeyControl, "barrier"}, {KeyEpoch, "7"}}, true, false, "barrier epoch=7"},
		{"barrier zero", [][2]string{{KeyControl, "barrier"}, {KeyEpoch, "0"}}, true, true, ""},
		{"barrier junk", [][2]string{{KeyControl, "barrier"}, {KeyEpoch, "x"}}, true, true, ""},
		{"watermark offset", [][2]string{{KeyControl, "watermark"}, {KeyWatermark, "2024-01-01T01:00:00.5+01:00"}}, true, false, "watermark 2024-01-01T00:00:00.500000Z"},
		{"watermark junk", [][2]string{{KeyControl, "watermark"}, {KeyWatermark, "yesterday"}}, true, true, ""},
		{"progress", [][2]string{{KeyControl, "progress"}, {KeyProgress, "2024-01-01T00:00:01Z"}}, true, false, "progress 2024-01-01T00:00:01.000000Z"},
		{"progress junk", [][2]string{{KeyControl, "progress"}, {KeyProgress, ""}}, true, true, ""},
		{"end final", [][2]string{{KeyControl, "end"}, {KeyEnd, "final"}}, true, false, "end final"},
		{"end pause", [][2]string{{KeyControl, "end"}, {KeyEnd, "pause"}}, true, false, "end pause"},
		{"end junk", [][2]string{{KeyControl, "end"}, {KeyEnd, "later"}}, true, true, ""},
		{"unknown", [][2]string{{KeyControl, "flush"}}, true, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k, v []string
			for _, p := range c.kv {
				k, v = append(k, p[0]), append(v, p[1])
			}
			got, ok, err := ParseControlMetadata(arrow.NewMetadata(k, v))
			if ok != c.ok || (err != nil) != c.err {
				t.Fatalf("got ok=%v err=%v, want ok=%v err=%v", ok, err, c.ok, c.err)
			}
			if err == nil && ok && got.String() != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestWithInfoKeepsForeignMetadata(t *testing.T) {
	s := testSchema()
	out := WithInfo(s, StreamInfo{Key: []string{"a", "b.c"}, EventTime: "ts", Checkpoints: []string{"/x", "/y"}, Replayable: true})
	in := Info(out)
	if v, _ := out.Metadata().GetValue("owner"); v != "me" {
		t.Fatalf("foreign metadata lost: %v", out.Metadata())
	}
	if len(in.Key) != 2 || in.Key[1] != "b.c" || in.EventTime != "ts" || len(in.Checkpoints) != 2 || in.Checkpoints[1] != "/y" || !in.Replayable {
		t.Fatalf("got %+v", in)
	}
	if cleared := Info(WithInfo(out, StreamInfo{})); cleared.Key != nil || cleared.EventTime != "" || cleared.Checkpoints != nil || cleared.Replayable {
		t.Fatalf("not cleared: %+v", cleared)
	}
	if p := Info(WithInfo(s, StreamInfo{Partitions: []string{"t/0", "t/3"}})).Partitions; len(p) != 2 || p[1] != "t/3" {
		t.Fatalf("partitions %q", p)
	}
}

// writeThenRead writes rec and an end=final as a stream and returns a reader of it.
func writeThenRead(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch) *Reader {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, rec.Schema(), mem)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.WriteControl(EndControl(Final))
	w.Close()
	r, err := NewReader(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A batch's source partition (KeyPartition) goes over the wire and onto batches made from it.
func TestBatchPartitionCarried(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, s)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	defer b.Release()
	rec := WithPartition(b.NewRecordBatch(), "orders/2")
	defer rec.Release()
	r := writeThenRead(t, mem, rec)
	defer r.Release()
	msg, err := r.Next()
	if err != nil || msg.Batch == nil {
		t.Fatalf("next: %v %+v", err, msg)
	}
	defer msg.Batch.Release()
	if p, ok := BatchPartition(msg.Batch); !ok || p != "orders/2" {
		t.Fatalf("read back partition %q %v", p, ok)
	}
	sub := msg.Batch.NewSlice(0, 1)
	sub = CarryMetadata(sub, msg.Batch)
	defer sub.Release()
	if p, _ := BatchPartition(sub); p != "orders/2" || sub.NumRows() != 1 {
		t.Fatalf("carried partition %q, %d rows", p, sub.NumRows())
	}
	b.Field(0).(*array.Int64Builder).Append(4)
	plain := b.NewRecordBatch() // no metadata: CarryMetadata returns dst itself
	if got := CarryMetadata(plain, plain); got != plain {
		t.Fatal("CarryMetadata wrapped a batch without metadata")
	}
	plain.Release()
}

// A data batch whose string offsets point outside the data (as a corrupt or hostile producer
// may send) is an error on read, never a panic later.
func TestMalformedOffsetsRejected(t *testing.T) {
	mem := memory.NewGoAllocator()
	for _, offs := range [][]int32{{0, 1000, 8}, {0, 4, 2}} { // a bad last offset arrow-go itself refuses
		s := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
		ob := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))
		data := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, ob, memory.NewBufferBytes([]byte("abcdefgh"))}, nil, 0, 0)
		col := array.MakeFromData(data)
		rec := array.NewRecordBatch(s, []arrow.Array{col}, 2)
		r := writeThenRead(t, mem, rec)
		_, err := r.Next()
		if err == nil || !strings.Contains(err.Error(), `column "s"`) {
			t.Fatalf("offsets %v: got %v, want a malformed-column error", offs, err)
		}
		r.Release()
	}
}
