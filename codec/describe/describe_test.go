package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

var testSchema = func() *arrow.Schema {
	md := arrow.NewMetadata(
		[]string{"pandas", codec.SchemaKey, codec.SchemaEventTime, codec.SchemaReplayable, codec.SchemaShardEventTime, codec.SchemaGroup, "streamkit.future"},
		[]string{`{"x":1}`, "value.user,id", "ts", "true", `{"column":"ts","unit":"ms"}`, `{"group":"g","flow":"f","table":"/t"}`, "v"})
	fmd := arrow.NewMetadata([]string{"comment"}, []string{"the id"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fmd},
		{Name: "value", Type: arrow.StructOf(arrow.Field{Name: "user", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, &md)
}()

// Of names every field's Spark and Arrow type and reads every streamkit key, the roles of the
// key, event-time and shard event-time columns, and keeps other keys apart.
func TestOf(t *testing.T) {
	d := Of(testSchema)
	var got []string
	for _, f := range d.Fields {
		got = append(got, f.Name+"|"+f.Type+"|"+f.Arrow+"|"+strings.Join(f.Roles, ",")+"|"+f.Metadata["comment"])
	}
	want := []string{
		"id|bigint|int64|key|the id",
		"value|struct<user:string>|struct<user: utf8 nullable>|key (value.user)|",
		"ts|timestamp|timestamp[us, tz=UTC]|event time,shard event time|",
		"tags|array<string>|list<item: utf8, nullable>||",
		"n|uint32|uint32||", // no Spark type: Arrow's name
		"d|string|dictionary<values=utf8, indices=int32, ordered=false>||",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fields\n%q\nwant\n%q", got, want)
	}
	sk := d.Streamkit
	if !slices.Equal(sk.Key, []string{"value.user", "id"}) || sk.EventTime != "ts" || !sk.Replayable ||
		sk.ShardEventTime == nil || sk.ShardEventTime.Unit != "ms" || string(sk.Group) != `{"group":"g","flow":"f","table":"/t"}` ||
		sk.Other["streamkit.future"] != "v" || len(sk.Other) != 1 || d.Metadata["pandas"] != `{"x":1}` || len(d.Metadata) != 1 {
		t.Fatalf("streamkit %+v metadata %v", sk, d.Metadata)
	}
	var text bytes.Buffer
	if err := WriteSchemaText(&text, &Report{Source: "stdin", Format: "arrows", Schema: d}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"  1  id     bigint", "key               value.user,id", "shard event time  ts unit=ms", "streamkit.future  v", `metadata pandas   {"x":1}`} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space: %q", l)
		}
	}
}

// stream writes a stream of testSchema: batches of rows, then controls.
func stream(t *testing.T, rows []int, controls ...codec.Control) []byte {
	t.Helper()
	var buf bytes.Buffer
	mem := memory.NewGoAllocator()
	w := codec.NewWriter(&buf, testSchema, mem)
	for _, n := range rows {
		b := array.NewRecordBuilder(mem, testSchema)
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			b.Field(4).AppendNull()
			b.Field(5).AppendNull()
		}
		rec := b.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	for _, c := range controls {
		if err := w.WriteControl(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadStreamCounts(t *testing.T) {
	wm1 := time.Date(2024, 5, 1, 0, 0, 1, 0, time.UTC)
	wm2 := time.Date(2024, 5, 1, 0, 0, 9, 0, time.UTC)
	in := stream(t, []int{3, 4}, codec.WatermarkControl(wm1), codec.BarrierControl(7), codec.WatermarkControl(wm2),
		codec.BarrierControl(8), codec.Control{Kind: codec.End, End: codec.Pause, Interrupted: true})
	var sawSchema bool
	rep, err := ReadStream(context.Background(), bytes.NewReader(in), "stdin", false, func(r *Report) error {
		sawSchema = r.Stream == nil && len(r.Fields) == 6
		return nil
	})
	if err != nil || !sawSchema {
		t.Fatalf("%v, schema first: %v", err, sawSchema)
	}
	want := Stream{DataBatches: 2, Rows: 7, Barriers: 2, FirstEpoch: 7, LastEpoch: 8, Watermarks: 2,
		FirstWatermark: "2024-05-01T00:00:01.000000Z", LastWatermark: "2024-05-01T00:00:09.000000Z", End: "pause", Interrupted: true}
	if *rep.Stream != want {
		t.Fatalf("stream %+v\nwant   %+v", *rep.Stream, want)
	}
	var text bytes.Buffer
	if err := WriteStreamText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"rows          7", "barriers      2 (epochs 7 … 8)", "end           pause (interrupt)"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || *back.Stream != want || back.Fields[3].Type != "array<string>" {
		t.Fatalf("json %v: %s", err, js.String())
	}
}

// A stream cut off is counted up to the cut and reported as truncated, with the codec error.
func TestReadStreamTruncated(t *testing.T) {
	in := stream(t, []int{3, 4, 5}, codec.BarrierControl(1), codec.EndControl(codec.Final))
	rep, err := ReadStream(context.Background(), bytes.NewReader(in[:len(in)-300]), "stdin", false, nil)
	if !errors.Is(err, codec.ErrTruncated) || rep == nil || !rep.Stream.Truncated || rep.Stream.End != "" || rep.Stream.Rows == 0 {
		t.Fatalf("%v %+v", err, rep)
	}
}

// On a live stream, an interrupt (ctx) returns at once with what was counted so far, and
// --first reads nothing past the schema.
func TestReadStreamLive(t *testing.T) {
	in := stream(t, []int{3, 4}, codec.BarrierControl(1), codec.EndControl(codec.Final))
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		pw.Write(in[:len(in)-200]) // the schema and the first batches; the rest never comes
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	rep, err := ReadStream(ctx, pr, "stdin", false, nil)
	if !errors.Is(err, context.Canceled) || rep == nil || !rep.Stream.Stopped || rep.Stream.DataBatches == 0 {
		t.Fatalf("%v %+v", err, rep)
	}

	pr2, pw2 := io.Pipe()
	defer pw2.Close()
	go pw2.Write(in)
	rep, err = ReadStream(context.Background(), pr2, "stdin", true, nil)
	if err != nil || rep.Stream != nil || len(rep.Fields) != 6 {
		t.Fatalf("--first: %v %+v", err, rep)
	}
}

func TestReadStreamNotArrow(t *testing.T) {
	_, err := ReadStream(context.Background(), strings.NewReader("id,name\n1,a\n"), "stdin", false, nil)
	if !errors.Is(err, codec.ErrNotArrow) || !strings.HasPrefix(err.Error(), "stdin: ") {
		t.Fatalf("%v", err)
	}
}
