package stage

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
)

// EnvCheckpoint names the environment variable whose value is a checkpoint root: a stage
// without --checkpoint keeps its checkpoint in $STREAMKIT_CHECKPOINT/<stage name>.
const EnvCheckpoint = "STREAMKIT_CHECKPOINT"

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
	// Mem allocates every Arrow buffer of the stage (it becomes Env.Mem): the input and output
	// streams and what the operator or source builds. Default memory.DefaultAllocator; a test
	// passes its own memory.CheckedAllocator (and so can run in parallel with others).
	Mem memory.Allocator
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

// AddFlags registers --checkpoint and --name on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint directory of this stage (default $"+EnvCheckpoint+"/<name> when set; none otherwise)")
	fs.StringVar(&o.Name, "name", "", "stage name, used for the checkpoint directory under $"+EnvCheckpoint+" (default: the tool name)")
	fs.Var(&o.MaxBadRatio, "max-bad-ratio", "fail (exit 1) before an epoch commits when more than this share (0..1) of the records this stage read in it were set aside by this stage: a source's bad records and _rescued_data rows, window's late or bad-time rows, dedup's rows older than the watermark (not counts of stages upstream: give the flag to the stage that sets rows aside; default off: warn when most were)")
}

// AddFlags registers the stage and source flags on fs.
func (o *SourceOptions) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	fs.DurationVar(&o.EpochInterval, "epoch-interval", 5*time.Second, "cut a checkpoint epoch every interval, also while no rows arrive (an idle epoch is one barrier; sinks commit nothing for it)")
	fs.IntVar(&o.BatchRows, "batch-rows", 64*1024, "maximum rows per Arrow batch")
	fs.DurationVar(&o.Linger, "linger", 100*time.Millisecond, "longest wait to fill a batch before sending it")
	fs.StringVar(&o.End, "end", "", "end of input sends end=final or end=pause (default: pause with a checkpoint, final without)")
}

// EnvShard is set by `keyby --shards` for each child process to its shard index; a stage
// running as shard i keeps its checkpoint in "<dir>.shard-i".
const EnvShard = "STREAMKIT_SHARD"

// EnvShardCommits is set by `keyby --shards` for its children to a directory in which a sink
// child i records the epochs it committed (<dir>/<i>/commits, as in a checkpoint directory)
// instead of writing commit markers into the upstream stages' directories: keyby writes those
// for the epochs that every shard has committed. Otherwise the fastest shard would mark
// upstream sources committed past epochs a slower shard has not committed yet, and a restart
// after a crash would not replay them to it (DESIGN.md §3: upstream markers may lag, never
// lead).
const EnvShardCommits = "STREAMKIT_SHARD_COMMITS"

// EnvShardRoute is set by `keyby --shards` for its children to how rows are routed: "<N> by
// <hash>(<key>)". A child records "<i>/<route>" as the option "shard" of its checkpoint, so
// a restart that routes other keys to it (another --shards or key) is refused, as keyby's own
// checkpoint refuses it; otherwise the shard's state, or the epochs its sink already holds,
// would not match the rows it now gets.
const EnvShardRoute = "STREAMKIT_SHARD_ROUTE"

// ShardRoute formats the value of EnvShardRoute: "<n> by <hash>(<key,...>)"; routeKey reads
// the key back.
func ShardRoute(n int, hash string, key []string) string {
	return strconv.Itoa(n) + " by " + hash + "(" + strings.Join(key, ",") + ")"
}

// routeKey is the key of a ShardRoute value, nil when it has none.
func routeKey(route string) []string {
	open, end := strings.Index(route, "("), strings.LastIndex(route, ")")
	if open < 0 || end < open {
		return nil
	}
	return strings.Split(route[open+1:end], ",")
}

// EnvShardPath is set by a `keyby --shards` that is itself a shard of an outer one, for its
// children: the outer shards' names and the child's index, dot-separated ("1.0": child 0 of
// the inner keyby in outer shard 1). It names what a shard owns (its checkpoint directory,
// side-output file, Delta flow) so that nested shards do not collide; see ShardName.
const EnvShardPath = "STREAMKIT_SHARD_PATH"

// ShardName is this process's name as a shard of keyby --shards: EnvShardPath when set (a
// nested shard), else EnvShard; "" outside shards.
func ShardName() string {
	if p := os.Getenv(EnvShardPath); p != "" {
		return p
	}
	return os.Getenv(EnvShard)
}

// EnvShardProgress is set (to 1) by `keyby --shards` for a child to which it sends the
// stream's event-time progress (codec.Progress): a streamkit tool named as the child command
// with --event-time. A shard that generates its watermark from event times without it (a tool
// behind a foreign command, e.g. sh -c) sees only its own rows' event times.
const EnvShardProgress = "STREAMKIT_SHARD_PROGRESS"

// CheckShardKey refuses, in a child of keyby --shards, an operator key (dot paths; nil: all
// columns) that does not contain the routing key of EnvShardRoute: equal keys would then reach
// different shards and each shard would keep its own row or window. A routing path is
// contained when the key holds it or a struct above it. what names the flag ("dedup: --key").
// Outside a shard it returns nil. Errors are usage errors.
func CheckShardKey(what string, key []string) error {
	routed := routeKey(os.Getenv(EnvShardRoute))
	if os.Getenv(EnvShard) == "" || key == nil || routed == nil {
		return nil
	}
	var missing []string
	for _, r := range routed {
		if !slices.ContainsFunc(key, func(k string) bool { return k == r || strings.HasPrefix(r, k+".") }) {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	k := strings.Join(key, ",")
	return Usagef("%s %s does not contain %s, by which keyby routes the rows to its shards: equal keys would reach different shards, and each shard would keep its own; use a key that contains %s, or route by this key (keyby %s --shards N -- ...)",
		what, k, strings.Join(missing, ","), strings.Join(missing, ","), k)
}

// checkpointOptions is StateOptions plus, in a child of keyby --shards, the shard's routing.
func (o *Options) checkpointOptions() map[string]string {
	opts := maps.Clone(o.StateOptions)
	if opts == nil {
		opts = map[string]string{}
	}
	if shard := os.Getenv(EnvShard); shard != "" {
		opts["shard"] = shard
		if route := os.Getenv(EnvShardRoute); route != "" {
			opts["shard"] = shard + "/" + route
		}
	}
	return opts
}

// shardCommitDir is the directory where this process, a sink shard of keyby --shards, records
// its commits ("" when it is none).
func shardCommitDir() string {
	shard, dir := os.Getenv(EnvShard), os.Getenv(EnvShardCommits)
	if shard == "" || dir == "" {
		return ""
	}
	return filepath.Join(dir, shard)
}

// CheckpointDir resolves the checkpoint directory: --checkpoint, else
// $STREAMKIT_CHECKPOINT/<name>, else "" (no checkpoint); with ".shard-<i>" appended in a
// child of keyby --shards.
func (o *Options) CheckpointDir() string {
	dir := o.Checkpoint
	if dir == "" {
		if root := os.Getenv(EnvCheckpoint); root != "" {
			dir = filepath.Join(root, o.StageName())
		}
	}
	if shard := ShardName(); dir != "" && shard != "" {
		dir = filepath.Clean(dir) + ".shard-" + shard
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
