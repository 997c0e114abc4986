package delta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
)

// StreamTool is the tool a StreamWriter writes for: the `by` of its commit markers, the
// holder of its flow locks and the prefix of its messages.
const StreamTool = "write-delta"

// DefaultHoldBytes bounds the rows of a possibly replayed epoch kept in memory (see
// StreamConfig.HoldBytes).
const DefaultHoldBytes = 256 << 20

// Modes of StreamConfig.Mode (write-delta --mode).
const (
	ModeAppend    = "append"
	ModeOverwrite = "overwrite"
)

// Constant is a --with COL=VALUE column added to every row (StreamConfig.With).
type Constant struct{ Name, Value string }

// StreamConfig are the options of a StreamWriter: write-delta's flags.
type StreamConfig struct {
	// Table names the table root in messages and in the checkpoint's FlowFile: its local
	// directory (made absolute by the caller) or its redacted URL (storage.Store.Location).
	Table string
	// Store is the opened table root (tools/cli.OpenStore: a local directory or a bucket
	// prefix). Nil: the local directory Table.
	Store storage.Store
	// Flow is the txn appId (--flow). Empty: generated once and kept in the checkpoint
	// directory's FlowFile; without a checkpoint directory a new one per run.
	Flow string
	// Mode is append (default) or overwrite: every epoch that has rows replaces the table's
	// contents with its rows, in one commit that removes every live file (Spark's complete
	// output mode); epochs without rows only record progress.
	Mode string
	// PartitionBy lists partition columns of a new table: top-level columns, or dot paths into
	// structs, which are copied into top-level columns (see stream_augment.go); for an existing table
	// it must resolve to the table's partitioning (or be empty).
	PartitionBy []string
	// delta.MergeSchema adds input columns the table lacks (also nested struct fields) and relaxes
	// NOT NULL columns the input lacks or declares nullable, in the first commit of the run.
	// Without it such an input is refused with a schema diff.
	MergeSchema bool
	// Properties are table properties (--table-property k=v): set when the table is created;
	// on an existing table, changed values are committed as a metadata update (delta.*
	// properties that change the protocol's obligations are refused).
	Properties map[string]string
	// Compression of the Parquet data files: snappy (default) or zstd.
	Compression string
	// With adds constant columns (string, or the table column's type when it exists).
	With []Constant
	// TargetFileSize rolls data files at about this many bytes (default: the table property
	// delta.targetFileSize when PropertySize accepts it, else 128 MiB).
	TargetFileSize int64
	// PropertySize parses the table property delta.targetFileSize when TargetFileSize is 0:
	// write-delta passes its --target-file-size parser, so the property takes the flag's forms
	// ("134217728", "128MiB"). Nil: the property is not read.
	PropertySize func(string) (int64, error)
	// TruncateTimestamps drops sub-microsecond digits of timestamps; without it they are an
	// error (Delta stores microseconds).
	TruncateTimestamps bool
	// Writers is the number of Parquet writers (goroutines, each with its own files) an epoch
	// larger than DefaultLaneThreshold is spread over (default DefaultWriters()).
	Writers int
	// HoldBytes bounds the memory used to keep the rows of an epoch that may be a replay of an
	// already committed one (DefaultHoldBytes when 0); beyond it they are written to data files
	// that are deleted again if the epoch turns out to be committed.
	HoldBytes int64
	// AllowArbitraryProperties accepts delta.* table properties Delta does not define
	// (--allow-arbitrary-properties, as Spark's
	// spark.databricks.delta.allowArbitraryProperties.enabled); default: refused.
	AllowArbitraryProperties bool
	// FlowTakeover lets this run's checkpoint (or a run without one) take over a flow that is
	// bound to another checkpoint (--flow-takeover); default: refused.
	FlowTakeover bool
}

// StreamWriter is the exactly-once stream writer of write-delta (a stage.Operator sink, and a
// stage.AsyncSink once Durable is called): every epoch of the input stream becomes one Delta
// commit holding the epoch's Parquet data files and a txn action {appId = flow id, version =
// epoch}; after a restart, replayed epochs whose number is ≤ the table's txn version for the
// flow are skipped, so each input row lands in the table exactly once (DESIGN.md §3, §5).
//
// # Rows after the last barrier
//
// Rows belong to the epoch whose barrier follows them. Streamkit sources always end an epoch
// with a barrier before their end batch, so a stream normally has no rows between its last
// barrier and its end. When it does:
//
//   - end=final (also a foreign producer — pyarrow, DuckDB, polars — whose plain IPC stream has
//     no barriers at all and ends with the end-of-stream marker): the rows are committed as a
//     final epoch numbered one after the last barrier seen (or, without any barrier, one after
//     the newest epoch the flow committed), with its txn, and a commit marker is written into
//     write-delta's own checkpoint directory. This is what makes `producer | streamkit
//     write-delta TABLE` work for programs that know nothing of streamkit.
//   - end=pause: an error (exit 1), nothing of those rows is committed. A producer that pauses
//     keeps its position for the next run and replays uncommitted rows; committing them under a
//     guessed epoch number could make the sink skip the real epoch later.
//
// Its state is kept in pieces, one job each: the flow it commits as (flowBinding), what it
// knows of the table (tableView), the columns it adds (Augmenter), the epoch being written
// (epochState), background commits (asyncCommits) and totals for the final log line.
type StreamWriter struct {
	cfg StreamConfig
	env *stage.Env
	flowBinding
	tableView
	aug         Augmenter
	partitionBy []string        // --partition-by as top-level column names
	ctx         context.Context // Open's: bounds the data files' store calls
	grp         groupSink       // consumer-group mode (stream_group.go)
	epochState
	asyncCommits
	streamTotals
}

// flowBinding is whom the writer commits as: the flow id (the txn appId), the flow's lock in
// the table and the checkpoint directory's FlowFile record (see stream_flow.go).
type flowBinding struct {
	flow     string
	lock     *delta.FlowLock // the flow's lock in the table, held from Open to Close
	rec      FlowFileRecord  // FlowFile of the checkpoint directory (zero without one)
	fresh    bool            // FlowFile was created by this run
	ownEpoch uint64          // newest epoch committed in the own checkpoint directory
	takeover bool            // --flow-takeover moved the flow to this run and it has not committed yet
}

// tableView is what the writer knows of the table: its snapshot, the protocol and metadata of
// a table to create or of a metadata change to commit, and the flow's txn version.
type tableView struct {
	table       *delta.Table
	snap        *delta.Snapshot // nil until the table exists
	createProto *delta.Protocol // protocol and metadata of a table this writer creates
	createMeta  *delta.Metadata
	pendProto   *delta.Protocol // metadata change (merge-schema, properties) for the next commit
	pendMeta    *delta.Metadata
	meta        *delta.Metadata // the metadata data files are written for
	txn         int64           // the table's txn version for the flow
	haveTxn     bool
}

// epochState is where the stream is and the epoch being written: its rows held in memory or
// already in data files.
type epochState struct {
	in          *arrow.Schema // the input schema (its streamkit metadata)
	lastBarrier uint64
	sawBarrier  bool

	ew        *WriterPool
	held      []arrow.RecordBatch
	heldBytes int64
	rows      int64

	prog *epochProgress // group mode: the per-partition txns of the epoch being committed

	laneThreshold  int64 // DefaultLaneThreshold; tests lower it (SetLaneThreshold)
	lastEpochBytes int64 // Arrow bytes of the previous epoch written here
}

// asyncCommits are the background commits (stage.AsyncSink), switched on by Durable.
type asyncCommits struct {
	async    bool
	pending  *pendingCommit // the epoch committing in the background, nil when none
	durable  chan struct{}
	settled  uint64 // the newest epoch durable in the table (committed or skipped)
	reported uint64 // the newest epoch Settle returned
}

// streamTotals are counted for the log line at the end.
type streamTotals struct {
	committed, skipped int
	rowsTotal          int64
	commitTime         time.Duration
}

// NewStreamWriter validates cfg (usage errors name the write-delta flag).
func NewStreamWriter(cfg StreamConfig) (*StreamWriter, error) {
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeAppend
	case ModeAppend, ModeOverwrite:
	default:
		return nil, stage.Usagef("write-delta: --mode must be append or overwrite, got %q", cfg.Mode)
	}
	switch strings.ToLower(cfg.Compression) {
	case "":
		cfg.Compression = "snappy"
	case "snappy", "zstd":
		cfg.Compression = strings.ToLower(cfg.Compression)
	default:
		return nil, stage.Usagef("write-delta: --compression must be snappy or zstd, got %q", cfg.Compression)
	}
	if cfg.Table == "" {
		return nil, stage.Usagef("write-delta: no table given")
	}
	if cfg.TargetFileSize < 0 {
		return nil, stage.Usagef("write-delta: --target-file-size must be positive")
	}
	if cfg.HoldBytes <= 0 {
		cfg.HoldBytes = DefaultHoldBytes
	}
	if cfg.Writers < 0 {
		return nil, stage.Usagef("write-delta: --writers must be ≥ 1")
	}
	if cfg.Writers == 0 {
		cfg.Writers = DefaultWriters()
	}
	seen := map[string]bool{}
	for _, c := range cfg.With {
		if c.Name == "" {
			return nil, stage.Usagef("write-delta: --with needs COL=VALUE")
		}
		if seen[strings.ToLower(c.Name)] {
			return nil, stage.Usagef("write-delta: --with %s given twice", c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
	}
	for _, p := range cfg.PartitionBy {
		if p == "" {
			return nil, stage.Usagef("write-delta: --partition-by has an empty column name")
		}
	}
	if len(cfg.Properties) > 0 {
		props, err := delta.ValidateProperties(cfg.Properties, cfg.AllowArbitraryProperties)
		if err != nil {
			hint := ""
			if errors.Is(err, delta.ErrInvalidProperty) && strings.Contains(err.Error(), "unknown Delta property") {
				hint = " (--allow-arbitrary-properties accepts it)"
			}
			return nil, stage.Usagef("write-delta: --table-property: %v%s", err, hint)
		}
		cfg.Properties = props
	}
	w := &StreamWriter{cfg: cfg}
	w.laneThreshold = DefaultLaneThreshold
	return w, nil
}

// Config returns the options as NewStreamWriter completed them (defaults filled in).
func (w *StreamWriter) Config() StreamConfig { return w.cfg }

// SetLaneThreshold sets how much Arrow data an epoch carries before its batches are spread
// over the parallel writers (DefaultLaneThreshold); tests lower it to spread small epochs.
func (w *StreamWriter) SetLaneThreshold(n int64) { w.laneThreshold = n }

// Async reports whether Durable switched the writer to background commits.
func (w *StreamWriter) Async() bool { return w.async }

// Flow returns the flow id (the txn appId) once Open has run.
func (w *StreamWriter) Flow() string { return w.flow }

// Open resolves the flow id, loads the table (if it exists) and checks that the input fits it;
// otherwise it prepares the metadata of the table to create at the first commit.
func (w *StreamWriter) Open(ctx context.Context, env *stage.Env, in *arrow.Schema) (_ *arrow.Schema, err error) {
	env.MarkSink()
	w.env, w.in, w.ctx = env, in, ctx
	root := w.cfg.Table
	if w.cfg.Store != nil {
		w.table = delta.OpenTable(w.cfg.Store, env.Mem)
	} else {
		w.table = delta.NewTable(root, env.Mem)
	}
	w.table.EngineInfo = "streamkit write-delta"
	w.table.Now = env.Now
	grouped, err := w.openGroup(env, in)
	if err != nil {
		return nil, err
	}
	if !grouped {
		if err := w.resolveFlow(env); err != nil {
			return nil, err
		}
		holder := delta.FlowHolder{Tool: StreamTool}
		if env.Dir != nil {
			holder.Checkpoint = env.Dir.Path
		}
		if w.lock, err = w.table.LockFlow(ctx, w.flow, 0, holder); err != nil {
			return nil, fmt.Errorf("write-delta: %w", err)
		}
	}
	defer func() {
		if err != nil {
			w.lock.Finish() // leaves no lock behind in a directory that is not a table
			w.lock = nil
		}
	}()
	snap, err := w.table.Snapshot(ctx)
	switch {
	case errors.Is(err, delta.ErrNotATable):
		snap = nil
	case err != nil:
		return nil, fmt.Errorf("write-delta: %w", err)
	}
	if snap != nil {
		if err := snap.CheckWrite(); err != nil {
			return nil, fmt.Errorf("write-delta: cannot write to table %s: %w", root, err)
		}
	}
	if err := w.buildWriteSchema(in, snap); err != nil {
		return nil, err
	}
	if snap == nil {
		props := w.cfg.Properties
		if len(w.aug.promoted) > 0 {
			props = w.promotedProperties()
			for k, v := range w.cfg.Properties {
				props[k] = v
			}
		}
		p, m, err := delta.NewTableMetadata(w.aug.Schema, delta.CreateOptions{
			PartitionColumns: w.partitionBy, Configuration: props, Now: env.Now(),
			AllowArbitraryProperties: w.cfg.AllowArbitraryProperties})
		if err != nil {
			return nil, fmt.Errorf("write-delta: table %s: %w", root, err)
		}
		w.createProto, w.createMeta, w.meta = p, m, m
	} else if err := w.adopt(snap); err != nil {
		return nil, err
	}
	if grouped {
		return nil, nil
	}
	if w.snap != nil {
		w.txn, w.haveTxn = w.snap.TxnVersion(w.flow)
	}
	if err := w.checkOwner(env); err != nil {
		return nil, err
	}
	if env.Dir != nil {
		if w.ownEpoch, err = env.Dir.Committed(); err != nil {
			return nil, err
		}
		if w.ownEpoch > 0 && !w.tableHoldsCommitted() {
			have := "no txn"
			if w.haveTxn {
				have = fmt.Sprintf("txn version %d", w.txn)
			}
			return nil, fmt.Errorf("write-delta: checkpoint %s records epoch %d as committed, but table %s has %s for flow %s: "+
				"the table was replaced or deleted, or the checkpoint belongs to another table; "+
				"use a new checkpoint directory (and restart the pipeline's sources) to write it again",
				env.Dir.Path, w.ownEpoch, root, have, w.flow)
		}
	}
	if w.haveTxn {
		env.Log.Info("resuming flow", "table", root, "flow", w.flow, "committed_epoch", w.txn, "table_version", w.snap.Version())
	}
	return nil, nil
}

// Process writes the rows of one batch into the current epoch's data files (or holds them
// while the epoch may be a replay).
func (w *StreamWriter) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if w.grp.on {
		if err := w.notePartition(rec); err != nil {
			return err
		}
	}
	r, err := w.aug.Augment(w.env.Mem, rec)
	if err != nil {
		return err
	}
	defer r.Release()
	w.rows += r.NumRows()
	if w.mayBeReplay() && w.heldBytes < w.cfg.HoldBytes {
		r.Retain()
		w.held = append(w.held, r)
		w.heldBytes += codec.BatchBytes(r)
		return nil
	}
	return w.write(r)
}

// Barrier commits epoch n (its data files and txn), or skips it when the table already holds
// it for this flow or when it had no rows (no empty Delta commit; the table is still created
// by the first epoch, rows or not).
func (w *StreamWriter) Barrier(ctx context.Context, n uint64, _ stage.Emit) error {
	if !w.sawBarrier && w.env.Dir != nil {
		// With a checkpoint, epochs up to the table's txn version are skipped as replays:
		// only a replayable stream may be skipped.
		if err := stage.RequireReplayable(StreamTool, w.in, "run write-delta without --checkpoint "+
			"(every run then commits its rows under a new flow id; a stream without barriers, a foreign producer's, is committed as one final epoch either way)"); err != nil {
			w.discardEpoch()
			return err
		}
	}
	if w.grp.on {
		prog, err := w.groupProgress(n)
		if err != nil {
			w.discardEpoch()
			return err
		}
		w.prog = prog
	}
	if err := w.endEpoch(ctx, n, true); err != nil {
		return err
	}
	w.lastBarrier, w.sawBarrier = n, true
	return nil
}

// End commits rows that arrived after the last barrier when the stream ends with final (see
// the package documentation), refuses them with pause, and creates the table when the stream
// carried no epoch at all.
func (w *StreamWriter) End(ctx context.Context, kind codec.EndKind, _ stage.Emit) error {
	if err := w.settle(ctx, true); err != nil {
		return err
	}
	trailing := w.rows > 0
	switch {
	case trailing && w.grp.on:
		rows := w.rows
		if err := w.discardEpoch(); err != nil {
			return err
		}
		return fmt.Errorf("write-delta: %d rows of a consumer group's stream arrived after the last barrier; they carry no partition progress and were not committed", rows)
	case w.snap == nil && w.grp.on:
		// A member that committed nothing creates no table: the first commit of a member
		// with rows does.
	case trailing && kind == codec.Pause:
		rows := w.rows
		if err := w.discardEpoch(); err != nil {
			return err
		}
		return fmt.Errorf("write-delta: %d rows arrived after the last barrier and before end=pause; they belong to no epoch and were not committed (the producer must end each epoch with a barrier)", rows)
	case trailing:
		var e uint64
		if w.sawBarrier {
			e = w.lastBarrier + 1
		} else {
			e = max(w.ownEpoch, w.env.Committed) + 1
			if w.haveTxn && uint64(w.txn) >= e {
				e = uint64(w.txn) + 1
			}
		}
		w.env.Log.Info("committing the rows after the last barrier as a final epoch", "epoch", e, "rows", w.rows)
		if err := w.endEpoch(ctx, e, false); err != nil {
			return err
		}
		if w.env.Dir != nil && w.haveTxn && uint64(w.txn) >= e {
			if err := state.WriteCommit(w.env.Dir.Path, e, StreamTool); err != nil {
				return fmt.Errorf("write-delta: commit epoch %d: %w", e, err)
			}
			w.env.Stats.Committed.Store(e)
		}
	case w.snap == nil:
		if err := w.createEmpty(ctx); err != nil {
			return err
		}
	}
	w.env.Log.Info("write-delta done", "table", w.cfg.Table, "flow", w.flow, "epochs_committed", w.committed,
		"epochs_skipped", w.skipped, "rows", w.rowsTotal, "version", w.version())
	return nil
}

func (w *StreamWriter) version() int64 {
	if w.snap == nil {
		return -1
	}
	return w.snap.Version()
}

// Close deletes the data files of an epoch that was not committed (an error or an abort) and
// releases held batches.
func (w *StreamWriter) Close() error {
	// A background commit still running finishes first: its files are deleted only if it
	// failed (a commit that succeeded is in the table, whether or not its markers were
	// written; a restart skips its epoch by the txn).
	if p := w.pending; p != nil {
		<-p.done
		w.pending = nil
		if p.err != nil {
			p.ew.Abort()
		}
	}
	err := w.discardEpoch()
	// A run that failed before its first commit (malformed input, a truncated stream) created
	// no table: Finish removes the lock it made, so no directory is left that looks like one.
	w.lock.Finish()
	w.aug.Release()
	return err
}

// Watermark is ignored: a Delta table has no notion of event-time progress.
func (w *StreamWriter) Watermark(context.Context, time.Time, stage.Emit) error { return nil }
