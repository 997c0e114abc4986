package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// sink records what reaches it: rows as JSON objects (without _metadata unless keepMeta),
// "barrier n" and "end k" lines; it fails at Barrier(fail) (a crash before the commit).
type sink struct {
	mu       sync.Mutex
	lines    []string
	rows     []string
	schema   *arrow.Schema
	fail     uint64
	keepMeta bool
	drop     map[string]bool // columns not recorded
}

func (r *sink) add(s string) { r.mu.Lock(); r.lines = append(r.lines, s); r.mu.Unlock() }
func (r *sink) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	env.MarkSink()
	r.schema = in
	return nil, nil
}
func (r *sink) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	for i := 0; i < int(rec.NumRows()); i++ {
		var b bytes.Buffer
		b.WriteByte('{')
		first := true
		for c, f := range rec.Schema().Fields() {
			if f.Name == MetadataColumn && !r.keepMeta || r.drop[f.Name] {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			k, _ := json.Marshal(f.Name)
			v, err := json.Marshal(rec.Column(c).GetOneForMarshal(i))
			if err != nil {
				return err
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
		r.add(b.String())
		r.mu.Lock()
		r.rows = append(r.rows, b.String())
		r.mu.Unlock()
	}
	return nil
}
func (r *sink) Watermark(context.Context, time.Time, stage.Emit) error { return nil }
func (r *sink) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	if n == r.fail {
		return errors.New("sink crashed")
	}
	r.add(fmt.Sprintf("barrier %d", n))
	return nil
}
func (r *sink) End(_ context.Context, k codec.EndKind, _ stage.Emit) error {
	r.add("end " + k.String())
	return nil
}
func (r *sink) Close() error { return nil }

// fakeClock is the injected clock; Sleep advances it (tests never sleep on the wall clock).
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	onSleep func(d time.Duration) // called after the clock moved
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.advance(d)
	if c.onSleep != nil {
		c.onSleep(d)
	}
	return nil
}

// env is one test's directories and clock.
type env struct {
	t     *testing.T
	dir   string // input files
	ckpt  string // checkpoint root ("" = none)
	clock *fakeClock
	log   bytes.Buffer
	mem   *memory.CheckedAllocator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, dir: filepath.Join(root, "in"), ckpt: filepath.Join(root, "ckpt"), clock: newClock()}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { e.mem.AssertSize(t, 0) })
	return e
}

// write creates dir/name with data, modified at the fake clock's time minus age.
func (e *env) write(name, data string, age time.Duration) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.touch(name, e.clock.now().Add(-age))
	return p
}

func (e *env) touch(name string, t time.Time) {
	e.t.Helper()
	if err := os.Chtimes(filepath.Join(e.dir, name), t, t); err != nil {
		e.t.Fatal(err)
	}
}

// runOpts tune one pipeline run.
type runOpts struct {
	epochInterval time.Duration
	batchRows     int
	fail          uint64 // the sink fails at this barrier
	noCheckpoint  bool
	keepMeta      bool
	drop          []string
	tick          time.Duration // clock advance per Read (to cut epochs by time)
	beforeRead    func(n int)   // called before the n-th Read (0-based)
}

// tickingSource advances the fake clock on every Read.
type tickingSource struct {
	*Source
	clock  *fakeClock
	tick   time.Duration
	before func(n int)
	n      int
}

func (s *tickingSource) Read(ctx context.Context, limit stage.Position) (arrow.RecordBatch, error) {
	if s.before != nil {
		s.before(s.n)
	}
	s.n++
	if s.tick > 0 {
		s.clock.advance(s.tick)
	}
	return s.Source.Read(ctx, limit)
}

// run runs the source with cfg into a recording sink over an OS pipe, checkpointing in e.ckpt
// (source "files", sink "sink"), and returns the sink and both errors.
func (e *env) run(cfg Config, o runOpts) (*sink, error, error) {
	e.t.Helper()
	if cfg.Patterns == nil {
		cfg.Patterns = []string{e.dir}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = e.clock.sleep
	}
	src, err := New(cfg)
	if err != nil {
		return nil, err, nil
	}
	if o.epochInterval == 0 {
		o.epochInterval = time.Hour
	}
	if o.batchRows == 0 {
		o.batchRows = 1000
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &e.log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	so := stage.SourceOptions{Options: stage.Options{Tool: "read-files", Stdout: pw, Stderr: io.Discard, Progress: stage.ProgressOff,
		NoSignals: true, Now: e.clock.now, Log: logger, Mem: e.mem}, EpochInterval: o.epochInterval, BatchRows: o.batchRows}
	oo := stage.Options{Tool: "sink", Stdin: pr, Stdout: io.Discard, Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true, Log: logger,
		Mem: e.mem}
	if !o.noCheckpoint {
		so.Checkpoint = state.Join(e.ckpt, "files") // a local path or a bucket URL
		oo.Checkpoint = state.Join(e.ckpt, "sink")
	}
	snk := &sink{fail: o.fail, keepMeta: o.keepMeta, drop: map[string]bool{}}
	for _, d := range o.drop {
		snk.drop[d] = true
	}
	var serr error
	done := make(chan struct{})
	go func() {
		serr = stage.RunSource(context.Background(), so, &tickingSource{Source: src, clock: e.clock, tick: o.tick, before: o.beforeRead})
		pw.Close()
		close(done)
	}()
	oerr := stage.RunOperator(context.Background(), oo, snk)
	pr.Close()
	<-done
	return snk, serr, oerr
}

// mustRun runs and fails the test on any error.
func (e *env) mustRun(cfg Config, o runOpts) *sink {
	e.t.Helper()
	s, serr, oerr := e.run(cfg, o)
	if serr != nil || oerr != nil {
		e.t.Fatalf("source: %v, sink: %v\nlog:\n%s", serr, oerr, e.log.String())
	}
	return s
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// wal returns the positions of the offsets WAL of the source's checkpoint, by epoch.
func (e *env) wal() map[uint64]position {
	e.t.Helper()
	dir := state.Join(e.ckpt, "files")
	eps, err := state.Epochs(dir, state.OffsetsDir)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[uint64]position{}
	for _, n := range eps {
		b, err := state.ReadOffsets(dir, n)
		if err != nil {
			e.t.Fatal(err)
		}
		var p position
		if err := json.Unmarshal(b, &p); err != nil {
			e.t.Fatal(err)
		}
		out[n] = p
	}
	return out
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

func join(xs []string) string { return strings.Join(xs, "\n") }
