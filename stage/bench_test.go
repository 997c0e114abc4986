package stage

// Benchmarks of the stage loops' own cost per message: many small batches, so that reading,
// decoding and writing Arrow IPC and the loop's bookkeeping dominate, not an operator's work.
//
//	go test -run '^$' -bench . -benchmem ./stage/

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

const (
	benchBatches      = 2000 // per run
	benchRowsPerBatch = 64
	benchEpochBatches = 100 // batches per epoch
)

// cpuTime is the process's user + system CPU time (all threads: the reader and writer
// goroutines and GC included), for a figure that the machine's other load does not skew.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op and batches per CPU-second since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N*benchBatches)/cpu.Seconds(), "batches/cpu-s")
}

func benchLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchBatch returns a batch of benchRowsPerBatch int64 rows.
func benchBatch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := 0; i < benchRowsPerBatch; i++ {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(intSchema, []arrow.Array{col}, benchRowsPerBatch)
}

// benchStream encodes benchBatches batches, a barrier and a watermark every benchEpochBatches
// batches, and end=final, as an Arrow IPC stream.
func benchStream(b *testing.B) []byte {
	b.Helper()
	mem := memory.NewGoAllocator()
	rec := benchBatch(mem)
	defer rec.Release()
	var buf bytes.Buffer
	w := codec.NewWriter(&buf, intSchema, mem)
	wm := time.Unix(0, 0)
	for i := 1; i <= benchBatches; i++ {
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		if i%benchEpochBatches == 0 {
			wm = wm.Add(time.Second)
			if err := w.WriteControl(codec.WatermarkControl(wm)); err != nil {
				b.Fatal(err)
			}
			if err := w.WriteControl(codec.BarrierControl(uint64(i / benchEpochBatches))); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.WriteControl(codec.EndControl(codec.Final)); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// passOp forwards every batch; as a sink (sink=true) it drops them.
type passOp struct{ sink bool }

func (p *passOp) Open(_ context.Context, env *Env, in *arrow.Schema) (*arrow.Schema, error) {
	if p.sink {
		env.MarkSink()
		return nil, nil
	}
	return in, nil
}

func (p *passOp) Process(_ context.Context, rec arrow.RecordBatch, emit Emit) error {
	if p.sink {
		return nil
	}
	rec.Retain()
	return emit(rec)
}

func (*passOp) Watermark(context.Context, time.Time, Emit) error { return nil }
func (*passOp) Barrier(context.Context, uint64, Emit) error      { return nil }
func (*passOp) End(context.Context, codec.EndKind, Emit) error   { return nil }
func (*passOp) Close() error                                     { return nil }

func benchOperator(b *testing.B, sink bool) {
	stream := benchStream(b)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		o := Options{Tool: "pass", Stdin: bytes.NewReader(stream), Stdout: io.Discard, Stderr: io.Discard,
			Progress: ProgressOff, NoSignals: true, Log: benchLog()}
		if err := RunOperator(context.Background(), o, &passOp{sink: sink}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatches)/b.Elapsed().Seconds(), "batches/s")
	reportCPU(b, cpu0)
}

// BenchmarkRunOperator: an operator that forwards each batch (read, process, write).
func BenchmarkRunOperator(b *testing.B) { benchOperator(b, false) }

// BenchmarkRunOperatorSink: a sink without a checkpoint (read and process only).
func BenchmarkRunOperatorSink(b *testing.B) { benchOperator(b, true) }

// repeatSource returns one batch benchBatches times, with a watermark after each.
type repeatSource struct {
	rec  arrow.RecordBatch
	left int
	wm   time.Time
}

func (s *repeatSource) Open(_ context.Context, env *Env, _ Position) (*arrow.Schema, error) {
	s.rec = benchBatch(env.Mem)
	s.left = benchBatches
	return intSchema, nil
}

func (s *repeatSource) Read(context.Context, Position) (arrow.RecordBatch, error) {
	if s.left == 0 {
		return nil, io.EOF
	}
	s.left--
	s.wm = s.wm.Add(time.Millisecond)
	s.rec.Retain()
	return s.rec, nil
}

func (s *repeatSource) Watermark() (time.Time, bool) { return s.wm, true }
func (s *repeatSource) Position() Position           { return Position(`{}`) }
func (s *repeatSource) Close() error                 { s.rec.Release(); return nil }

// BenchmarkRunSource: a source of small batches with a watermark after each, written out.
func BenchmarkRunSource(b *testing.B) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		o := SourceOptions{Options: Options{Tool: "repeat", Stdout: io.Discard, Stderr: io.Discard,
			Progress: ProgressOff, NoSignals: true, Log: benchLog()}, EpochInterval: time.Hour, BatchRows: 1 << 16}
		if err := RunSource(context.Background(), o, &repeatSource{wm: time.Unix(0, 0)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatches)/b.Elapsed().Seconds(), "batches/s")
	reportCPU(b, cpu0)
}
