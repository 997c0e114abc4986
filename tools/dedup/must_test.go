package dedup

// The "Must be true" list of issue #6 for dedup on its own (keyby --shards and the binary-level
// crash tests are in tools/keyby; the DuckDB cross-check is in duckdb_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// item is one element of a test stream: a batch or a control.
type item struct {
	rec arrow.RecordBatch
	ctl *codec.Control
}

func barrier(n uint64) item { c := codec.BarrierControl(n); return item{ctl: &c} }

// encode writes the items as an IPC stream of schema s, ending with end=pause (the batches are
// released).
func encode(t testing.TB, s *arrow.Schema, items []item) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, s, memory.NewGoAllocator())
	for _, it := range items {
		var err error
		if it.ctl != nil {
			err = w.WriteControl(*it.ctl)
		} else {
			err = w.Write(it.rec)
			it.rec.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteControl(codec.EndControl(codec.Pause)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runStream runs dedup over an IPC stream and returns every output row as text (rowText) and
// "|n" per barrier.
func runStream(t testing.TB, cfg Config, ckpt string, in []byte) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := stage.RunOperator(context.Background(), stage.Options{Tool: "dedup", Checkpoint: ckpt, Stdin: bytes.NewReader(in),
		Stdout: &out, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff, Mem: mem}, d); err != nil {
		t.Fatal(err)
	}
	return readRows(t, &out)
}

// readRows reads an IPC stream and renders each row as "col=value ..." and each barrier as
// "|n".
func readRows(t testing.TB, r io.Reader) []string {
	t.Helper()
	rd, err := codec.NewReader(r, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var got []string
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return got
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
		got = append(got, rowTexts(m.Batch)...)
		m.Batch.Release()
	}
}

func rowTexts(rec arrow.RecordBatch) []string {
	var out []string
	for r := 0; r < int(rec.NumRows()); r++ {
		var b strings.Builder
		for c, col := range rec.Columns() {
			if c > 0 {
				b.WriteByte(' ')
			}
			v := "null"
			if col.IsValid(r) {
				if bin, ok := col.(*array.Binary); ok {
					v = fmt.Sprintf("%q", bin.Value(r))
				} else {
					v = col.ValueStr(r)
				}
			}
			fmt.Fprintf(&b, "%s=%s", rec.Schema().Field(c).Name, v)
		}
		out = append(out, b.String())
	}
	return out
}

var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// ids builds a batch of idSchema: "-" is a null id; n counts from first.
func ids(first int64, keys ...string) item {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), idSchema)
	defer b.Release()
	for i, k := range keys {
		if k == "-" {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(k)
		}
		b.Field(1).(*array.Int64Builder).Append(first + int64(i))
	}
	return item{rec: b.NewRecordBatch()}
}

// TestDuplicatesRemovedEverywhere: a duplicate is dropped whether its first occurrence is in
// the same batch, an earlier batch of the epoch, an earlier epoch, or an earlier run that
// committed (restart from the checkpoint), and the dropped rows go to --dropped-output.
func TestDuplicatesRemovedEverywhere(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "dedup")
	dropped := filepath.Join(dir, "dropped.ndjson")
	cfg := Config{Key: []string{"id"}, DroppedOutput: dropped}
	got := runStream(t, cfg, ckpt, encode(t, idSchema, []item{
		ids(1, "a", "b", "a"), // within a batch
		ids(4, "c", "b"),      // across batches
		barrier(1),
		ids(6, "c", "d", "a"), // across epochs
		barrier(2),
	}))
	if want := []string{"id=a n=1", "id=b n=2", "id=c n=4", "|1", "id=d n=7", "|2"}; !slices.Equal(got, want) {
		t.Fatalf("run 1: got %q, want %q", got, want)
	}
	for ep := uint64(1); ep <= 2; ep++ { // a sink committed both epochs
		if err := state.WriteCommit(ckpt, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	got = runStream(t, cfg, ckpt, encode(t, idSchema, []item{ids(9, "d", "e", "a", "e"), barrier(3)})) // across restarts
	if want := []string{"id=e n=10", "|3"}; !slices.Equal(got, want) {
		t.Fatalf("run 2: got %q, want %q", got, want)
	}
	want := []string{`{"id":"a","n":3}`, `{"id":"b","n":5}`, `{"id":"c","n":6}`, `{"id":"a","n":8}`,
		`{"id":"d","n":9}`, `{"id":"a","n":11}`, `{"id":"e","n":12}`}
	if got := lines(t, dropped); !slices.Equal(got, want) {
		t.Fatalf("dropped output: got %q, want %q", got, want)
	}
}

func lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

// TestKeyValuesDistinct: null, the empty string and non-UTF-8 binary values are keys of their
// own (also within multi-column keys, where (null, "") differs from ("", null)), and they
// survive a checkpoint round trip.
func TestKeyValuesDistinct(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	// Each value is "-" for null, else the bytes of the Go string (not necessarily UTF-8).
	batch := func(rows ...[2]string) item {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), s)
		defer b.Release()
		for _, r := range rows {
			for c, v := range r {
				switch {
				case v == "-":
					b.Field(c).AppendNull()
				case c == 0:
					b.Field(0).(*array.BinaryBuilder).Append([]byte(v))
				default:
					b.Field(1).(*array.StringBuilder).Append(v)
				}
			}
		}
		return item{rec: b.NewRecordBatch()}
	}
	distinct := [][2]string{{"-", "x"}, {"", "x"}, {"\xff", "x"}, {"\xfe", "x"}, {"\xff\x00", "x"}, {"\x00", "x"},
		{"-", "-"}, {"-", ""}, {"", "-"}, {"", ""}, {"\xff", "\xff"}}
	dir := filepath.Join(t.TempDir(), "dedup")
	cfg := Config{Key: []string{"b", "s"}}
	// Every row once, then every row again (in the same batch) and once more after a restart.
	got := runStream(t, cfg, dir, encode(t, s, []item{batch(distinct...), batch(distinct...), barrier(1)}))
	if len(got) != len(distinct)+1 {
		t.Fatalf("got %d rows, want %d distinct: %q", len(got)-1, len(distinct), got)
	}
	seen := map[string]bool{}
	for _, r := range got[:len(distinct)] {
		if seen[r] {
			t.Fatalf("row %s twice", r)
		}
		seen[r] = true
	}
	if err := state.WriteCommit(dir, 1, "test"); err != nil {
		t.Fatal(err)
	}
	if got := runStream(t, cfg, dir, encode(t, s, []item{batch(distinct...), barrier(2)})); len(got) != 1 {
		t.Fatalf("after a restart, every key is known; got %q", got)
	}
	// The state files hold the 11 keys as distinct _key values, non-UTF-8 bytes included.
	tbl, err := state.Reconstruct(memory.NewGoAllocator(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.Rec.NumRows() != int64(len(distinct)) {
		t.Fatalf("state holds %d keys, want %d", tbl.Rec.NumRows(), len(distinct))
	}
}

// TestNestedKey dedups by a dot path into structs; a null at any level of the path is the
// null key.
func TestNestedKey(t *testing.T) {
	user := arrow.StructOf(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	value := arrow.StructOf(arrow.Field{Name: "user", Type: user, Nullable: true})
	s := arrow.NewSchema([]arrow.Field{{Name: "value", Type: value, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rows := []string{`{"value":{"user":{"id":1}},"n":1}`, `{"value":{"user":{"id":2}},"n":2}`, `{"value":{"user":{"id":1}},"n":3}`,
		`{"value":{"user":{"id":null}},"n":4}`, `{"value":{"user":null},"n":5}`, `{"value":null,"n":6}`, `{"value":{"user":{"id":2}},"n":7}`}
	rec, _, err := array.RecordFromJSON(memory.NewGoAllocator(), s, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	got := runStream(t, Config{Key: []string{"value.user.id"}}, "", encode(t, s, []item{{rec: rec}}))
	var ns []string
	for _, r := range got {
		ns = append(ns, r[strings.LastIndex(r, "n="):])
	}
	if want := []string{"n=1", "n=2", "n=4"}; !slices.Equal(ns, want) {
		t.Fatalf("got %q (%q), want %q", ns, got, want)
	}
}

// TestTTLBoundsState: 1M unique ids over 2 hours of event time (in order, an epoch every 6
// minutes) with --ttl 10m keep at most 10 minutes' worth of keys (1M/120 per minute, ≈83,334)
// in state, as the state files show at every epoch: the manifests' entry counts, and the
// state rebuilt from the files by state.Reconstruct holds only keys first seen after the
// watermark − TTL.
func TestTTLBoundsState(t *testing.T) {
	const (
		rows   = 1_000_000
		span   = 2 * time.Hour
		ttl    = 10 * time.Minute
		epochs = 20 // 50,000 rows = 6 minutes of event time each
	)
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	step := span.Microseconds() / rows // 7.2 ms
	var items []item
	mem := memory.NewGoAllocator()
	per := rows / epochs
	for e := 0; e < epochs; e++ {
		for b0 := e * per; b0 < (e+1)*per; b0 += 10_000 {
			b := array.NewRecordBuilder(mem, s)
			for i := b0; i < b0+10_000; i++ {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.UnixMicro() + int64(i)*step))
			}
			items = append(items, item{rec: b.NewRecordBatch()})
			b.Release()
		}
		items = append(items, barrier(uint64(e+1)))
	}
	dir := filepath.Join(t.TempDir(), "dedup")
	got := runStream(t, Config{Key: []string{"id"}, EventTime: "ts", TTL: ttl}, dir, encode(t, s, items))
	if len(got) != rows+epochs {
		t.Fatalf("%d output rows, want all %d (unique ids)", len(got)-epochs, rows)
	}
	perTTL := int64(ttl.Microseconds() / step) // 83,333 keys in 10 minutes
	maxKeys := int64(0)
	for ep := uint64(1); ep <= epochs; ep++ {
		man, err := state.ReadManifest(dir, ep)
		if err != nil {
			t.Fatal(err)
		}
		maxKeys = max(maxKeys, man.Entries)
		if man.Entries > perTTL+1 {
			t.Errorf("epoch %d: %d keys in state, more than 10 minutes' worth (%d)", ep, man.Entries, perTTL)
		}
		tbl, err := state.Reconstruct(mem, dir, ep)
		if err != nil {
			t.Fatal(err)
		}
		var x extra
		if err := json.Unmarshal(man.Extra, &x); err != nil {
			t.Fatal(err)
		}
		first := tbl.Rec.Column(2).(*array.Timestamp)
		for i := 0; i < first.Len(); i++ {
			if int64(first.Value(i)) <= x.Watermark-ttl.Microseconds() {
				t.Fatalf("epoch %d: a key first seen at %v outlived the TTL (watermark %v)", ep,
					time.UnixMicro(int64(first.Value(i))).UTC(), time.UnixMicro(x.Watermark).UTC())
			}
		}
		if tbl.Rec.NumRows() != man.Entries {
			t.Fatalf("epoch %d: state files rebuild %d keys, manifest says %d", ep, tbl.Rec.NumRows(), man.Entries)
		}
		tbl.Release()
	}
	if maxKeys < perTTL*9/10 {
		t.Fatalf("at most %d keys held; expected about %d (10 minutes' worth)", maxKeys, perTTL)
	}
	t.Logf("1M unique ids over 2h, TTL 10m: at most %d keys in state (10 minutes' worth: %d)", maxKeys, perTTL)
}

// TestDroppedOutputArrowResumes: an Arrow IPC --dropped-output survives restarts: after a run
// whose last epoch was not committed, the restart cuts the file back to the committed epoch
// and the replay writes that epoch's dropped rows again, so the file (one valid stream) equals
// the one an uninterrupted run writes.
func TestDroppedOutputArrowResumes(t *testing.T) {
	items := func() []item {
		return []item{ids(1, "a", "a", "b"), barrier(1), ids(4, "b", "c", "a"), barrier(2), ids(7, "c", "d", "-", "-"), barrier(3), ids(11, "d", "a"), barrier(4)}
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.arrow")
	runStream(t, Config{Key: []string{"id"}, DroppedOutput: full}, filepath.Join(dir, "full"), encode(t, idSchema, items()))

	ckpt := filepath.Join(dir, "dedup")
	part := filepath.Join(dir, "part.arrow")
	cfg := Config{Key: []string{"id"}, DroppedOutput: part}
	runStream(t, cfg, ckpt, encode(t, idSchema, items()[:6])) // epochs 1-3 …
	for ep := uint64(1); ep <= 2; ep++ {                      // … of which the sink committed 1-2
		if err := state.WriteCommit(ckpt, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	runStream(t, cfg, ckpt, encode(t, idSchema, items()[4:])) // replay epoch 3, then epoch 4
	want, got := dropFile(t, full), dropFile(t, part)
	if len(want) != 7 || !slices.Equal(got, want) {
		t.Fatalf("resumed dropped output %q, uninterrupted %q", got, want)
	}
	// A restart after a clean end continues the same stream (its end marker is cut off).
	for ep := uint64(3); ep <= 4; ep++ {
		if err := state.WriteCommit(ckpt, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	runStream(t, cfg, ckpt, encode(t, idSchema, []item{ids(13, "a", "e"), barrier(5)}))
	if got := dropFile(t, part); !slices.Equal(got, append(want, "id=a n=13")) {
		t.Fatalf("after a further run: %q", got)
	}
	// Without a checkpoint, an existing .arrow file is refused (a stream cannot be appended to).
	d, _ := New(cfg)
	err := stage.RunOperator(context.Background(), stage.Options{Tool: "dedup", Stdin: bytes.NewReader(encode(t, idSchema, []item{ids(1, "a")})),
		Stdout: io.Discard, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff}, d)
	if err == nil || !strings.Contains(err.Error(), "cannot be appended") {
		t.Fatalf("existing .arrow without checkpoint: %v", err)
	}
	if _, err := New(Config{DroppedOutput: "x.csv"}); err == nil {
		t.Fatal("--dropped-output x.csv accepted")
	}
}

// dropFile reads a --dropped-output Arrow IPC stream: it must be one complete stream.
func dropFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readRows(t, bufio.NewReader(f))
}
