package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

func mustSchema(t testing.TB, ddl string) *arrow.Schema {
	t.Helper()
	s, err := schema.ParseDDL(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustGen(t testing.TB, o Options) *Generator {
	t.Helper()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checked returns a checked allocator that must be empty when the test ends.
func checked(t *testing.T) memory.Allocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// rows renders each row of rec as JSON.
func rows(t testing.TB, rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		m := map[string]any{}
		for c, f := range rec.Schema().Fields() {
			m[f.Name] = rec.Column(c).GetOneForMarshal(i)
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}

// ipcBytes generates rows [0, total) in batches of batch rows and returns the IPC stream.
func ipcBytes(t testing.TB, g *Generator, mem memory.Allocator, total, batch int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, g.Schema(), mem)
	for first := 0; first < total; first += batch {
		rec, err := g.Batch(mem, int64(first), min(batch, total-first))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const richDDL = "id bigint, k int, v double, name string, tag string, ts timestamp, d date, amount decimal(10,2), ok boolean, " +
	"u struct<id:uuid_placeholder>, tags array<string>, pts array<struct<x:int, y:double>>"

var richGens = []string{"id=sequence(100, 2)", "k=zipf(1.2, 1, 1000) nulls=0.1", "v=normal(0, 1)", "name=names", "tag=choice(a:5, b:3, 'c,d':2)",
	"ts=timestamp(2024-05-01T00:00:00Z, 250/s, 3s)", "amount=uniform(1.50, 99.99)", "u.id=uuid", "tags=list(0, 4) nulls=0.2",
	"tags.element=words(1, 2)", "pts.element.x=sequence", "pts.element.y=uniform(-1, 1) nulls=0.5"}

func richSchema(t testing.TB) *arrow.Schema {
	return mustSchema(t, strings.Replace(richDDL, "uuid_placeholder", "string", 1))
}

func TestDeterministic(t *testing.T) {
	mem := checked(t)
	s := richSchema(t)
	a := ipcBytes(t, mustGen(t, Options{Schema: s, Gens: richGens, Seed: 7, Duplicates: 0.05}), mem, 3000, 1000)
	b := ipcBytes(t, mustGen(t, Options{Schema: s, Gens: richGens, Seed: 7, Duplicates: 0.05}), mem, 3000, 1000)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c := ipcBytes(t, mustGen(t, Options{Schema: s, Gens: richGens, Seed: 8, Duplicates: 0.05}), mem, 3000, 1000)
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 give the same bytes")
	}
	// Row i does not depend on the batch it is made in: random access.
	g1 := mustGen(t, Options{Schema: s, Gens: richGens, Seed: 7, Duplicates: 0.05})
	g2 := mustGen(t, Options{Schema: s, Gens: richGens, Seed: 7, Duplicates: 0.05})
	var got, want []string
	for first := 0; first < 600; first += 37 {
		rec, err := g1.Batch(mem, int64(first), min(37, 600-first))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows(t, rec)...)
		rec.Release()
	}
	rec, _ := g2.Batch(mem, 0, 600)
	want = rows(t, rec)
	rec.Release()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("batches of 37 rows differ from one batch of 600")
	}
	// A column's values do not change when another column is added.
	g3 := mustGen(t, Options{Schema: mustSchema(t, "id bigint, v double"), Gens: []string{"id=sequence(100, 2)", "v=normal(0, 1)"}, Seed: 7})
	g4 := mustGen(t, Options{Schema: mustSchema(t, "extra string, v double"), Gens: []string{"v=normal(0, 1)"}, Seed: 7})
	r3, _ := g3.Batch(mem, 0, 100)
	r4, _ := g4.Batch(mem, 0, 100)
	defer r3.Release()
	defer r4.Release()
	if !array.Equal(r3.Column(1), r4.Column(1)) {
		t.Fatal("column v changed when another column was added")
	}
}

func TestSpecsApplied(t *testing.T) {
	mem := checked(t)
	s := richSchema(t)
	g := mustGen(t, Options{Schema: s, Gens: richGens, Seed: 1})
	rec, err := g.Batch(mem, 0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	id := rec.Column(0).(*array.Int64)
	for i := 0; i < 5; i++ {
		if id.Value(i) != int64(100+2*i) {
			t.Fatalf("id[%d] = %d, want %d", i, id.Value(i), 100+2*i)
		}
	}
	ts := rec.Column(5).(*array.Timestamp)
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := 0; i < ts.Len(); i++ {
		nominal := t0 + int64(i)*4000 // 250/s = 4 ms apart
		if v := int64(ts.Value(i)); v > nominal || v < nominal-3_000_000 {
			t.Fatalf("ts[%d] = %d, want within 3 s before %d", i, v, nominal)
		}
	}
	amount := rec.Column(7).(*array.Decimal128)
	for i := 0; i < amount.Len(); i++ {
		if v := amount.Value(i).LowBits(); v < 150 || v > 9999 {
			t.Fatalf("amount[%d] = %d (unscaled), want 150…9999", i, v)
		}
	}
	tags := rec.Column(10).(*array.List)
	nullTags := 0
	for i := 0; i < tags.Len(); i++ {
		if tags.IsNull(i) {
			nullTags++
			continue
		}
		start, end := tags.ValueOffsets(i)
		if n := end - start; n < 0 || n > 4 {
			t.Fatalf("tags[%d] has %d elements, want 0…4", i, n)
		}
	}
	if nullTags < 300 || nullTags > 500 {
		t.Fatalf("%d null tags in 2000, want about 400", nullTags)
	}
	// Sequence inside a list counts the element's position.
	pts := rec.Column(11).(*array.List)
	xs := pts.ListValues().(*array.Struct).Field(0).(*array.Int32)
	for i := 0; i < pts.Len(); i++ {
		start, end := pts.ValueOffsets(i)
		for j := start; j < end; j++ {
			if xs.Value(int(j)) != int32(j-start) {
				t.Fatalf("pts[%d][%d].x = %d", i, j-start, xs.Value(int(j)))
			}
		}
	}
	u := rec.Column(9).(*array.Struct).Field(0).(*array.String)
	if v := u.Value(0); len(v) != 36 || v[14] != '4' || !strings.ContainsRune("89ab", rune(v[19])) {
		t.Fatalf("uuid %q is not a version-4 UUID", v)
	}
	tag := rec.Column(4).(*array.String)
	counts := map[string]int{}
	for i := 0; i < tag.Len(); i++ {
		counts[tag.Value(i)]++
	}
	if len(counts) != 3 || counts["a"] < 900 || counts["a"] > 1100 || counts["c,d"] < 320 || counts["c,d"] > 480 {
		t.Fatalf("choice(a:5, b:3, 'c,d':2) over 2000 rows: %v", counts)
	}
}

// A struct column and its fields: dot paths, struct-level nulls, NOT NULL refused.
func TestNestedStruct(t *testing.T) {
	mem := checked(t)
	s := mustSchema(t, "user struct<id:bigint, name:string, address:struct<city:string, zip:int>>, n int")
	g := mustGen(t, Options{Schema: s, Seed: 3, Gens: []string{"user=nulls=0.1", "user.id=sequence(1)",
		"user.address.city=choice(Oslo, Lima)", "user.address.zip=uniform(1000, 9999)"}})
	rec, err := g.Batch(mem, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	user := rec.Column(0).(*array.Struct)
	if n := user.NullN(); n < 60 || n > 140 {
		t.Fatalf("%d null users in 1000, want about 100", n)
	}
	if v := user.Field(0).(*array.Int64).Value(5); v != 6 {
		t.Fatalf("user.id[5] = %d, want 6", v)
	}
	addr := user.Field(2).(*array.Struct)
	for i := 0; i < 1000; i++ {
		c := addr.Field(0).(*array.String).Value(i)
		z := addr.Field(1).(*array.Int32).Value(i)
		if (c != "Oslo" && c != "Lima") || z < 1000 || z > 9999 {
			t.Fatalf("row %d: city %q zip %d", i, c, z)
		}
	}
	_, err = New(Options{Schema: mustSchema(t, "user struct<id:bigint NOT NULL>"), Gens: []string{"user.id=nulls=0.5"}})
	if err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("nulls on a NOT NULL field: got %v", err)
	}
}

func TestDuplicates(t *testing.T) {
	mem := checked(t)
	const n = 100_000
	s := mustSchema(t, "id bigint, v double, name string, ts timestamp")
	g := mustGen(t, Options{Schema: s, Seed: 11, Duplicates: 0.1, DuplicatesWithin: 500,
		Gens: []string{"id=sequence", "ts=timestamp(2024-01-01T00:00:00Z, 1000/s, 1s)"}})
	rec, err := g.Batch(mem, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	all := rows(t, rec)
	id := rec.Column(0).(*array.Int64)
	dups := 0
	for i := 0; i < n; i++ {
		src := id.Value(i)
		if src == int64(i) {
			continue
		}
		dups++
		if src > int64(i) || int64(i)-src > 500*20 {
			t.Fatalf("row %d copies row %d: not an earlier row nearby", i, src)
		}
		if all[i] != all[src] {
			t.Fatalf("row %d = %s is not an exact copy of row %d = %s", i, all[i], src, all[src])
		}
		if g.SourceRow(int64(i)) != src {
			t.Fatalf("SourceRow(%d) = %d, want %d", i, g.SourceRow(int64(i)), src)
		}
	}
	if f := float64(dups) / n; math.Abs(f-0.1) > 0.005 {
		t.Fatalf("duplicate fraction %.4f, want 0.1 ± 0.005", f)
	}
}

func TestNulls(t *testing.T) {
	mem := checked(t)
	const n = 100_000
	s := mustSchema(t, "a int, b string, c double, d boolean")
	g := mustGen(t, Options{Schema: s, Seed: 5, Gens: []string{"a=nulls=0.25", "b=names nulls=0.5", "c=constant(1.5) nulls=0.01"}})
	rec, err := g.Batch(mem, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for i, want := range []float64{0.25, 0.5, 0.01, 0} {
		got := float64(rec.Column(i).NullN()) / n
		if math.Abs(got-want) > 0.006 {
			t.Errorf("column %s: null fraction %.4f, want %.2f", s.Field(i).Name, got, want)
		}
	}
	b := rec.Column(1).(*array.String)
	for i := 0; i < 100; i++ {
		if b.IsValid(i) && !strings.Contains(b.Value(i), " ") {
			t.Fatalf("b[%d] = %q, want a name", i, b.Value(i))
		}
		if b.IsNull(i) && b.Value(i) != "" {
			t.Fatalf("null b[%d] holds %q", i, b.Value(i))
		}
	}
}

func meanStd(xs []float64) (float64, float64) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	for _, x := range xs {
		sq += (x - m) * (x - m)
	}
	return m, math.Sqrt(sq / float64(len(xs)))
}

func TestDistributions(t *testing.T) {
	mem := checked(t)
	const n = 200_000
	s := mustSchema(t, "nf double, ni int, zs bigint, zl bigint, u int, uf double")
	g := mustGen(t, Options{Schema: s, Seed: 99, Gens: []string{"nf=normal(100, 15)", "ni=normal(-50, 4)",
		"zs=zipf(1.5, 1, 1000)", "zl=zipf(1.5, 1, 1000000)", "u=uniform(-3, 3)", "uf=uniform(10, 20)"}})
	rec, err := g.Batch(mem, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	nf := rec.Column(0).(*array.Float64).Float64Values()
	if m, sd := meanStd(nf); math.Abs(m-100) > 0.2 || math.Abs(sd-15) > 0.2 {
		t.Errorf("normal(100, 15): mean %.3f stddev %.3f", m, sd)
	}
	var within1 int
	for _, x := range nf {
		if math.Abs(x-100) <= 15 {
			within1++
		}
	}
	if f := float64(within1) / n; math.Abs(f-0.6827) > 0.005 {
		t.Errorf("normal: %.4f within one stddev, want 0.6827", f)
	}
	ni := rec.Column(1).(*array.Int32).Int32Values()
	fi := make([]float64, n)
	for i, v := range ni {
		fi[i] = float64(v)
	}
	if m, sd := meanStd(fi); math.Abs(m+50) > 0.05 || math.Abs(sd-4.01) > 0.1 {
		t.Errorf("normal(-50, 4) on int: mean %.3f stddev %.3f", m, sd)
	}
	// zipf: P(k) = (1+k)^-1.5 / H, both the alias table (imax 1000) and rejection-inversion
	// (imax 1e6) paths.
	for c, imax := range map[int]float64{2: 1000, 3: 1_000_000} {
		h := 0.0
		for k := 0.0; k <= imax; k++ {
			h += math.Pow(1+k, -1.5)
		}
		vals := rec.Column(c).(*array.Int64).Int64Values()
		count := map[int64]int{}
		for _, v := range vals {
			if v < 0 || float64(v) > imax {
				t.Fatalf("zipf value %d outside [0, %v]", v, imax)
			}
			count[v]++
		}
		for _, k := range []int64{0, 1, 2, 5} {
			want := math.Pow(1+float64(k), -1.5) / h
			got := float64(count[k]) / n
			if math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/n)+1e-4 {
				t.Errorf("zipf imax %v: P(%d) = %.4f, want %.4f", imax, k, got, want)
			}
		}
		if count[0] < 10*count[20] {
			t.Errorf("zipf imax %v is not skewed: %d zeros, %d twenties", imax, count[0], count[20])
		}
	}
	u := rec.Column(4).(*array.Int32).Int32Values()
	seen := map[int32]int{}
	for _, v := range u {
		seen[v]++
	}
	if len(seen) != 7 || seen[-3] < n/7-1500 || seen[3] < n/7-1500 {
		t.Errorf("uniform(-3, 3): %v, want 7 values about %d each", seen, n/7)
	}
	uf := rec.Column(5).(*array.Float64).Float64Values()
	m, sd := meanStd(uf)
	if math.Abs(m-15) > 0.05 || math.Abs(sd-10/math.Sqrt(12)) > 0.05 {
		t.Errorf("uniform(10, 20): mean %.3f stddev %.3f", m, sd)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		ddl  string
		gens []string
		want string
	}{
		{"x int", []string{"x=normal(1)"}, "--gen 'x=normal(1)': normal takes (mean, stddev)"},
		{"x int", []string{"y=sequence"}, "--gen 'y=sequence': no column y"},
		{"x int", []string{"x=bogus(1)"}, `--gen 'x=bogus(1)': unknown generator "bogus"`},
		{"x int", []string{"x=uniform(10, 1)"}, "max 1 is less than min 10"},
		{"x tinyint", []string{"x=uniform(0, 1000)"}, "1000 is out of range for int8"},
		{"x int", []string{"x=uniform(a, 1)"}, `--gen 'x=uniform(a, 1)': min: "a" is not an integer`},
		{"x int", []string{"x=zipf(0.5)"}, "zipf takes (s, v, imax) with s > 1"},
		{"x int", []string{"x=words(2)"}, "words applies to string columns"},
		{"x double", []string{"x=timestamp"}, "timestamp applies to"},
		{"x int", []string{"x=uniform(1,2) nulls=2"}, "nulls=2: want a fraction"},
		{"x int", []string{"x=uniform(1,2"}, "missing ')'"},
		{"x int", []string{"x uniform(1,2)"}, "want COLUMN=SPEC"},
		{"x int", []string{"x=sequence", "x=uniform(1,2)"}, "already has --gen 'x=sequence'"},
		{"s struct<a:int>", []string{"s=sequence"}, "s is a struct"},
		{"l array<int>", []string{"l=uniform(1,2)"}, "l is a list"},
		{"m map<string,int>", nil, "map columns are not supported"},
		{"x string", []string{"x=choice(a:-1)"}, "is not a number ≥ 0"},
		{"x timestamp", []string{"x=timestamp(yesterday)"}, "start:"},
		{"x timestamp", []string{"x=timestamp(now, 10/fortnight)"}, "unknown unit"},
		{"x boolean", []string{"x=choice(yes)"}, "not a boolean"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.gens, " "), func(t *testing.T) {
			_, err := New(Options{Schema: mustSchema(t, tt.ddl), Gens: tt.gens})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if code := stage.ExitCode(err); code != stage.ExitUsage {
				t.Fatalf("exit code %d, want %d", code, stage.ExitUsage)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"a=sequence", "a sequence [] 0"},
		{"a.b = uniform( 1 , 2 ) nulls=0.5", "a.b uniform [1 2] 0.5"},
		{"a=nulls=0.1", "a  [] 0.1"},
		{`a=choice('x, y':3, "it''s", z:2)`, "a choice [x, y:3 it''s z:2] 0"},
		{"a=timestamp(2024-01-01T00:00:00Z, 1000/s, 2s)", "a timestamp [2024-01-01T00:00:00Z 1000/s 2s] 0"},
	}
	for _, tt := range tests {
		sp, err := ParseSpec(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		var args []string
		for _, a := range sp.Args {
			s := a.Text
			if a.Weight != "" {
				s += ":" + a.Weight
			}
			args = append(args, s)
		}
		got := fmt.Sprintf("%s %s %v %v", sp.Path, sp.Name, args, sp.Nulls)
		if strings.ReplaceAll(got, "[]", "[]") != tt.want && got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// ---- the source under the stage loop ----

// sink records rows (JSON) and barriers; Barrier(fail) fails like a crash before commit.
type sink struct {
	mu    sync.Mutex
	lines []string
	fail  uint64
}

func (s *sink) add(l string) { s.mu.Lock(); s.lines = append(s.lines, l); s.mu.Unlock() }
func (s *sink) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	env.MarkSink()
	return nil, nil
}
func (s *sink) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	for _, r := range rows(nil, rec) {
		s.add(r)
	}
	return nil
}
func (s *sink) Watermark(_ context.Context, wm time.Time, _ stage.Emit) error {
	s.add("watermark " + wm.Format(time.RFC3339Nano))
	return nil
}
func (s *sink) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	if n == s.fail {
		return errors.New("sink crashed")
	}
	s.add(fmt.Sprintf("barrier %d", n))
	return nil
}
func (s *sink) End(_ context.Context, k codec.EndKind, _ stage.Emit) error {
	s.add("end " + k.String())
	return nil
}
func (s *sink) Close() error { return nil }

// epochs splits recorded lines into epochs: epoch n → its rows.
func (s *sink) epochs() map[int][]string {
	out := map[int][]string{}
	var cur []string
	for _, l := range s.lines {
		var n int
		if _, err := fmt.Sscanf(l, "barrier %d", &n); err == nil {
			out[n] = cur
			cur = nil
			continue
		}
		if strings.HasPrefix(l, "{") {
			cur = append(cur, l)
		}
	}
	return out
}

// pipeline runs src | sink in-process over an OS pipe (as stage's tests do).
func pipeline(t *testing.T, root string, cfg Config, so stage.SourceOptions, snk *sink) (error, error) {
	t.Helper()
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	so.Tool, so.Checkpoint, so.Stdout, so.Stderr = "generate", filepath.Join(root, "generate"), pw, io.Discard
	so.Progress, so.NoSignals, so.Log, so.Mem = stage.ProgressOff, true, quiet, withChecked(t)
	if so.EpochInterval == 0 {
		so.EpochInterval = time.Hour
	}
	oo := stage.Options{Tool: "sink", Checkpoint: filepath.Join(root, "sink"), Stdin: pr, Stdout: io.Discard, Stderr: io.Discard,
		Progress: stage.ProgressOff, NoSignals: true, Log: quiet, Mem: so.Mem}
	var serr error
	done := make(chan struct{})
	go func() {
		serr = stage.RunSource(context.Background(), so, src)
		pw.Close()
		close(done)
	}()
	oerr := stage.RunOperator(context.Background(), oo, snk)
	pr.Close()
	<-done
	return serr, oerr
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// withChecked is a checked allocator that must hold nothing when the test ends.
func withChecked(t *testing.T) memory.Allocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// A sink that fails at epoch 3; the restart replays epoch 3 (and any later epoch in the WAL)
// with exactly the rows the first run sent, and the whole output equals an uninterrupted run.
func TestReplayAfterCrashIsExact(t *testing.T) {
	cfg := Config{Options: Options{Schema: richSchema(t), Gens: richGens, Seed: 42, Duplicates: 0.1},
		Rows: 1000, MaxRecordsPerEpoch: 150}
	so := stage.SourceOptions{BatchRows: 64}

	clean := &sink{}
	if serr, oerr := pipeline(t, t.TempDir(), cfg, so, clean); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	want := clean.epochs()
	if len(want) != 7 || len(want[1]) != 150 || len(want[7]) != 100 {
		t.Fatalf("uninterrupted run: %d epochs (%d, %d rows)", len(want), len(want[1]), len(want[7]))
	}

	root := t.TempDir()
	crashed := &sink{fail: 3}
	if _, oerr := pipeline(t, root, cfg, so, crashed); oerr == nil || !strings.Contains(oerr.Error(), "sink crashed") {
		t.Fatalf("sink should fail at epoch 3, got %v", oerr)
	}
	if c, _ := state.Committed(filepath.Join(root, "generate")); c != 2 {
		t.Fatalf("committed %d, want 2", c)
	}
	wal, err := state.ReadOffsets(filepath.Join(root, "generate"), 3)
	if err != nil || string(wal) != `{"next":450}` {
		t.Fatalf("WAL of epoch 3: %s, %v", wal, err)
	}
	seen3 := crashed.lines[len(crashed.lines)-150:] // what the crashed sink received of epoch 3
	restarted := &sink{}
	if serr, oerr := pipeline(t, root, cfg, so, restarted); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	got := restarted.epochs()
	if fmt.Sprint(got[3]) != fmt.Sprint(seen3) {
		t.Fatal("the replayed epoch 3 differs from the epoch the crashed run sent")
	}
	for n := 3; n <= 7; n++ {
		if fmt.Sprint(got[n]) != fmt.Sprint(want[n]) {
			t.Fatalf("epoch %d after restart differs from the uninterrupted run", n)
		}
	}
	if _, ok := got[2]; ok {
		t.Fatal("the committed epoch 2 was sent again")
	}
}

// fakeClock is an injected clock; its sleep advances it.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.slept += d
	c.mu.Unlock()
	return nil
}

// --rate releases rows as the injected clock advances, never ahead of time, in batches cut by
// --linger; timestamp(now) starts at the run's start, kept in the WAL position.
func TestRateWithInjectedClock(t *testing.T) {
	mem := checked(t)
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	start := clk.t
	src, err := NewSource(Config{Options: Options{Schema: mustSchema(t, "id bigint, ts timestamp"), Gens: []string{"id=sequence"}, Rate: 200},
		Sleep: clk.sleep, EventTime: "ts", Watermarks: true})
	if err != nil {
		t.Fatal(err)
	}
	env := &stage.Env{Mem: mem, Now: clk.now, BatchRows: 1000, Linger: 100 * time.Millisecond}
	if _, err := src.Open(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for clk.now().Sub(start) < 10*time.Second {
		rec, err := src.Read(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			continue
		}
		elapsed := clk.now().Sub(start).Seconds()
		total += rec.NumRows()
		if due := int64(elapsed * 200); total > due {
			t.Fatalf("at %.3fs %d rows were sent, only %d due", elapsed, total, due)
		}
		if rec.NumRows() > 25 { // 100 ms linger at 200/s: about 20 rows per batch
			t.Fatalf("a batch of %d rows: linger not honoured", rec.NumRows())
		}
		ts := rec.Column(1).(*array.Timestamp)
		id := rec.Column(0).(*array.Int64)
		for i := 0; i < ts.Len(); i++ {
			want := start.Add(time.Duration(id.Value(i)) * 5 * time.Millisecond)
			if got := ts.Value(i).ToTime(arrow.Microsecond); !got.Equal(want) {
				t.Fatalf("ts of row %d = %v, want %v (now + i/rate)", id.Value(i), got, want)
			}
		}
		rec.Release()
	}
	if total < 1950 || total > 2000 {
		t.Fatalf("%d rows in 10 s at 200/s", total)
	}
	if wm, ok := src.Watermark(); !ok || wm.Before(start.Add(9*time.Second)) {
		t.Fatalf("watermark %v, %v", wm, ok)
	}
	var p Position
	json.Unmarshal(src.Position(), &p)
	if p.Next != total || p.NowUs == nil || *p.NowUs != start.UnixMicro() {
		t.Fatalf("position %s, want next %d and now_us %d", src.Position(), total, start.UnixMicro())
	}
	// A restart an hour later keeps the first run's "now" (same event times on replay) and
	// paces from its own start.
	clk.t = clk.t.Add(time.Hour)
	src2, _ := NewSource(Config{Options: Options{Schema: mustSchema(t, "id bigint, ts timestamp"), Gens: []string{"id=sequence"}, Rate: 200}, Sleep: clk.sleep})
	src2.Open(context.Background(), env, src.Position())
	clk.t = clk.t.Add(time.Second)
	rec, _ := src2.Read(context.Background(), nil)
	if rec == nil || rec.Column(0).(*array.Int64).Value(0) != total {
		t.Fatalf("restart did not continue at row %d", total)
	}
	if got := rec.Column(1).(*array.Timestamp).Value(0).ToTime(arrow.Microsecond); !got.Equal(start.Add(time.Duration(total) * 5 * time.Millisecond)) {
		t.Fatalf("restart: ts %v", got)
	}
	if rec.NumRows() != 200 {
		t.Fatalf("restart: %d rows due after 1 s, want 200", rec.NumRows())
	}
	rec.Release()
}

func TestNexmarkBids(t *testing.T) {
	mem := checked(t)
	p := Presets["nexmark-bids"]
	g := mustGen(t, Options{Schema: mustSchema(t, p.DDL), Gens: p.Gens})
	const n = 46 * 2000
	rec, err := g.Batch(mem, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	auction := rec.Column(0).(*array.Int64).Int64Values()
	bidder := rec.Column(1).(*array.Int64).Int64Values()
	price := rec.Column(2).(*array.Int64).Int64Values()
	channel := rec.Column(3).(*array.String)
	url := rec.Column(4).(*array.String)
	dt := rec.Column(5).(*array.Timestamp)
	extra := rec.Column(6).(*array.String)
	hotA, hotB, hotC := 0, 0, 0
	urls := map[string]string{}
	for i := 0; i < n; i++ {
		epoch := int64(i / 46)
		lastA := 3*epoch + 2
		if auction[i] == 1000+lastA/100*100 {
			hotA++
		} else if auction[i] < 1000+max(lastA-100, 0) || auction[i] > 1000+lastA+10 {
			t.Fatalf("bid %d: auction %d outside the auctions in flight", i, auction[i])
		}
		if bidder[i] == 2000+epoch/100*100+1 {
			hotB++
		}
		if price[i] < 100 || price[i] > 100_000_000 {
			t.Fatalf("price %d", price[i])
		}
		c := channel.Value(i)
		switch c {
		case "Google", "Facebook", "Baidu", "Apple":
			hotC++
		default:
			if !strings.HasPrefix(c, "channel-") {
				t.Fatalf("channel %q", c)
			}
		}
		if u, ok := urls[c]; ok && u != url.Value(i) {
			t.Fatalf("channel %s has two urls", c)
		}
		urls[c] = url.Value(i)
		if !strings.HasPrefix(url.Value(i), "https://www.nexmark.com/") {
			t.Fatalf("url %q", url.Value(i))
		}
		e := int64(i/46*50 + 4 + i%46)
		want := DefaultStart.Add(time.Duration(e/10) * time.Millisecond)
		if got := dt.Value(i).ToTime(arrow.Microsecond); !got.Equal(want) {
			t.Fatalf("bid %d: date_time %v, want %v", i, got, want)
		}
		if l := len(extra.Value(i)); l < 54 || l > 81 {
			t.Fatalf("extra of %d bytes", l)
		}
	}
	for name, got := range map[string]float64{"hot auctions": float64(hotA) / n, "hot channels": float64(hotC) / n} {
		if math.Abs(got-0.5) > 0.02 {
			t.Errorf("%s: %.3f, want about 0.5", name, got)
		}
	}
	if f := float64(hotB) / n; f < 0.74 || f > 0.79 {
		t.Errorf("hot bidders: %.3f, want about 0.75", f)
	}
	// price is log-uniform: log10(price/100) is uniform on [0, 6).
	below1e4 := 0
	for _, p := range price {
		if p < 10_000 {
			below1e4++
		}
	}
	if f := float64(below1e4) / n; math.Abs(f-1.0/3) > 0.01 {
		t.Errorf("prices below 100.00: %.3f, want 1/3", f)
	}
}

// Live (--rate) under the stage loop with an injected clock: epochs are cut by the clock, and a
// restart an hour later replays the failed epoch with the same rows and the same "now"-based
// event times, then continues.
func TestLiveReplayKeepsNow(t *testing.T) {
	root := t.TempDir()
	clk := &fakeClock{t: time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)}
	start := clk.t
	cfg := func() Config {
		return Config{Options: Options{Schema: mustSchema(t, "timestamp timestamp, value bigint"), Gens: []string{"value=sequence"}, Rate: 1000},
			Rows: 5000, Sleep: clk.sleep}
	}
	so := stage.SourceOptions{Options: stage.Options{Now: clk.now}, EpochInterval: time.Second, BatchRows: 256, Linger: 50 * time.Millisecond}
	crashed := &sink{fail: 2}
	if _, oerr := pipeline(t, root, cfg(), so, crashed); oerr == nil {
		t.Fatal("sink should fail at epoch 2")
	}
	first := crashed.epochs()
	var seen2 []string // epoch 2 as the crashed sink received it (after "barrier 1")
	for i, l := range crashed.lines {
		if l == "barrier 1" {
			seen2 = crashed.lines[i+1:]
		}
	}
	if len(first[1]) < 900 || len(first[1]) > 1100 || len(seen2) < 900 {
		t.Fatalf("epoch 1 has %d rows, epoch 2 %d: want about one second at 1000/s", len(first[1]), len(seen2))
	}
	if !strings.Contains(first[1][0], start.Format("2006-01-02T15:04:05")) {
		t.Fatalf("row 0 = %s, want its timestamp at the run's start %v", first[1][0], start)
	}
	clk.mu.Lock()
	clk.t = clk.t.Add(time.Hour)
	clk.mu.Unlock()
	again := &sink{}
	if serr, oerr := pipeline(t, root, cfg(), so, again); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	got := again.epochs()
	if fmt.Sprint(got[2]) != fmt.Sprint(seen2) {
		t.Fatalf("replayed epoch 2 differs:\n got %d rows, first %v\nwant %d rows, first %v", len(got[2]), got[2][:1], len(seen2), seen2[:1])
	}
	total := len(first[1])
	for n := 2; n <= len(got)+1; n++ {
		total += len(got[n])
	}
	last := "" // the last data row (an empty epoch may follow it, depending on where the clock cut)
	for i := len(again.lines) - 1; i >= 0 && last == ""; i-- {
		if strings.Contains(again.lines[i], `"value"`) {
			last = again.lines[i]
		}
	}
	if total != 5000 || !strings.Contains(last, `"value":4999`) || !strings.Contains(last, start.Add(4999*time.Millisecond).Format("15:04:05.999")) {
		t.Fatalf("%d rows in all, last %s", total, last)
	}
}
