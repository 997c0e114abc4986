package window

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

var t0 = time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)

// stream builds the input: items are "k@secs:v ..." row batches or "|n" barriers; it ends with
// end=final, or end=pause when the last item is "pause".
func stream(items ...string) []byte {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, schema, mem)
	end := codec.Final
	if n := len(items); n > 0 && items[n-1] == "pause" {
		items, end = items[:n-1], codec.Pause
	}
	for _, it := range items {
		if strings.HasPrefix(it, "|") {
			var n uint64
			fmt.Sscanf(it, "|%d", &n)
			w.WriteControl(codec.BarrierControl(n))
			continue
		}
		b := array.NewRecordBuilder(mem, schema)
		for _, row := range strings.Fields(it) {
			var k string
			var secs, v int
			k, rest, _ := strings.Cut(row, "@")
			fmt.Sscanf(rest, "%d:%d", &secs, &v)
			b.Field(0).(*array.StringBuilder).Append(k)
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(secs) * time.Second).UnixMicro()))
			b.Field(2).(*array.Int64Builder).Append(int64(v))
		}
		rec := b.NewRecordBatch()
		w.Write(rec)
		rec.Release()
		b.Release()
	}
	w.WriteControl(codec.EndControl(end))
	w.Close()
	return buf.Bytes()
}

// run runs the window operator over in and renders its output rows as
// "start-end k count sum emit" (seconds after t0) and barriers as "|n".
func run(t *testing.T, s Spec, ckpt string, in []byte) ([]string, error) {
	t.Helper()
	return runRendered(t, s, ckpt, in, func(idx func(string) arrow.Array, i int) string {
		return fmt.Sprintf("%s %s %s %s", idx("k").ValueStr(i), idx("count").ValueStr(i), idx("sum").ValueStr(i), idx("emit").ValueStr(i))
	})
}

// runRendered is run with the columns after the window bounds rendered by render.
func runRendered(t *testing.T, s Spec, ckpt string, in []byte, render func(idx func(string) arrow.Array, i int) string) ([]string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op, err := New(s)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = stage.RunOperator(context.Background(), stage.Options{Tool: "window", Checkpoint: ckpt, Stdin: bytes.NewReader(in),
		Stdout: &out, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff, Mem: mem}, op)
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
		rec := m.Batch
		idx := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		st, en := idx("window_start").(*array.Timestamp), idx("window_end").(*array.Timestamp)
		for i := 0; i < int(rec.NumRows()); i++ {
			sec := func(v arrow.Timestamp) int64 { return (int64(v) - t0.UnixMicro()) / 1e6 }
			got = append(got, fmt.Sprintf("%d-%d %s", sec(st.Value(i)), sec(en.Value(i)), render(idx, i)))
		}
		rec.Release()
	}
	return got, nil
}

func tumbling(extra func(*Spec)) Spec {
	s := Spec{Kind: "tumbling", Size: time.Minute, Time: "ts", Key: []string{"k"}, Agg: "count, sum(v) as sum", WatermarkDelay: 30 * time.Second}
	if extra != nil {
		extra(&s)
	}
	return s
}

// The watermark scenario: 1-minute windows, 30 s delay; events 10:00:10, 10:02:00,
// then 10:00:20 → the 10:00 window is emitted once, the late event goes to the side output.
func TestWatermarkScenarioLateOutput(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late.ndjson")
	got, err := run(t, tumbling(func(s *Spec) { s.LateOutput = late }), "", stream("a@10:1", "a@120:2", "a@20:3", "|1"))
	if err != nil {
		t.Fatal(err)
	}
	want := "[0-60 a 1 1 on_time |1 120-180 a 1 2 on_time]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	b, _ := os.ReadFile(late)
	if string(b) != `{"k":"a","ts":"2024-01-01T10:00:20Z","v":3}`+"\n" {
		t.Fatalf("late output: %q", b)
	}
}

// end=pause (read-kafka --until now used to send it without a checkpoint): a window with a
// checkpoint keeps its open windows for the next run; one without a checkpoint has no next run,
// so it fires them as at end=final instead of dropping them (#24: counts summed to 5,000 of
// 6,000).
func TestPauseWithoutCheckpointFires(t *testing.T) {
	in := stream("a@10:1 b@20:2 a@30:4", "|1", "pause")
	got, err := run(t, tumbling(nil), "", in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[|1 0-60 a 2 5 on_time 0-60 b 1 2 on_time]"; fmt.Sprint(got) != want {
		t.Fatalf("without a checkpoint: got %v, want %s", got, want)
	}
	got, err = run(t, tumbling(nil), filepath.Join(t.TempDir(), "w"), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[|1]"; fmt.Sprint(got) != want {
		t.Fatalf("with a checkpoint: got %v, want %s (the windows are kept for the next run)", got, want)
	}
}

func TestAllowedLatenessUpdates(t *testing.T) {
	got, err := run(t, tumbling(func(s *Spec) { s.Lateness = 2 * time.Minute }), "", stream("a@10:1", "a@120:2", "a@20:3", "|1"))
	if err != nil {
		t.Fatal(err)
	}
	want := "[0-60 a 1 1 on_time 0-60 a 2 4 late_update |1 120-180 a 1 2 on_time]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// Kill after epoch 3 was written but only 1-2 committed: the replay of epochs 3-4 must give
// exactly the uninterrupted output.
func TestRestartReproduces(t *testing.T) {
	restartReproduces(t, filepath.Join(t.TempDir(), "w"))
}

// TestRestartReproducesOnBucket is TestRestartReproduces with the checkpoint on an s3://
// prefix of the real S3 test server.
func TestRestartReproducesOnBucket(t *testing.T) {
	s3test.Server(t)
	restartReproduces(t, "s3://"+s3test.Bucket(t)+"/ckpt/w")
}

func restartReproduces(t *testing.T, dir string) {
	items := []string{"a@1:1 b@2:1", "|1", "a@50:2 b@70:5", "|2", "a@130:1 c@135:7", "|3", "b@200:1 a@260:4", "|4"}
	restartReproducesWith(t, dir, tumbling(nil), items, run)
}

// TestRestartReproducesSparkAggregates is TestRestartReproduces with every Spark aggregate,
// over sliding windows whose state spans the crash: the restored state (value lists, quantile
// summaries, HyperLogLog registers, collected values, max_by/min_by) must give exactly the
// uninterrupted output.
func TestRestartReproducesSparkAggregates(t *testing.T) {
	aggs := []string{"count", "sum(v) as sum", "median(v) as med", "percentile(v, array(0.2, 0.8)) as p", "percentile_approx(v, array(0.5, 0.9), 3) as pa",
		"stddev(v) as sd", "var_pop(v) as vp", "approx_count_distinct(v) as acd", "collect_list(v) as cl", "collect_set(v) as cs",
		"max_by(v, ts) as mb", "min_by(v, ts) as nb"}
	s := tumbling(func(s *Spec) {
		s.Kind, s.Size, s.Slide, s.Agg = "sliding", 2*time.Minute, 30*time.Second, strings.Join(aggs, ", ")
	})
	var items []string
	for ep := 1; ep <= 8; ep++ {
		var rows []string
		for i := 0; i < 12; i++ {
			sec := ep*40 + i*3
			rows = append(rows, fmt.Sprintf("%c@%d:%d", 'a'+rune(i%3), sec, (sec*7919)%97))
		}
		items = append(items, strings.Join(rows, " "), fmt.Sprintf("|%d", ep))
	}
	names := []string{"k"}
	for _, a := range aggs {
		names = append(names, a[strings.LastIndex(a, " ")+1:])
	}
	render := func(t *testing.T, s Spec, ckpt string, in []byte) ([]string, error) {
		return runRendered(t, s, ckpt, in, func(idx func(string) arrow.Array, i int) string {
			var parts []string
			for _, n := range append(names, "emit") {
				parts = append(parts, idx(n).ValueStr(i))
			}
			return strings.Join(parts, " ")
		})
	}
	restartReproducesWith(t, filepath.Join(t.TempDir(), "w"), s, items, render)
}

// restartReproducesWith runs items (batches and barriers, at least 3 epochs) uninterrupted,
// then up to the third barrier with only epochs 1-2 committed (a kill after epoch 3 was
// written), then replays from epoch 3 on the checkpoint: the replay's output must be the
// uninterrupted output after barrier 2.
func restartReproducesWith(t *testing.T, dir string, s Spec, items []string, run func(*testing.T, Spec, string, []byte) ([]string, error)) {
	t.Helper()
	full, err := run(t, s, t.TempDir(), stream(items...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, s, dir, stream(items[:6]...)); err != nil {
		t.Fatal(err)
	}
	for ep := uint64(1); ep <= 2; ep++ {
		state.WriteCommit(dir, ep, "test")
	}
	replay, err := run(t, s, dir, stream(items[4:]...))
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for i, l := range full {
		if l == "|2" {
			cut = i + 1
		}
	}
	if fmt.Sprint(replay) != fmt.Sprint(full[cut:]) {
		t.Fatalf("replay %v\nwant   %v\n(full  %v)", replay, full[cut:], full)
	}
}

func TestRestartWithOtherSpecRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, tumbling(nil), dir, stream("a@1:1", "|1")); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, tumbling(func(s *Spec) { s.Size = 2 * time.Minute }), dir, stream("a@1:1", "|1"))
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "window:") {
		t.Fatalf("got %v", err)
	}
	_, err = run(t, tumbling(func(s *Spec) { s.Agg = "count" }), dir, stream("a@1:1", "|1"))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "agg:") {
		t.Fatalf("got %v", err)
	}
}

func TestUsage(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "tumbling", Size: time.Minute},                              // no --time
		{Kind: "tumbling", Size: time.Minute, Time: "ts", TZ: "Mars/Base"}, // bad zone
		{Kind: "tumbling", Time: "ts"},                                     // no size
		{Kind: "tumbling", Size: time.Minute, Time: "ts", Agg: "geomean(v)"},
		{Kind: "tumbling", Size: time.Minute, Time: "ts", Emit: "update"},
		{Kind: "global", Trigger: "every:x"},
		{Kind: "global", Trigger: "every:0"},
		{Kind: "global", Trigger: "sometimes"},
		{Kind: "tumbling", Size: time.Minute, Time: "ts", LateOutput: "late.txt"},
	} {
		_, err := New(s)
		var ue *stage.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: got %v, want a usage error", s, err)
		}
	}
	_, err := run(t, Spec{Kind: "tumbling", Size: time.Minute, Time: "nope"}, "", stream("a@1:1"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing time column: %v", err)
	}
}

// global --trigger every:2 fires each key's cumulative window every 2 records of that key,
// and once more at the final end.
func TestGlobalEveryN(t *testing.T) {
	got, err := run(t, Spec{Kind: "global", Key: []string{"k"}, Agg: "count, sum(v) as sum", Trigger: "every:2", Time: "ts"}, "",
		stream("a@1:1 b@2:10 a@3:2", "|1", "a@4:3 a@5:4 b@6:20", "|2"))
	if err != nil {
		t.Fatal(err)
	}
	// window_end is the largest event time + 1 µs (shown truncated to seconds)
	want := "[1-3 a 2 3 early |1 1-5 a 4 10 early 2-6 b 2 30 early |2 1-5 a 4 10 on_time 2-6 b 2 30 on_time]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got  %v\nwant %s", got, want)
	}
}

// A backlog read unevenly across source partitions: partition 0 delivers its whole hour
// before partition 1 starts. With per-partition watermarks (read-kafka's topic,partition,
// detected automatically) partition 1's rows are on time; with one watermark they are late.
func TestPerPartitionWatermarks(t *testing.T) {
	ks := arrow.NewSchema([]arrow.Field{
		{Name: "topic", Type: arrow.BinaryTypes.String},
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, ks, mem)
	batch := func(part int32, mins ...int) {
		b := array.NewRecordBuilder(mem, ks)
		defer b.Release()
		for _, m := range mins {
			b.Field(0).(*array.StringBuilder).Append("flights")
			b.Field(1).(*array.Int32Builder).Append(part)
			b.Field(2).(*array.StringBuilder).Append("a")
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(m) * time.Minute).UnixMicro()))
			b.Field(4).(*array.Int64Builder).Append(1)
		}
		rec := b.NewRecordBatch()
		w.Write(rec)
		rec.Release()
	}
	// Both partitions deliver from the start (as a Kafka backlog does), then partition 0
	// races ahead two hours while partition 1 is behind. (A partition first seen after the
	// others moved on cannot hold back what already fired: partitions count from their first
	// row.)
	batch(0, 0)
	batch(1, 5)
	batch(0, 20, 70, 130)
	batch(1, 10, 65)
	w.WriteControl(codec.BarrierControl(1))
	w.WriteControl(codec.EndControl(codec.Final))
	w.Close()
	in := buf.Bytes()
	spec := Spec{Kind: "tumbling", Size: time.Hour, Time: "ts", Key: []string{"k"}, Agg: "count, sum(v) as sum"}
	got, err := run(t, spec, "", in)
	if err != nil {
		t.Fatal(err)
	}
	// All 7 rows count: the 10:00 window holds 4 (0, 20 from p0; 5, 10 from p1).
	if fmt.Sprint(got) != "[0-3600 a 4 4 on_time |1 3600-7200 a 2 2 on_time 7200-10800 a 1 1 on_time]" {
		t.Fatalf("per-partition: got %v", got)
	}
	spec.PartitionCol = "none"
	got, err = run(t, spec, "", in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) == "[0-3600 a 4 4 on_time |1 3600-7200 a 2 2 on_time 7200-10800 a 1 1 on_time]" {
		t.Fatalf("one watermark for all partitions should have made partition 1's rows late: %v", got)
	}
}

// every:N fires at exactly the N-th row of a key, however the input is cut into batches.
func TestGlobalEveryNBatchIndependent(t *testing.T) {
	spec := Spec{Kind: "global", Key: []string{"k"}, Agg: "count, sum(v) as sum", Trigger: "every:2", Time: "ts"}
	one, err := run(t, spec, "", stream("a@1:1 a@2:2 b@3:3 a@4:4 a@5:5 b@6:6 b@7:7", "|1"))
	if err != nil {
		t.Fatal(err)
	}
	many, err := run(t, spec, "", stream("a@1:1", "a@2:2 b@3:3 a@4:4", "a@5:5 b@6:6", "b@7:7", "|1"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(one) != fmt.Sprint(many) || !strings.Contains(fmt.Sprint(one), "1-2 a 2 3 early") {
		t.Fatalf("one batch %v\nmany batches %v", one, many)
	}
}

// --late-output with a checkpoint across a restart that replays an uncommitted epoch: the
// file holds each late row of the committed epochs once, for JSON lines (which were appended
// to again) and Arrow IPC (which was created anew, losing the committed epochs' late rows).
func TestLateOutputExactlyOnceAcrossRestart(t *testing.T) {
	for _, ext := range []string{".ndjson", ".arrows"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			ckpt, late := filepath.Join(dir, "w"), filepath.Join(dir, "late"+ext)
			spec := tumbling(func(s *Spec) { s.LateOutput = late })
			// epoch 1: a@20 is late (the watermark is at 90 s); epoch 2: a@30 is late. Only
			// epoch 1 is committed.
			items := []string{"a@10:1 a@120:2 a@20:3", "|1", "a@30:4", "|2", "pause"}
			if _, err := run(t, spec, ckpt, stream(items...)); err != nil {
				t.Fatal(err)
			}
			if err := state.WriteCommit(ckpt, 1, "test"); err != nil {
				t.Fatal(err)
			}
			// the restart replays epoch 2 and reads epoch 3 (a@40 late).
			if _, err := run(t, spec, ckpt, stream("a@30:4", "|2", "a@40:5", "|3", "pause")); err != nil {
				t.Fatal(err)
			}
			if got, want := lateValues(t, late), "3 4 5"; got != want {
				t.Errorf("late rows (v) %q, want %q: each once, those of epoch 1 kept", got, want)
			}
		})
	}
}

// lateValues reads the v column of a late side output file, space-separated.
func lateValues(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if strings.HasSuffix(path, ".ndjson") {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			_, v, _ := strings.Cut(line, `"v":`)
			out = append(out, strings.TrimSuffix(v, "}"))
		}
		return strings.Join(out, " ")
	}
	r, err := codec.NewReader(bytes.NewReader(b), memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != nil {
			col := m.Batch.Column(m.Batch.Schema().FieldIndices("v")[0])
			for i := 0; i < col.Len(); i++ {
				out = append(out, col.ValueStr(i))
			}
			m.Batch.Release()
		}
	}
	return strings.Join(out, " ")
}
