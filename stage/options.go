package stage

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/state"
)

// Options are the flags every stage shares.
type Options struct {
	// Tool is the subcommand name ("dedup"); Name is --name (default: Tool).
	Tool, Name string
	// Checkpoint is --checkpoint DIR; "" falls back to $STREAMKIT_CHECKPOINT/<Name>.
	Checkpoint string
	// StateOptions are the options that shape the stage's state, fingerprinted in
	// metadata.json; a restart with different values is refused.
	StateOptions map[string]string
	// Progress is auto (status line on a terminal), json, or off. Default auto.
	Progress string
	// ProgressInterval is how often progress is reported. Default 1 s.
	ProgressInterval time.Duration
	// Log receives the stage's log records (stderr). Default: slog.Default().
	Log *slog.Logger
	// Now is the injected clock; default time.Now.
	Now func() time.Time
	// Stdin, Stdout, Stderr of the stage.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// NoSignals disables SIGINT/SIGTERM handling (tests drive Interrupt instead).
	NoSignals bool
	// Interrupt, when not nil, is a signal source besides the OS signals: each value sent acts
	// as one SIGINT (do not close it).
	Interrupt <-chan struct{}
	// MaxBadRatio is --max-bad-ratio: the stage fails an epoch, before it commits, in which a
	// larger share of the records was set aside (Stats.Reject: bad records, rescued rows,
	// late rows …), as Databricks' badRecordsPath users and Lakeflow's expect_or_fail do.
	// Default off: the stage only warns when most of an epoch's records were set aside.
	MaxBadRatio Ratio
	// Stateful marks an operator whose state spans epochs (dedup, window). Without a checkpoint
	// it cannot restore that state after a restart, so its output is not replayable even when
	// its input is (codec.SchemaReplayable is dropped, with a warning): a checkpointed sink
	// behind it then refuses the stream (RequireReplayable) instead of losing or duplicating
	// the rows that state held. Default false (stateless: the mark is passed on).
	Stateful bool
	// Shard is the stage's shard environment (its place among the children of keyby --shards,
	// its checkpoint root). nil: ResolveShard reads it from the process environment
	// (LoadShardEnv) when the stage starts; tests set it to run a stage as a shard.
	Shard *ShardEnv
	// Mem allocates every Arrow buffer of the stage (it becomes Env.Mem): the input and output
	// streams and what the operator or source builds. Default memory.DefaultAllocator; a test
	// passes its own memory.CheckedAllocator (and so can run in parallel with others).
	Mem memory.Allocator
	// RecycleInput makes RunOperator read the bodies of input batches into recycled buffers
	// (codec.Recycler over Mem) instead of fresh ones: a stage that passes 5 MB batches
	// through stops allocating, zeroing (and faulting in, and collecting) every one of them.
	// Set it only for an operator that keeps nothing aliasing an input batch's buffers once
	// it released the batch — no string from Value(i), no slice of Values() — other than
	// through Retain (select, filter). Default false.
	RecycleInput bool
}

// ResolveShard sets o.Shard from the process environment (LoadShardEnv) unless it is set.
// RunOperator and RunSource call it first; a stage that runs its own loop (keyby --shards)
// calls it before CheckpointDir. Errors are usage errors naming the variable.
func (o *Options) ResolveShard() error {
	if o.Shard != nil {
		return nil
	}
	s, err := LoadShardEnv(os.Getenv)
	if err != nil {
		return err
	}
	o.Shard = &s
	return nil
}

// shard is the resolved shard environment; the zero value before ResolveShard.
func (o *Options) shard() ShardEnv {
	if o.Shard == nil {
		return ShardEnv{}
	}
	return *o.Shard
}

// Allocator is o.Mem, or memory.DefaultAllocator when it is nil (the stage loops default it
// so; a tool that runs on Options without them, as keyby --shards, calls this).
func (o *Options) Allocator() memory.Allocator {
	if o.Mem == nil {
		return memory.DefaultAllocator
	}
	return o.Mem
}

// SourceOptions add the epoch and batching flags of sources (DESIGN.md §2, §3).
type SourceOptions struct {
	Options
	// EpochInterval cuts an epoch every interval (--epoch-interval, default 5 s).
	EpochInterval time.Duration
	// BatchRows is the maximum rows per batch (--batch-rows, default 65536).
	BatchRows int
	// Linger is how long a source waits to fill a batch (--linger, default 100 ms).
	Linger time.Duration
	// End overrides the end kind at the end of input: "" = pause with a checkpoint, final
	// without; "final" or "pause".
	End string
}

// checkpointOptions is StateOptions plus, in a child of keyby --shards, the shard's routing.
func (o *Options) checkpointOptions() map[string]string {
	opts := maps.Clone(o.StateOptions)
	if opts == nil {
		opts = map[string]string{}
	}
	if sh := o.shard(); sh.IsShard() {
		opts["shard"] = sh.checkpointOption()
	}
	return opts
}

// CheckpointDir resolves the checkpoint directory: --checkpoint, else
// $STREAMKIT_CHECKPOINT/<name>, else "" (no checkpoint); with ".shard-<i>" appended in a
// child of keyby --shards. It reads the shard environment resolved by ResolveShard.
func (o *Options) CheckpointDir() string {
	sh := o.shard()
	dir := o.Checkpoint
	if dir == "" && sh.CheckpointRoot != "" {
		dir = state.Join(sh.CheckpointRoot, o.StageName())
	}
	if name := sh.Name(); dir != "" && name != "" {
		dir = state.WithSuffix(dir, ".shard-"+name)
	}
	return dir
}

// StageName is --name or the tool name.
func (o *Options) StageName() string {
	if o.Name != "" {
		return o.Name
	}
	return o.Tool
}

func (o *Options) defaults() {
	if o.Progress == "" {
		o.Progress = ProgressAuto
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	o.Mem = o.Allocator()
	o.Log = o.Log.With("stage", o.StageName())
	for _, f := range []any{o.Stdin, o.Stdout} {
		if f, ok := f.(*os.File); ok {
			codec.TunePipe(f)
		}
	}
}

func (o *SourceOptions) validate() error {
	if o.EpochInterval <= 0 {
		o.EpochInterval = 5 * time.Second
	}
	if o.BatchRows <= 0 {
		return Usagef("--batch-rows must be ≥ 1, got %d", o.BatchRows)
	}
	if o.Linger <= 0 {
		o.Linger = 100 * time.Millisecond
	}
	switch o.End {
	case "", "final", "pause":
	default:
		return Usagef("--end must be final or pause, got %q", o.End)
	}
	return nil
}

func (o *Options) String() string { return fmt.Sprintf("%s(%s)", o.Tool, o.StageName()) }
