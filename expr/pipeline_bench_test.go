package expr

// Benchmarks of the whole transform stage path of issue #21's performance targets: Arrow IPC
// stream in (codec reader, with framing checks and buffer validation) → stage.RunOperator's
// read/write loop → expr (CompilePredicate + Program.Filter, or CompileSelect +
// Projection.Eval) → Arrow IPC stream out (codec writer), over the 10-column batches of the
// make bench transform workload (scripts/bench/prep.py transform). The figure is rows per
// CPU-second of the process (getrusage user + system: the reader and writer goroutines and
// the garbage collector included), the unit of the targets (filter ≥ 30M, select
// ≥ 5M rows per CPU-second).
//
//	go test -run '^$' -bench 'Pipeline' -benchtime 5x -count 5 ./expr/
//	STREAMKIT_TRANSFORM_BENCH_FILE=.it/bench/data-…/transform.arrows go test … (make bench's file)

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
)

// The expressions of the make bench transform workload (scripts/bench/transform.py uses the
// same text for DuckDB and Spark).
const (
	benchPredicate = "a > 500 AND c < 50"
	// benchSelect has the 5 computed columns of the issue: arithmetic, a cast, lower,
	// date_trunc and regexp_extract (substring stands in where regexp_extract is not
	// registered yet).
	benchSelect          = `id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, date_trunc('HOUR', ts) AS hr, regexp_extract(t, 'k(\\d+)', 1) AS tk`
	benchSelectSubstring = `id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, date_trunc('HOUR', ts) AS hr, substring(t, 2, 6) AS tk`
)

// pipeEpoch is the number of batches per epoch (a barrier after each) of the generated
// stream, and pipeRepeat how many times it holds benchBatches' 1M rows: a stage's buffers
// reach their steady state after the first few batches, as in a long stream.
const (
	pipeEpoch  = 8
	pipeRepeat = 4
)

// pipeStream returns the benchmark's input: benchBatches pipeRepeat times as an Arrow IPC
// stream with a
// barrier every pipeEpoch batches and end=final, or the file named by
// STREAMKIT_TRANSFORM_BENCH_FILE; and its row count.
func pipeStream(b *testing.B) ([]byte, int) {
	b.Helper()
	if f := os.Getenv("STREAMKIT_TRANSFORM_BENCH_FILE"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		rd, err := codec.NewReader(bytes.NewReader(data), memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Release()
		rows := 0
		for {
			m, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if m.Batch != nil {
				rows += int(m.Batch.NumRows())
				m.Batch.Release()
			}
		}
		return data, rows
	}
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, benchSchema, memory.DefaultAllocator)
	rows, n := 0, 0
	batches := benchBatches(b)
	for range pipeRepeat {
		for _, rec := range batches {
			rows += int(rec.NumRows())
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			if n++; n%pipeEpoch == 0 {
				if err := w.WriteControl(codec.BarrierControl(uint64(n / pipeEpoch))); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, rec := range batches {
		rec.Release()
	}
	if err := w.WriteControl(codec.EndControl(codec.Final)); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), rows
}

// transformOp is the stage operator of the benchmark: fn maps each data batch to its output
// (nil: the batch passes through unchanged, the IPC floor); the batch's own metadata (its
// source partition) is carried over.
type transformOp struct {
	open func(in *arrow.Schema) (*arrow.Schema, error)
	fn   func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error)
	out  int64
}

func (t *transformOp) Open(_ context.Context, _ *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	if t.open == nil {
		return in, nil
	}
	return t.open(in)
}

func (t *transformOp) Process(ctx context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	if t.fn == nil {
		rec.Retain()
		t.out += rec.NumRows()
		return emit(rec)
	}
	out, err := t.fn(ctx, rec)
	if err != nil {
		return err
	}
	t.out += out.NumRows()
	return emit(codec.CarryMetadata(out, rec))
}

func (*transformOp) Watermark(context.Context, time.Time, stage.Emit) error { return nil }
func (*transformOp) Barrier(context.Context, uint64, stage.Emit) error      { return nil }
func (*transformOp) End(context.Context, codec.EndKind, stage.Emit) error   { return nil }
func (*transformOp) Close() error                                           { return nil }

// runPipeline runs the stage b.N times over the stream and reports ns/row, rows per
// CPU-second and the share of rows kept. As in a pipeline, stdin and stdout are file
// descriptors: the stream in a temporary file (read from the page cache), /dev/null.
// recycle is stage.Options.RecycleInput, which the select and filter tools set.
func runPipeline(b *testing.B, recycle bool, newOp func() *transformOp) {
	stream, rows := pipeStream(b)
	in := filepath.Join(b.TempDir(), "in.arrows")
	if err := os.WriteFile(in, stream, 0o644); err != nil {
		b.Fatal(err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var kept int64
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(in)
		if err != nil {
			b.Fatal(err)
		}
		op := newOp()
		o := stage.Options{Tool: "bench", Stdin: f, Stdout: devnull, Stderr: io.Discard,
			Progress: stage.ProgressOff, NoSignals: true, Log: log, Shard: &stage.ShardEnv{}, RecycleInput: recycle}
		if err := stage.RunOperator(context.Background(), o, op); err != nil {
			b.Fatal(err)
		}
		f.Close()
		kept = op.out
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	total := float64(b.N) * float64(rows)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/total, "cpu-ns/row")
	b.ReportMetric(total/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(kept)/float64(rows), "kept")
}

// BenchmarkPipelinePassThrough is the IPC floor: read, validate and write every batch
// through the stage loop with no work in between; with the input bodies recycled (as select
// and filter run) and freshly allocated (as the other tools).
func BenchmarkPipelinePassThrough(b *testing.B) {
	for _, recycle := range []bool{true, false} {
		b.Run(map[bool]string{true: "recycled", false: "allocated"}[recycle], func(b *testing.B) {
			runPipeline(b, recycle, func() *transformOp { return &transformOp{} })
		})
	}
}

// BenchmarkPipelineFilter is `streamkit filter 'a > 500 AND c < 50'` (the output buffers
// recycled, as tools/filter does).
func BenchmarkPipelineFilter(b *testing.B) {
	runPipeline(b, true, func() *transformOp {
		var p *Program
		bufs := codec.NewRecycler(memory.DefaultAllocator)
		return &transformOp{
			open: func(in *arrow.Schema) (*arrow.Schema, error) {
				var err error
				p, err = CompilePredicate(benchPredicate, in, Options{})
				return in, err
			},
			fn: func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
				mask, err := p.Eval(ctx, rec, nil)
				if err != nil {
					return nil, err
				}
				defer mask.Release()
				return FilterBatchInto(ctx, rec, mask, bufs)
			},
		}
	})
}

// BenchmarkPipelineSelect is `streamkit select` with the 5 computed columns; the sub-benchmark
// says whether regexp_extract or its substring stand-in ran.
func BenchmarkPipelineSelect(b *testing.B) {
	src, name := benchSelect, "regexp_extract"
	if _, err := CompileSelect(src, benchSchema, Options{}); err != nil {
		b.Logf("regexp_extract is not available (%v): substring instead", err)
		src, name = benchSelectSubstring, "substring"
	}
	b.Run(name, func(b *testing.B) {
		runPipeline(b, true, func() *transformOp {
			var p *Projection
			return &transformOp{
				open: func(in *arrow.Schema) (*arrow.Schema, error) {
					var err error
					p, err = CompileSelect(src, in, Options{})
					if err != nil {
						return nil, err
					}
					return p.Schema(), nil
				},
				fn: func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
					return p.Eval(ctx, rec, nil)
				},
			}
		})
	})
}
