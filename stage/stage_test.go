package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/streamkit/streamkit/internal/arrowtest"
	"github.com/streamkit/streamkit/state"
)

var intSchema = arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)

// countSource emits the integers [0, total) in batches of 10; its position is the next one.
type countSource struct {
	total, next int64
	start       int64 // where a fresh run starts (like --start latest: differs between runs)
	mem         memory.Allocator
	onRead      func(n int64) // called before each batch
	tick        func()        // advances the test clock by one second per batch
	idleAt      int64         // at this position the source is idle for idleReads reads
	idleReads   int           // (each returns no batch and advances the clock one second)
}

type countPos struct {
	Next int64 `json:"next"`
}

func (s *countSource) Open(_ context.Context, env *Env, committed Position) (*arrow.Schema, error) {
	s.mem = env.Mem
	if committed != nil {
		var p countPos
		if err := json.Unmarshal(committed, &p); err != nil {
			return nil, err
		}
		s.next = p.Next
	} else {
		s.next = s.start
	}
	return intSchema, nil
}

func (s *countSource) Read(_ context.Context, limit Position) (arrow.RecordBatch, error) {
	end := s.total
	if limit != nil {
		var p countPos
		json.Unmarshal(limit, &p)
		end = p.Next
	}
	if s.next >= end {
		return nil, io.EOF
	}
	if limit == nil && s.next == s.idleAt && s.idleReads > 0 {
		s.idleReads--
		if s.tick != nil {
			s.tick()
		}
		return nil, nil
	}
	if s.onRead != nil {
		s.onRead(s.next)
	}
	if s.tick != nil {
		s.tick()
	}
	n := min(10, end-s.next)
	b := array.NewInt64Builder(s.mem)
	defer b.Release()
	for i := int64(0); i < n; i++ {
		b.Append(s.next + i)
	}
	s.next += n
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(intSchema, []arrow.Array{col}, n), nil
}

func (s *countSource) Position() Position { b, _ := json.Marshal(countPos{s.next}); return b }
func (s *countSource) Close() error       { return nil }

// recorder is a sink that records what it sees as text lines.
type recorder struct {
	mu    sync.Mutex
	lines []string
	fail  uint64 // Barrier(fail) returns an error (a crash before commit)
}

func (r *recorder) add(s string) { r.mu.Lock(); r.lines = append(r.lines, s); r.mu.Unlock() }
func (r *recorder) Open(_ context.Context, env *Env, in *arrow.Schema) (*arrow.Schema, error) {
	env.MarkSink()
	r.add(fmt.Sprintf("open checkpoints=%d committed=%d", len(codec.Info(in).Checkpoints), env.Committed))
	return nil, nil
}
func (r *recorder) Process(_ context.Context, rec arrow.RecordBatch, _ Emit) error {
	c := rec.Column(0).(*array.Int64)
	r.add(fmt.Sprintf("rows %d-%d", c.Value(0), c.Value(c.Len()-1)))
	return nil
}
func (r *recorder) Watermark(context.Context, time.Time, Emit) error { return nil }
func (r *recorder) Barrier(_ context.Context, n uint64, _ Emit) error {
	if n == r.fail {
		return errors.New("sink crashed")
	}
	r.add(fmt.Sprintf("barrier %d", n))
	return nil
}
func (r *recorder) End(_ context.Context, k codec.EndKind, _ Emit) error {
	r.add("end " + k.String())
	return nil
}
func (r *recorder) Close() error { return nil }

// manualClock is advanced by the source: one second per batch read.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) tick()          { c.mu.Lock(); c.t = c.t.Add(time.Second); c.mu.Unlock() }

// pipeline runs src | sink in-process over an OS pipe and returns both errors.
func pipeline(t *testing.T, root string, src *countSource, sink Operator, interrupt chan struct{}) (error, error) {
	t.Helper()
	clk := &manualClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	src.tick = clk.tick
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	mem := withChecked(t)
	so := SourceOptions{Options: Options{Tool: "count", Checkpoint: state.Join(root, "count"), Stdout: pw, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Now: clk.now, Interrupt: interrupt, Mem: mem}, EpochInterval: 2 * time.Second, BatchRows: 10}
	oo := Options{Tool: "rec", Checkpoint: state.Join(root, "rec"), Stdin: pr, Stdout: io.Discard, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Mem: mem}
	var serr error
	done := make(chan struct{})
	go func() {
		serr = RunSource(context.Background(), so, src)
		pw.Close()
		close(done)
	}()
	oerr := RunOperator(context.Background(), oo, sink)
	pr.Close()
	<-done
	return serr, oerr
}

// withChecked is a checked allocator that must hold nothing when the test ends. A stage frees
// its input reader asynchronously once the reader ends (stopReader), which on a loaded machine
// can be after the test body: it waits up to 10 s for the size to reach 0 before asserting.
func withChecked(t *testing.T) memory.Allocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); mem.CurrentAlloc() != 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		mem.AssertSize(t, 0)
	})
	return mem
}

func TestSourceToSinkCommitsEveryEpoch(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	serr, oerr := pipeline(t, root, &countSource{total: 55}, rec, nil)
	if serr != nil || oerr != nil {
		t.Fatalf("source %v, sink %v", serr, oerr)
	}
	want := []string{"open checkpoints=1 committed=0", "rows 0-9", "rows 10-19", "barrier 1", "rows 20-29", "rows 30-39", "barrier 2",
		"rows 40-49", "rows 50-54", "barrier 3", "end pause"}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", rec.lines, want)
	}
	for _, d := range []string{"count", "rec"} {
		c, err := state.Committed(filepath.Join(root, d))
		if err != nil || c != 3 {
			t.Fatalf("%s committed %d, %v; want 3", d, c, err)
		}
	}
	// A second run has nothing new: one empty epoch records progress, nothing is re-read.
	rec2 := &recorder{}
	if serr, oerr := pipeline(t, root, &countSource{total: 55}, rec2, nil); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	want2 := []string{"open checkpoints=1 committed=3", "barrier 4", "end pause"}
	if fmt.Sprint(rec2.lines) != fmt.Sprint(want2) {
		t.Fatalf("second run: got %q, want %q", rec2.lines, want2)
	}
}

func TestReplayAfterSinkCrash(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{fail: 2}
	_, oerr := pipeline(t, root, &countSource{total: 55}, rec, nil)
	if oerr == nil || !strings.Contains(oerr.Error(), "sink crashed") {
		t.Fatalf("sink should fail at epoch 2, got %v", oerr)
	}
	if c, _ := state.Committed(filepath.Join(root, "count")); c != 1 {
		t.Fatalf("committed %d, want 1", c)
	}
	// The source had written the WAL for epoch 2 (and maybe 3) before the sink failed; the
	// restart must replay epoch 2 with exactly the same rows, then continue.
	wal, _ := state.ReadOffsets(filepath.Join(root, "count"), 2)
	if string(wal) != `{"next":40}` {
		t.Fatalf("WAL epoch 2 = %s", wal)
	}
	rec2 := &recorder{}
	if serr, oerr := pipeline(t, root, &countSource{total: 70}, rec2, nil); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	if rec2.lines[1] != "rows 20-29" || rec2.lines[2] != "rows 30-39" || rec2.lines[3] != "barrier 2" {
		t.Fatalf("replay of epoch 2 differs: %q", rec2.lines)
	}
	if last := rec2.lines[len(rec2.lines)-2]; last == "" {
		t.Fatal("no final barrier")
	}
	all := fmt.Sprint(rec2.lines)
	for _, want := range []string{"rows 65-69", "end pause"} {
		if !contains(rec2.lines, want) {
			t.Fatalf("missing %q in %s", want, all)
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestInterruptFinishesEpoch(t *testing.T) {
	root := t.TempDir()
	intr := make(chan struct{}, 1)
	src := &countSource{total: 1 << 40}
	src.onRead = func(n int64) {
		if n == 50 {
			intr <- struct{}{}
			time.Sleep(10 * time.Millisecond) // let the signal goroutine see it before the next Read
		}
	}
	rec := &recorder{}
	serr, oerr := pipeline(t, root, src, rec, intr)
	if !errors.Is(serr, ErrInterrupted) {
		t.Fatalf("source: got %v, want ErrInterrupted", serr)
	}
	if !errors.Is(oerr, ErrInterrupted) { // the end batch says "interrupt": exit 130 downstream too
		t.Fatalf("sink: got %v, want ErrInterrupted", oerr)
	}
	if rec.lines[len(rec.lines)-1] != "end pause" || rec.lines[len(rec.lines)-2] == "" {
		t.Fatalf("got %q", rec.lines)
	}
	c, _ := state.Committed(filepath.Join(root, "count"))
	wal, _ := state.ReadOffsets(filepath.Join(root, "count"), c)
	if c == 0 || string(wal) != string(src.Position()) {
		t.Fatalf("committed %d with WAL %s, source at %s: the last epoch was not finished", c, wal, src.Position())
	}
}

func TestRestartWithOtherOptionsRefused(t *testing.T) {
	root := t.TempDir()
	o := Options{Tool: "rec", Checkpoint: root, StateOptions: map[string]string{"key": "a"}, Stdin: eofReader{}, Stderr: io.Discard, NoSignals: true}
	RunOperator(context.Background(), o, &recorder{})
	o.StateOptions = map[string]string{"key": "b"}
	err := RunOperator(context.Background(), o, &recorder{})
	var ie *state.IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v", err)
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// A sink that crashed part-way through writing commit markers leaves upstream stages behind;
// an operator then restores the upstream's (smaller) committed epoch, never its own newer one.
func TestRestoreTakesMinimumOverUpstream(t *testing.T) {
	root := t.TempDir()
	up, own := filepath.Join(root, "up"), filepath.Join(root, "rec")
	for _, d := range []string{up, own} {
		dd, err := state.Open(d, "x", "x", nil)
		if err != nil {
			t.Fatal(err)
		}
		dd.Close()
	}
	for ep := uint64(1); ep <= 3; ep++ {
		state.WriteCommit(own, ep, "t")
		if ep <= 2 {
			state.WriteCommit(up, ep, "t")
		}
	}
	var buf bytes.Buffer
	s := codec.WithInfo(intSchema, codec.StreamInfo{Checkpoints: []string{up}})
	w := codec.NewWriter(&buf, s, memory.NewGoAllocator())
	w.WriteControl(codec.EndControl(codec.Pause))
	w.Close()
	rec := &recorder{}
	err := RunOperator(context.Background(), Options{Tool: "rec", Checkpoint: own, Stdin: &buf, Stderr: io.Discard, NoSignals: true}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if rec.lines[0] != "open checkpoints=1 committed=2" {
		t.Fatalf("got %q", rec.lines[0])
	}
}

// limitedSource is a countSource with at most max rows per epoch (an EpochLimiter).
type limitedSource struct {
	*countSource
	max, inEpoch int64
}

var _ EpochLimiter = (*limitedSource)(nil)

func (s *limitedSource) Read(ctx context.Context, limit Position) (arrow.RecordBatch, error) {
	if limit == nil && s.inEpoch >= s.max {
		return nil, nil
	}
	all := s.countSource.total
	if limit == nil {
		s.countSource.total = min(all, s.next+s.max-s.inEpoch)
	}
	rec, err := s.countSource.Read(ctx, limit)
	s.countSource.total = all
	if rec != nil && limit == nil {
		s.inEpoch += rec.NumRows()
	}
	if err == io.EOF && limit == nil && s.next < all {
		return nil, nil
	}
	return rec, err
}
func (s *limitedSource) EpochFull() bool { return s.inEpoch >= s.max }
func (s *limitedSource) EpochCut()       { s.inEpoch = 0 }

// observingSource is a countSource that records the commits it is told about.
type observingSource struct {
	*countSource
	seen []uint64
}

func (s *observingSource) Committed(_ context.Context, n uint64, pos Position) error {
	s.seen = append(s.seen, n)
	return nil
}
func (s *observingSource) CommitWait() time.Duration { return 5 * time.Second }

func TestStartPositionIsFixedBeforeTheFirstCommit(t *testing.T) {
	root := t.TempDir()
	if _, oerr := pipeline(t, root, &countSource{total: 30, start: 10}, &recorder{fail: 1}, nil); oerr == nil {
		t.Fatal("sink should fail at epoch 1")
	}
	// The second run's configured start moved ("latest" is later now): epoch 1 must still
	// replay from the first run's start.
	rec := &recorder{}
	if serr, oerr := pipeline(t, root, &countSource{total: 30, start: 20}, rec, nil); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	if rec.lines[1] != "rows 10-19" {
		t.Fatalf("epoch 1 replayed from elsewhere: %q", rec.lines)
	}
}

func TestEpochLimiterCutsEpochs(t *testing.T) {
	mem := withChecked(t)
	root := t.TempDir()
	rec := &recorder{}
	src := &limitedSource{countSource: &countSource{total: 60}, max: 25}
	pr, pw, _ := os.Pipe()
	so := SourceOptions{Options: Options{Tool: "count", Checkpoint: filepath.Join(root, "count"), Stdout: pw, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Mem: mem}, EpochInterval: time.Hour, BatchRows: 10}
	oo := Options{Tool: "rec", Checkpoint: filepath.Join(root, "rec"), Stdin: pr, Stdout: io.Discard, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Mem: mem}
	var serr error
	done := make(chan struct{})
	go func() { serr = RunSource(context.Background(), so, src); pw.Close(); close(done) }()
	oerr := RunOperator(context.Background(), oo, rec)
	pr.Close()
	<-done
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	want := []string{"open checkpoints=1 committed=0", "rows 0-9", "rows 10-19", "rows 20-24", "barrier 1",
		"rows 25-34", "rows 35-44", "rows 45-49", "barrier 2", "rows 50-59", "barrier 3", "end pause"}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", rec.lines, want)
	}
}

func TestCommitObserverSeesTheLastEpoch(t *testing.T) {
	mem := withChecked(t)
	root := t.TempDir()
	src := &observingSource{countSource: &countSource{total: 55}}
	pr, pw, _ := os.Pipe()
	so := SourceOptions{Options: Options{Tool: "count", Checkpoint: filepath.Join(root, "count"), Stdout: pw, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Mem: mem}, EpochInterval: time.Hour, BatchRows: 10}
	oo := Options{Tool: "rec", Checkpoint: filepath.Join(root, "rec"), Stdin: pr, Stdout: io.Discard, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true, Mem: mem}
	var serr error
	done := make(chan struct{})
	go func() { serr = RunSource(context.Background(), so, src); pw.Close(); close(done) }()
	oerr := RunOperator(context.Background(), oo, &recorder{})
	pr.Close()
	<-done
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	if len(src.seen) == 0 || src.seen[len(src.seen)-1] != 1 {
		t.Fatalf("observed commits %v, want the last one to be epoch 1", src.seen)
	}
}

func TestProgressJSON(t *testing.T) {
	root := t.TempDir()
	pr, pw, _ := os.Pipe()
	var stderr bytes.Buffer
	so := SourceOptions{Options: Options{Tool: "count", Checkpoint: filepath.Join(root, "count"), Stdout: pw, Stderr: io.Discard,
		Progress: ProgressOff, NoSignals: true}, EpochInterval: time.Hour, BatchRows: 10}
	oo := Options{Tool: "rec", Stdin: pr, Stdout: io.Discard, Stderr: &stderr, Progress: ProgressJSON,
		ProgressInterval: time.Millisecond, NoSignals: true}
	go func() { RunSource(context.Background(), so, &countSource{total: 95}); pw.Close() }()
	if err := RunOperator(context.Background(), oo, &recorder{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var last Snapshot
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("progress line %q is not JSON: %v", l, err)
		}
	}
	if !last.Final || last.RecordsIn != 95 || last.Epoch != 1 || last.Stage != "rec" {
		t.Fatalf("final progress line: %+v", last)
	}
}

// asyncRecorder is a recorder whose epochs become durable in the background (AsyncSink):
// Barrier starts a commit that finishes a moment later; the commit of epoch failAt fails.
type asyncRecorder struct {
	recorder
	dir      string // its checkpoint directory
	failAt   uint64
	durable  chan struct{}
	inflight chan struct{} // closed when the commit in flight finished
	mu2      sync.Mutex
	done     uint64 // newest epoch committed in the background
	err      error
	reported uint64
	early    []uint64 // epochs whose marker was written before Settle returned them
}

func (a *asyncRecorder) Durable() <-chan struct{} {
	a.durable = make(chan struct{}, 1)
	return a.durable
}

func (a *asyncRecorder) Barrier(ctx context.Context, n uint64, emit Emit) error {
	if a.inflight != nil {
		<-a.inflight // one commit in flight at a time
	}
	if err := a.recorder.Barrier(ctx, n, emit); err != nil {
		return err
	}
	a.inflight = make(chan struct{})
	go func(done chan struct{}) {
		time.Sleep(5 * time.Millisecond)
		a.mu2.Lock()
		if n == a.failAt {
			a.err = fmt.Errorf("background commit of epoch %d failed", n)
		} else {
			a.done = n
		}
		a.mu2.Unlock()
		close(done)
		select {
		case a.durable <- struct{}{}:
		default:
		}
	}(a.inflight)
	return nil
}

func (a *asyncRecorder) Settle(_ context.Context, wait bool) (uint64, error) {
	if wait && a.inflight != nil {
		<-a.inflight
	}
	a.mu2.Lock()
	defer a.mu2.Unlock()
	if a.err != nil {
		return 0, a.err
	}
	if a.done <= a.reported {
		return 0, nil
	}
	if c, _ := state.Committed(a.dir); c >= a.done {
		a.early = append(a.early, a.done)
	}
	a.reported = a.done
	a.add(fmt.Sprintf("durable %d", a.done))
	return a.done, nil
}

// An AsyncSink's commit markers are written when Settle reports its epochs durable (never
// right after Barrier), every epoch is committed by the end, and a failed background commit
// fails the stage without a marker for its epoch.
func TestAsyncSinkMarkers(t *testing.T) {
	root := t.TempDir()
	a := &asyncRecorder{dir: filepath.Join(root, "rec")}
	serr, oerr := pipeline(t, root, &countSource{total: 55}, a, nil)
	if serr != nil || oerr != nil {
		t.Fatalf("source %v, sink %v", serr, oerr)
	}
	if len(a.early) > 0 {
		t.Fatalf("markers written before the epochs were durable: %v", a.early)
	}
	lines := strings.Join(a.lines, ",")
	if !strings.Contains(lines, "durable 3,end pause") {
		t.Fatalf("the last epoch was not settled before End: %q", a.lines)
	}
	for _, d := range []string{"count", "rec"} {
		if c, err := state.Committed(filepath.Join(root, d)); err != nil || c != 3 {
			t.Fatalf("%s committed %d, %v; want 3", d, c, err)
		}
	}

	root2 := t.TempDir()
	b := &asyncRecorder{dir: filepath.Join(root2, "rec"), failAt: 2}
	_, oerr = pipeline(t, root2, &countSource{total: 55}, b, nil)
	if oerr == nil || !strings.Contains(oerr.Error(), "background commit of epoch 2 failed") {
		t.Fatalf("got %v", oerr)
	}
	for _, d := range []string{"count", "rec"} {
		if c, _ := state.Committed(filepath.Join(root2, d)); c != 1 {
			t.Fatalf("%s committed %d after the failed commit of epoch 2, want 1", d, c)
		}
	}
}

// An idle source keeps cutting epochs on its interval (each committed by the sink), and many
// idle epochs leave a bounded offsets WAL and commit log (GC).
func TestIdleSourceCutsEpochs(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	src := &countSource{total: 20, idleAt: 10, idleReads: 60}
	serr, oerr := pipeline(t, root, src, rec, nil)
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	barriers := 0
	for _, l := range rec.lines {
		if strings.HasPrefix(l, "barrier ") {
			barriers++
		}
	}
	// 62 s of clock at a 2 s interval: about 31 epochs, nearly all of them idle.
	if barriers < 28 {
		t.Fatalf("%d barriers, want about 31 (an epoch every 2 s while idle): %v", barriers, rec.lines)
	}
	// The source collects what the sink committed at its next barrier (here a rerun's: this
	// in-process sink lags the fake clock's burst of epochs).
	if serr, oerr := pipeline(t, root, &countSource{total: 20}, &recorder{}, nil); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	for _, d := range []string{"count/offsets", "count/commits", "rec/commits"} {
		es, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if len(es) > Retain+2 {
			t.Errorf("%s holds %d files after %d epochs, want at most %d (GC)", d, len(es), barriers, Retain+2)
		}
	}
}

// sizeCounter counts the allocations of at least min bytes.
type sizeCounter struct {
	memory.Allocator
	min, n int
	mu     sync.Mutex
}

func (c *sizeCounter) Allocate(size int) []byte {
	if size >= c.min {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return c.Allocator.Allocate(size)
}

// With RecycleInput the input batches' bodies come from a few recycled buffers, not one fresh
// allocation each; the output is the input, and every buffer goes back to Mem at the end.
func TestRecycleInput(t *testing.T) {
	const batches, rows = 200, 4096 // 32 KiB bodies
	var recs []arrow.RecordBatch
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < batches*rows; i++ {
		b.Append(int64(i))
		if i%rows == rows-1 {
			col := b.NewArray()
			recs = append(recs, array.NewRecordBatch(intSchema, []arrow.Array{col}, rows))
			col.Release()
		}
	}
	in := arrowtest.Stream(t, recs...)
	for _, r := range recs {
		r.Release()
	}
	for _, recycle := range []bool{false, true} {
		mem := &sizeCounter{Allocator: withChecked(t), min: rows * 8}
		var out bytes.Buffer
		o := Options{Tool: "pass", Stdin: bytes.NewReader(in), Stdout: &out, Stderr: io.Discard,
			Progress: ProgressOff, NoSignals: true, Mem: mem, RecycleInput: recycle, Shard: &ShardEnv{}}
		if err := RunOperator(context.Background(), o, &passOp{}); err != nil {
			t.Fatal(err)
		}
		got := arrowtest.ReadStream(t, out.Bytes()).Column(0).(*array.Int64).Int64Values()
		if len(got) != batches*rows {
			t.Fatalf("recycle=%v: %d rows out, want %d", recycle, len(got), batches*rows)
		}
		for i, v := range got {
			if v != int64(i) {
				t.Fatalf("recycle=%v: row %d is %d", recycle, i, v)
			}
		}
		mem.mu.Lock()
		n := mem.n
		mem.mu.Unlock()
		// In flight at once: the read-ahead and write queues (queueBatches each) and a few
		// in hand; the Recycler keeps what comes back.
		if recycle && n > batches/4 {
			t.Errorf("RecycleInput: %d body allocations for %d batches", n, batches)
		}
		if !recycle && n < batches {
			t.Errorf("without RecycleInput: %d body allocations for %d batches, want one each", n, batches)
		}
	}
}
