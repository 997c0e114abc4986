// Package stage is the shared runtime of every streamkit tool: it reads the Arrow IPC stream,
// drives an Operator (or a Source), writes the output stream, handles control batches
// (barriers, watermarks, end), checkpoints, signals, logging and progress (DESIGN.md §2, §3).
package stage

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/state"
)

// Emit passes one output batch downstream. The stage loop takes over the caller's reference:
// the callee releases rec once it is written, so an operator that keeps rec must Retain it first.
type Emit func(rec arrow.RecordBatch) error

// Env is what the stage loop hands to an operator or source.
type Env struct {
	// Mem allocates every Arrow buffer of the stage (Options.Mem: a checked allocator in tests).
	Mem memory.Allocator
	// Dir is the stage's checkpoint directory, nil when the stage keeps no checkpoint.
	Dir *state.Dir
	// Committed is the newest epoch committed by the sink, 0 when none; state is restored to it.
	Committed uint64
	// Now is the injected clock (time.Now outside tests).
	Now func() time.Time
	// Stats counts records for the status line; operators add to it.
	Stats *Stats
	// Log is the stage's logger (stderr).
	Log *slog.Logger
	// BatchRows and Linger bound a source's batches (--batch-rows, --linger); 0 for operators.
	BatchRows int
	Linger    time.Duration
	// Shard is the stage's place among the shards of keyby --shards (Options.Shard, resolved
	// at stage start); the zero value outside shards.
	Shard ShardEnv
	// BarrierOffsets is, while Operator.Barrier runs, the barrier's streamkit.offsets: the
	// progress of the source partitions of a consumer-group source (codec.Control.Offsets,
	// docs/protocol.md §13); "" when the barrier carries none.
	BarrierOffsets string

	sink     bool
	stateful bool
	quality  qualityCheck // --max-bad-ratio and the warning, per epoch

	lastEpoch   uint64 // the last barrier seen
	seenBarrier bool
}

// MarkStateful tells the stage loop that the operator keeps checkpointed state (dedup,
// window): with a checkpoint directory, barriers must then continue its committed epoch
// exactly (c+1, c+2, …); a gap means the stage missed epochs and is refused. Call it from Open.
func (e *Env) MarkStateful() { e.stateful = true }

// MarkSink tells the stage loop that the operator is a sink: after each barrier it writes
// commit markers into its own and every upstream checkpoint directory. Call it from Open.
func (e *Env) MarkSink() { e.sink = true }

// Operator is a stage that transforms an input stream into an output stream (keyby, dedup,
// window) or consumes it (a sink: write-delta, write-kafka, print). The stage loop calls its
// methods from one goroutine, in stream order. Inputs are borrowed: an operator that keeps a
// batch after returning must Retain it. An operator never writes stdout and never exits.
type Operator interface {
	// Open receives the input schema (with its streamkit metadata) after state was restored to
	// env.Committed, and returns the output schema; a sink returns nil.
	Open(ctx context.Context, env *Env, in *arrow.Schema) (out *arrow.Schema, err error)
	// Process handles one data batch (rows > 0 or a foreign zero-row batch).
	Process(ctx context.Context, rec arrow.RecordBatch, emit Emit) error
	// Watermark is called for each incoming watermark (never moving backwards); the stage
	// forwards the watermark downstream after it returns, unless the operator implements
	// WatermarkOwner.
	Watermark(ctx context.Context, wm time.Time, emit Emit) error
	// Barrier ends epoch n: emit what the epoch completes, then make the state of epoch n
	// durable (changelog/snapshot). A sink makes the epoch's output durable here; the stage
	// then writes commit markers (sinks) or forwards the barrier (operators).
	Barrier(ctx context.Context, epoch uint64, emit Emit) error
	// End closes the stream: Final flushes everything (windows fire); Pause keeps state for
	// the next run. Output emitted here precedes the forwarded end batch.
	End(ctx context.Context, kind codec.EndKind, emit Emit) error
	// Close releases resources; called once, after End or on error.
	Close() error
}

// AsyncSink is implemented by sinks that make an epoch durable in the background, so the
// next epoch's rows are processed while the previous one commits (write-delta: encoding the
// last row groups, fsync and the Delta commit). For such a sink the stage does not write
// commit markers right after Barrier: it calls Durable once after Open, which switches the
// sink to background commits, and writes the markers of the epoch Settle returns whenever
// the channel signals, after every Barrier, and (with wait) before End. A sink commits its
// epochs in order and has at most one commit in flight; Barrier(n) first completes the
// commit of epoch n-1 (so the markers a crash may leave out are only those of commits that
// are already durable in the sink, which a restart recognises, e.g. by the Delta txn).
type AsyncSink interface {
	// Durable returns a channel that receives a value when a background commit finished.
	Durable() <-chan struct{}
	// Settle completes the bookkeeping of the finished commits (waiting for the one in
	// flight when wait) and returns the newest epoch durable since the previous call, 0 when
	// none, or the error of a failed commit (which names the sink and the epoch: the stage
	// returns it as it is).
	Settle(ctx context.Context, wait bool) (uint64, error)
}

// StateResolver is implemented by operators whose state-shaping options depend on the input
// schema (e.g. dedup's default key is the declared key or all columns). The stage calls it
// after reading the schema and before Open, and records the result in metadata.json together
// with Options.StateOptions; a restart with different values is refused.
type StateResolver interface {
	ResolveState(in *arrow.Schema) (map[string]string, error)
}

// Ticker is implemented by operators that act on processing time even when no input arrives
// (idle-partition timeouts, heartbeat session windows, early firings). The stage calls Tick
// every TickInterval of wall time, with Env.Now's reading, between messages.
type Ticker interface {
	TickInterval() time.Duration
	Tick(ctx context.Context, now time.Time, emit Emit) error
}

// WatermarkOwner is implemented by operators that compute their own output watermark (e.g. a
// window with --watermark-delay). The stage then forwards nothing itself; the operator returns
// the watermark to forward, if any, after each batch or incoming watermark.
type WatermarkOwner interface {
	OutputWatermark() (time.Time, bool)
}

// ProgressObserver is implemented by operators that generate their watermark from event times
// (dedup with --event-time): as a shard of keyby --shards they are sent progress controls
// (codec.Progress) with the latest event time of the whole stream, and observe it as if they
// had seen those rows, so that every shard has the watermark one process would have. The stage
// calls ObserveProgress in stream order and never forwards progress downstream; operators that
// do not implement it ignore progress.
type ProgressObserver interface {
	ObserveProgress(t time.Time)
}

// Position is a source's replayable position: Kafka offsets per partition, the set of files
// read, a Delta version. Sources define its JSON shape; the stage stores it verbatim in the
// offsets write-ahead log (state.Dir.WriteOffsets) before emitting each barrier.
type Position = json.RawMessage

// Source produces a stream from outside (read-kafka, read-files, read-delta, generate).
// The stage loop cuts epochs: it calls Read repeatedly, and at every --epoch-interval, at a
// limit (EpochLimiter), or at the end of the input it takes Position(), writes it to the
// offsets WAL as epoch n, and emits barrier n. Replays after a crash call Read with limit = the
// WAL position of each uncommitted epoch, so the same epochs are reproduced exactly.
//
// The start of the first epoch is fixed too: with a checkpoint directory and no committed
// epoch, RunSource writes Position() right after Open as offsets/0 (the resolved start, e.g.
// "latest" or a timestamp turned into offsets), and a restart before the first commit passes
// offsets/0 to Open as committed, so epoch 1 replays from the same start.
type Source interface {
	// Open positions the source just after committed (the end position of the newest
	// committed epoch; nil: from the configured start) and returns the output schema.
	Open(ctx context.Context, env *Env, committed Position) (*arrow.Schema, error)
	// Read returns the next batch. With limit != nil it never reads past limit and returns
	// (nil, io.EOF) once limit is reached. With limit == nil it returns (nil, io.EOF) when the
	// input has nothing more (available-now end, bounded input) and (nil, nil) when nothing is
	// available right now in follow/live mode (so the loop can cut epochs on time); it should
	// not block longer than about the linger interval.
	Read(ctx context.Context, limit Position) (arrow.RecordBatch, error)
	// Position is the position just after the last batch returned by Read.
	Position() Position
	// Close releases resources.
	Close() error
}

// EpochLimiter is implemented by sources that bound the size of an epoch (read-kafka
// --max-records-per-epoch, Spark's maxOffsetsPerTrigger). While reading new input (not during
// replays, whose epochs the WAL fixes) RunSource asks EpochFull after every Read and cuts the
// epoch at once when it reports true; it calls EpochCut after every cut, whatever its cause, so
// the source starts counting afresh. The source caps its batches so that an epoch never holds
// more than its limit: once full, Read returns (nil, nil) until EpochCut.
type EpochLimiter interface {
	EpochFull() bool
	EpochCut()
}

// CommitObserver is implemented by sources that act once the sink has committed an epoch
// (read-kafka --group commits the committed epoch's offsets to a consumer group, for lag
// monitoring). With a checkpoint directory, RunSource looks for new commit markers in it about
// once a second and after each barrier, and calls Committed with the newest committed epoch
// and its WAL position (epochs may be skipped: only the newest matters). At the end of the
// stream (including an interrupt) it waits up to CommitWait for the sink to commit the last
// epoch, so a bounded run also reports its final position. Errors returned by Committed end
// the stage; a source that only wants to warn logs and returns nil.
type CommitObserver interface {
	Committed(ctx context.Context, epoch uint64, pos Position) error
	CommitWait() time.Duration
}

// PartitionProgress is implemented by sources whose barriers carry the progress of their
// source partitions in-band (read-kafka --consumer-group, docs/protocol.md §13): RunSource
// calls BarrierOffsets just before it emits barrier n and sends the result as the barrier's
// streamkit.offsets ("" for none).
type PartitionProgress interface {
	BarrierOffsets(epoch uint64) string
}

// SourceWatermarker is implemented by sources that derive a watermark (max event time minus
// delay, minimum over partitions); the loop emits it after batches when it advances.
type SourceWatermarker interface {
	Watermark() (time.Time, bool)
}

// OutputCounter is implemented by a sink that writes fewer rows than it is given (print
// --limit): RowsWritten is the rows it wrote so far, shown as the sink's rows out in the
// progress reports. The stage calls it after each Process, on the stage goroutine. A sink
// without it counts every row it was given as written.
type OutputCounter interface {
	RowsWritten() int64
}
