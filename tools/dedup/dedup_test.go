package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// ev is one input item: rows "id@seconds" separated by spaces, or "|n" (barrier n).
type ev string

// stream encodes the items as an IPC stream with schema s.
func stream(t *testing.T, s *arrow.Schema, items ...ev) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, s, mem)
	v := int64(0)
	for _, it := range items {
		if strings.HasPrefix(string(it), "|") {
			var n uint64
			fmt.Sscanf(string(it), "|%d", &n)
			w.WriteControl(codec.BarrierControl(n))
			continue
		}
		b := array.NewRecordBuilder(mem, s)
		for _, row := range strings.Fields(string(it)) {
			id, sec, _ := strings.Cut(row, "@")
			var secs int
			fmt.Sscanf(sec, "%d", &secs)
			if id == "null" {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.StringBuilder).Append(id)
			}
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(secs) * time.Second).UnixMicro()))
			v++
			b.Field(2).(*array.Int64Builder).Append(v)
		}
		rec := b.NewRecordBatch()
		w.Write(rec)
		rec.Release()
		b.Release()
	}
	w.WriteControl(codec.EndControl(codec.Pause))
	w.Close()
	return buf.Bytes()
}

// run runs dedup over in and returns the output as "id@sec" per row, "|n" per barrier.
func run(t *testing.T, cfg Config, ckpt string, in []byte) ([]string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = stage.RunOperator(context.Background(), stage.Options{Tool: "dedup", Checkpoint: ckpt, Stdin: bytes.NewReader(in),
		Stdout: &out, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff, Mem: mem}, d)
	if err != nil {
		return nil, err
	}
	r, err := codec.NewReader(&out, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var got []string
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Control != nil {
			if m.Control.Kind == codec.Barrier {
				got = append(got, fmt.Sprintf("|%d", m.Control.Epoch))
			}
			continue
		}
		ids := m.Batch.Column(0).(*array.String)
		ts := m.Batch.Column(1).(*array.Timestamp)
		for i := 0; i < int(m.Batch.NumRows()); i++ {
			id := "null"
			if ids.IsValid(i) {
				id = ids.Value(i)
			}
			got = append(got, fmt.Sprintf("%s@%d", id, (int64(ts.Value(i))-t0.UnixMicro())/1e6))
		}
		m.Batch.Release()
	}
	return got, nil
}

func TestDedupByKey(t *testing.T) {
	in := stream(t, schema, "a@1 b@2 a@3", "|1", "null@4 b@5 null@6 c@7", "|2")
	got, err := run(t, Config{Key: []string{"id"}}, "", in)
	if err != nil {
		t.Fatal(err)
	}
	want := "[a@1 b@2 |1 null@4 c@7 |2]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestDedupAllColumnsByDefault(t *testing.T) {
	in := stream(t, schema, "a@1 a@1 a@2")
	// v differs on every row, so with all columns as key nothing is a duplicate.
	got, _ := run(t, Config{}, "", in)
	if len(got) != 3 {
		t.Fatalf("got %v", got)
	}
	// The declared key (keyby) is the default.
	keyed := codec.WithInfo(schema, codec.StreamInfo{Key: []string{"id"}})
	got, _ = run(t, Config{}, "", stream(t, keyed, "a@1 a@1 a@2"))
	if fmt.Sprint(got) != "[a@1]" {
		t.Fatalf("declared key: got %v", got)
	}
}

func TestTTLByWatermark(t *testing.T) {
	// TTL 10 s, watermark = max event time. "a" first at 0 s; at the barrier after 20 s the
	// watermark (20 s) has passed 0+10 s, so "a" is forgotten and its next occurrence kept.
	in := stream(t, schema, "a@0 a@5", "|1", "b@20", "|2", "a@21 b@22", "|3")
	got, err := run(t, Config{Key: []string{"id"}, EventTime: "ts", TTL: 10 * time.Second}, "", in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[a@0 |1 b@20 |2 a@21 |3]" {
		t.Fatalf("got %v", got)
	}
}

// A dropped duplicate's event time moves the watermark too (Spark's withWatermark sees every
// row before dropDuplicatesWithinWatermark; keyby --shards relies on it): "a@30" is dropped,
// yet at barrier 1 the watermark is 30 s and "a" (first at 0 s, TTL 10 s) is forgotten.
func TestDuplicatesMoveWatermark(t *testing.T) {
	in := stream(t, schema, "a@0 a@30", "|1", "a@31", "|2")
	got, err := run(t, Config{Key: []string{"id"}, EventTime: "ts", TTL: 10 * time.Second}, "", in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[a@0 |1 a@31 |2]" {
		t.Fatalf("got %v", got)
	}
}

// TestRestartReproduces runs epochs 1-4 uninterrupted, then runs the same input with a crash
// after epoch 2 was committed (epochs 3-4 replayed): the replayed output must be identical.
func TestRestartReproduces(t *testing.T) {
	items := []ev{"a@0 b@1", "|1", "a@2 c@3", "|2", "d@30 b@31 c@32", "|3", "a@40 e@41", "|4"}
	cfg := Config{Key: []string{"id"}, EventTime: "ts", TTL: 25 * time.Second}
	full, err := run(t, cfg, t.TempDir(), stream(t, schema, items...))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "dedup")
	first, err := run(t, cfg, dir, stream(t, schema, items[:6]...)) // ran through epoch 3 …
	if err != nil {
		t.Fatal(err)
	}
	_ = first
	for ep := uint64(1); ep <= 2; ep++ { // … but the sink committed only epochs 1-2
		if err := state.WriteCommit(dir, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	replay, err := run(t, cfg, dir, stream(t, schema, items[4:]...))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(full[indexOf(full, "|2")+1:])
	if fmt.Sprint(replay) != want {
		t.Fatalf("replay after restart: got %v, want %v (uninterrupted: %v)", replay, want, full)
	}
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

func TestRestartWithOtherKeyRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, Config{Key: []string{"id"}}, dir, stream(t, schema, "a@1", "|1")); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, Config{Key: []string{"id", "v"}}, dir, stream(t, schema, "a@1", "|1"))
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `key: checkpoint has "id", this run has "id,v"`) {
		t.Fatalf("got %v", err)
	}
	_, err = run(t, Config{Key: []string{"id"}, EventTime: "ts", TTL: time.Hour}, dir, stream(t, schema, "a@1", "|1"))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "ttl") {
		t.Fatalf("got %v", err)
	}
}

// How event times are read is part of the state: a restart with another --time-unit or --tz
// is refused (a break test saw ms read as s forget every key); a checkpoint that records
// neither (written before they were recorded) takes any (state.LaterOptions).
func TestRestartWithOtherTimeReadingRefused(t *testing.T) {
	ttl := Config{Key: []string{"id"}, EventTime: "ts", TTL: time.Hour}
	utc := ttl
	utc.Location = time.UTC
	ms := utc
	ms.TimeUnit = "ms"
	var ie *state.IncompatibleError
	for _, c := range []struct {
		first, then Config
		want        string // "" accepted
	}{
		{ttl, ttl, ""},
		{ttl, utc, `tz: checkpoint has "", this run has "UTC"`},
		{utc, ttl, `tz: checkpoint has "UTC", this run has ""`},
		{ms, utc, `time-unit: checkpoint has "ms", this run has ""`},
		{ms, ms, ""},
	} {
		dir := t.TempDir()
		if _, err := run(t, c.first, dir, stream(t, schema, "a@1", "|1")); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, c.then, dir, stream(t, schema, "a@1", "|1"))
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v then %+v: got %v, want %q", c.first, c.then, err, c.want)
		}
	}
	// A checkpoint written before time-unit and tz were recorded (metadata.json without them)
	// takes any: it cannot tell which ones it was written with.
	dir := t.TempDir()
	if _, err := run(t, ms, dir, stream(t, schema, "a@1", "|1")); err != nil {
		t.Fatal(err)
	}
	var md state.Metadata
	if err := state.ReadJSON(filepath.Join(dir, state.MetadataFile), &md); err != nil {
		t.Fatal(err)
	}
	delete(md.Options, "time-unit")
	delete(md.Options, "tz")
	if err := state.WriteJSON(dir, state.MetadataFile, md); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, ms, dir, stream(t, schema, "a@1", "|1")); err != nil {
		t.Fatalf("old checkpoint, same options: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, cfg := range []Config{{TTL: time.Hour}, {EventTime: "ts", TTL: time.Hour, TTLProcessing: time.Hour}} {
		_, err := New(cfg)
		var ue *stage.UsageError
		if !errors.As(err, &ue) {
			t.Fatalf("%+v: got %v", cfg, err)
		}
	}
	_, err := run(t, Config{Key: []string{"nope"}}, "", stream(t, schema, "a@1"))
	if err == nil || !strings.Contains(err.Error(), `no field "nope"`) {
		t.Fatalf("got %v", err)
	}
}

// A source without a checkpoint numbers its epochs from 1 on every run: a checkpointed dedup
// must refuse that instead of overwriting committed state; and a stage whose checkpoint is
// new (or was removed) while upstream stages kept theirs must refuse the gap.
func TestEpochOrderEnforced(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, Config{Key: []string{"id"}}, dir, stream(t, schema, "a@1", "|1", "b@2", "|2")); err != nil {
		t.Fatal(err)
	}
	state.WriteCommit(dir, 2, "test")
	_, err := run(t, Config{Key: []string{"id"}}, dir, stream(t, schema, "c@3", "|1"))
	if err == nil || !strings.Contains(err.Error(), "epoch 1 arrives after epoch 2") {
		t.Fatalf("restarted numbering: got %v", err)
	}
	_, err = run(t, Config{Key: []string{"id"}}, t.TempDir(), stream(t, schema, "c@3", "|5"))
	if err == nil || !strings.Contains(err.Error(), "missed epochs 1-4") {
		t.Fatalf("gap: got %v", err)
	}
	// Without a checkpoint there is no state to protect: any numbering is accepted.
	if _, err := run(t, Config{Key: []string{"id"}}, "", stream(t, schema, "c@3", "|5", "d@4", "|6")); err != nil {
		t.Fatal(err)
	}
}
