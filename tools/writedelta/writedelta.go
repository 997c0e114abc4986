// Package writedelta is the `streamkit write-delta` tool: an exactly-once Delta Lake sink
// (DESIGN.md §3, §5). Every epoch of the input stream becomes one Delta commit holding the
// epoch's Parquet data files and a txn action {appId = flow id, version = epoch}; after a
// restart, replayed epochs whose number is ≤ the table's txn version for the flow are skipped,
// so each input row lands in the table exactly once. The Delta protocol itself is implemented
// by package sink/delta.
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
package writedelta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/sink/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/tools/cli"
)

// Tool is the subcommand name; it is also the `by` of the commit markers write-delta writes.
const Tool = "write-delta"

// FlowFile is the file in write-delta's checkpoint directory that records the flow id (and the
// table) on first use, as a checksummed JSON envelope (docs/protocol.md §7.1).
const FlowFile = "write-delta.json"

// DefaultHoldBytes bounds the rows of a possibly replayed epoch kept in memory (see
// Config.HoldBytes).
const DefaultHoldBytes = 256 << 20

// Modes of --mode.
const (
	ModeAppend    = "append"
	ModeOverwrite = "overwrite"
)

// Constant is a --with COL=VALUE column added to every row.
type Constant struct{ Name, Value string }

// Config are write-delta's options.
type Config struct {
	// Table is the table root: a local directory (made absolute by TableRoot).
	Table string
	// Flow is the txn appId (--flow). Empty: generated once and kept in the checkpoint
	// directory's FlowFile; without a checkpoint directory a new one per run.
	Flow string
	// Mode is append (default) or overwrite: every epoch that has rows replaces the table's
	// contents with its rows, in one commit that removes every live file (Spark's complete
	// output mode); epochs without rows only record progress.
	Mode string
	// PartitionBy lists partition columns of a new table: top-level columns, or dot paths into
	// structs, which are copied into top-level columns (see promote.go); for an existing table
	// it must resolve to the table's partitioning (or be empty).
	PartitionBy []string
	// MergeSchema adds input columns the table lacks (also nested struct fields) and relaxes
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
	// delta.targetFileSize when numeric, else 128 MiB).
	TargetFileSize int64
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

// flowRecord is the content of FlowFile.
type flowRecord struct {
	Flow    string    `json:"flow"`
	Table   string    `json:"table"`
	Created time.Time `json:"created"`
	// ID identifies the checkpoint directory (a UUID made on first use): the table's flow
	// lock records which checkpoint owns the flow.
	ID string `json:"id,omitempty"`
	// TableID is the table's metaData.id once the flow committed to it: a table replaced
	// under the same path is detected.
	TableID string `json:"table_id,omitempty"`
	// TxnBeforeEmpty is set while the newest epochs committed here carried no rows and so
	// made no Delta commit: the flow's txn version in the table when the first of them was
	// skipped (-1: the flow had none). The next Delta commit clears it. A restart then
	// expects the table's txn at this version, not at the newest committed epoch.
	TxnBeforeEmpty *int64 `json:"txn_before_empty,omitempty"`
}

// Writer is the write-delta operator (a stage.Operator sink).
type Writer struct {
	cfg   Config
	env   *stage.Env
	table *delta.Table
	snap  *delta.Snapshot // nil until the table exists
	flow  string
	lock  *delta.FlowLock // the flow's lock in the table, held from Open to Close
	rec   flowRecord      // FlowFile of the checkpoint directory (zero without one)
	fresh bool            // FlowFile was created by this run

	writeSchema *arrow.Schema // input columns + constants + promoted partition columns
	consts      []*codec.Constant
	promoted    []promoted // nested --partition-by fields copied into top-level columns
	partitionBy []string   // --partition-by as top-level column names

	createProto *delta.Protocol // protocol and metadata of a table this writer creates
	createMeta  *delta.Metadata
	pendProto   *delta.Protocol // metadata change (merge-schema, properties) for the next commit
	pendMeta    *delta.Metadata
	meta        *delta.Metadata // the metadata data files are written for

	txn      int64 // the table's txn version for the flow
	haveTxn  bool
	ownEpoch uint64 // newest epoch committed in the own checkpoint directory
	takeover bool   // --flow-takeover moved the flow to this run and it has not committed yet

	in          *arrow.Schema // the input schema (its streamkit metadata)
	lastBarrier uint64
	sawBarrier  bool

	// the current epoch
	ew        *epochWriter
	held      []arrow.RecordBatch
	heldBytes int64
	rows      int64

	laneThreshold  int64 // DefaultLaneThreshold; tests lower it
	lastEpochBytes int64 // Arrow bytes of the previous epoch written here

	// Background commits (stage.AsyncSink), switched on by Durable.
	async    bool
	pending  *pendingCommit // the epoch committing in the background, nil when none
	durable  chan struct{}
	settled  uint64 // the newest epoch durable in the table (committed or skipped)
	reported uint64 // the newest epoch Settle returned

	committed, skipped int
	rowsTotal          int64
	commitTime         time.Duration
}

// New validates cfg (usage errors name the flag).
func New(cfg Config) (*Writer, error) {
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
	return &Writer{cfg: cfg, laneThreshold: DefaultLaneThreshold}, nil
}

// Flow returns the flow id (the txn appId) once Open has run.
func (w *Writer) Flow() string { return w.flow }

// Open resolves the flow id, loads the table (if it exists) and checks that the input fits it;
// otherwise it prepares the metadata of the table to create at the first commit.
func (w *Writer) Open(ctx context.Context, env *stage.Env, in *arrow.Schema) (_ *arrow.Schema, err error) {
	env.MarkSink()
	w.env, w.in = env, in
	root := w.cfg.Table
	w.table = delta.NewTable(root, env.Mem)
	w.table.EngineInfo = "streamkit write-delta"
	w.table.Now = env.Now
	if err := w.resolveFlow(env); err != nil {
		return nil, err
	}
	holder := delta.FlowHolder{Tool: Tool}
	if env.Dir != nil {
		holder.Checkpoint = env.Dir.Path
	}
	if w.lock, err = delta.LockFlow(ctx, root, w.flow, 0, holder); err != nil {
		return nil, fmt.Errorf("write-delta: %w", err)
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
		if len(w.promoted) > 0 {
			props = w.promotedProperties()
			for k, v := range w.cfg.Properties {
				props[k] = v
			}
		}
		p, m, err := delta.NewTableMetadata(w.writeSchema, delta.CreateOptions{
			PartitionColumns: w.partitionBy, Configuration: props, Now: env.Now(),
			AllowArbitraryProperties: w.cfg.AllowArbitraryProperties})
		if err != nil {
			return nil, fmt.Errorf("write-delta: table %s: %w", root, err)
		}
		w.createProto, w.createMeta, w.meta = p, m, m
	} else if err := w.adopt(snap); err != nil {
		return nil, err
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

// resolveFlow sets w.flow: the FlowFile of the checkpoint directory, else --flow, else a new
// UUID (stored in the checkpoint directory when there is one). In a child of keyby --shards
// ($STREAMKIT_SHARD = i), --flow NAME becomes NAME-shard-i, so every shard commits its own txn
// (a generated flow differs per shard anyway: each shard has its own checkpoint directory).
func (w *Writer) resolveFlow(env *stage.Env) error {
	if shard := stage.ShardName(); shard != "" && w.cfg.Flow != "" {
		// A child of keyby --shards N: each shard is its own flow (an append flow of the table).
		w.cfg.Flow += "-shard-" + shard
	}
	if env.Dir == nil {
		w.flow = w.cfg.Flow
		if w.flow == "" {
			w.flow = uuid.NewString()
			env.Log.Warn("no checkpoint directory: this run commits under a new flow id, so a restart cannot be exactly-once (use --checkpoint or $"+stage.EnvCheckpoint+")",
				"flow", w.flow)
		}
		return nil
	}
	path := filepath.Join(env.Dir.Path, FlowFile)
	var rec flowRecord
	err := state.ReadJSON(path, &rec)
	switch {
	case err == nil:
		if w.cfg.Flow != "" && w.cfg.Flow != rec.Flow {
			return stage.Usagef("write-delta: checkpoint %s belongs to flow %q, not --flow %q; use the original flow id or a new checkpoint directory",
				env.Dir.Path, rec.Flow, w.cfg.Flow)
		}
		if rec.Table != w.cfg.Table {
			return stage.Usagef("write-delta: checkpoint %s belongs to table %s, not %s; use a new checkpoint directory",
				env.Dir.Path, rec.Table, w.cfg.Table)
		}
		w.flow, w.rec = rec.Flow, rec
		if rec.ID == "" { // written by an earlier streamkit: give the checkpoint its identity
			w.rec.ID = uuid.NewString()
			return state.WriteJSON(env.Dir.Path, FlowFile, w.rec)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		c, err := env.Dir.Committed()
		if err != nil {
			return err
		}
		if c > 0 && w.cfg.Flow == "" {
			return fmt.Errorf("write-delta: checkpoint %s has committed epochs but no %s: pass the original flow id with --flow", env.Dir.Path, FlowFile)
		}
		w.flow = w.cfg.Flow
		if w.flow == "" {
			w.flow = uuid.NewString()
		}
		w.rec = flowRecord{Flow: w.flow, Table: w.cfg.Table, Created: time.Now().UTC(), ID: uuid.NewString()}
		w.fresh = true
		return state.WriteJSON(env.Dir.Path, FlowFile, w.rec)
	default:
		return err
	}
}

// buildWriteSchema appends the --with constant columns to the input schema and checks that
// every column has a Delta type.
func (w *Writer) buildWriteSchema(in *arrow.Schema, snap *delta.Snapshot) error {
	fields := slices.Clone(in.Fields())
	var tableSc *arrow.Schema
	if snap != nil {
		var err error
		if tableSc, err = snap.ArrowSchema(); err != nil {
			return fmt.Errorf("write-delta: table %s: %w", w.cfg.Table, err)
		}
	}
	for _, c := range w.cfg.With {
		for _, f := range fields {
			if strings.EqualFold(f.Name, c.Name) {
				return stage.Usagef("write-delta: --with %s: the input already has a column %s", c.Name, f.Name)
			}
		}
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if tableSc != nil {
			for _, f := range tableSc.Fields() {
				if strings.EqualFold(f.Name, c.Name) {
					typ = f.Type
				}
			}
		}
		k, err := codec.NewConstant(w.env.Mem, c.Name, c.Value, typ, "table's")
		if err != nil {
			return stage.Usagef("write-delta: %v", err)
		}
		w.consts = append(w.consts, k)
		fields = append(fields, arrow.Field{Name: c.Name, Type: typ, Nullable: true})
	}
	var err error
	var conf map[string]string
	if snap != nil {
		conf = snap.Metadata().Configuration
	}
	if w.partitionBy, err = w.resolvePartitionBy(in, fields, conf); err != nil {
		return err
	}
	fields = append(fields, w.promotedFields()...)
	w.writeSchema = arrow.NewSchema(fields, nil)
	if _, err := delta.FromArrowSchema(w.writeSchema); err != nil {
		return fmt.Errorf("write-delta: table %s: %w", w.cfg.Table, err)
	}
	return nil
}

// safeProperties are delta.* table properties write-delta may change on an existing table
// (they change no protocol obligation).
var safeProperties = map[string]bool{
	"delta.checkpointInterval":            true,
	"delta.logRetentionDuration":          true,
	"delta.deletedFileRetentionDuration":  true,
	"delta.dataSkippingNumIndexedCols":    true,
	"delta.targetFileSize":                true,
	"delta.checkpoint.writeStatsAsJson":   true,
	"delta.checkpoint.writeStatsAsStruct": true,
	"delta.enableExpiredLogCleanup":       true,
	"delta.isolationLevel":                true,
}

// adopt checks the input against an existing table: protocol, partitioning, schema (diff, or
// evolution with --merge-schema), properties.
func (w *Writer) adopt(s *delta.Snapshot) error {
	root := w.cfg.Table
	meta := s.Metadata()
	if len(w.partitionBy) > 0 && !slices.Equal(w.partitionBy, meta.PartitionColumns) {
		given := strings.Join(w.cfg.PartitionBy, ",")
		if len(w.promoted) > 0 {
			given += " (" + w.describePromoted() + ")"
		}
		return stage.Usagef("write-delta: table %s is partitioned by [%s], not --partition-by %s (the partitioning of an existing table cannot change)",
			root, strings.Join(meta.PartitionColumns, ","), given)
	}
	if w.cfg.Mode == ModeOverwrite && strings.EqualFold(meta.Configuration["delta.appendOnly"], "true") {
		return stage.Usagef("write-delta: table %s is append-only (delta.appendOnly=true): --mode overwrite is not allowed", root)
	}
	inSt, err := delta.FromArrowSchema(w.writeSchema)
	if err != nil {
		return fmt.Errorf("write-delta: table %s: %w", root, err)
	}
	merged, changed, mergeErr := delta.MergeSchema(s.Schema(), w.writeSchema)
	if mergeErr != nil {
		return fmt.Errorf("write-delta: the input does not fit table %s:\n  %s\n%w",
			root, strings.Join(schemaDiff(s.Schema(), inSt), "\n  "), mergeErr)
	}
	if w.cfg.MergeSchema && relaxNullability(merged, w.writeSchema.Fields()) {
		changed = true
	}
	if changed && !w.cfg.MergeSchema {
		var lines []string
		for _, l := range schemaDiff(s.Schema(), inSt) {
			if strings.HasPrefix(l, "+") {
				lines = append(lines, l)
			}
		}
		return fmt.Errorf("write-delta: the input has columns that table %s lacks:\n  %s\nuse --merge-schema to add them to the table",
			root, strings.Join(lines, "\n  "))
	}
	newMeta := meta
	var newProto *delta.Protocol
	if changed {
		p := s.Protocol()
		newProto, newMeta = delta.EvolveMetadata(&p, meta, merged)
		w.env.Log.Info("merging the input schema into the table", "table", root,
			"changes", strings.Join(schemaDiff(s.Schema(), inSt), "; "))
	}
	// Table properties.
	var propChanged bool
	conf := map[string]string{}
	for k, v := range newMeta.Configuration {
		conf[k] = v
	}
	for k, v := range w.cfg.Properties {
		if old, ok := conf[k]; ok && old == v {
			continue
		}
		if strings.HasPrefix(k, "delta.") && !safeProperties[k] {
			return stage.Usagef("write-delta: table %s: changing %s of an existing table is not supported (it may need a protocol change); set it when the table is created",
				root, k)
		}
		conf[k] = v
		propChanged = true
	}
	if propChanged {
		m := *newMeta
		m.Configuration = conf
		newMeta = &m
	}
	if changed || propChanged {
		w.pendProto, w.pendMeta = newProto, newMeta
	}
	w.snap = s
	w.meta = newMeta
	return nil
}

// nextEpoch is the epoch the next rows belong to, when it can be known before their barrier:
// one after the last barrier, or after the restored epoch at the start of a checkpointed run.
func (w *Writer) nextEpoch() (uint64, bool) {
	if w.sawBarrier {
		return w.lastBarrier + 1, true
	}
	if w.env.Dir != nil {
		return w.env.Committed + 1, true
	}
	return 0, false
}

// mayBeReplay reports whether the rows arriving now may belong to an epoch the table already
// holds; such rows are held in memory until their barrier decides.
func (w *Writer) mayBeReplay() bool {
	if !w.haveTxn {
		return false
	}
	e, known := w.nextEpoch()
	return !known || e <= uint64(w.txn)
}

// augment adds the constant columns to rec (a new reference).
func (w *Writer) augment(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(w.consts) == 0 && len(w.promoted) == 0 {
		rec.Retain()
		return rec, nil
	}
	n := int(rec.NumRows())
	cols := slices.Clone(rec.Columns())
	var extra []arrow.Array
	defer func() {
		for _, a := range extra {
			a.Release()
		}
	}()
	for _, c := range w.consts {
		a, err := c.Slice(w.env.Mem, n)
		if err != nil {
			return nil, err
		}
		extra = append(extra, a)
		cols = append(cols, a)
	}
	for _, p := range w.promoted {
		a := promotedColumn(w.env.Mem, p.path, rec)
		extra = append(extra, a)
		cols = append(cols, a)
	}
	return array.NewRecordBatch(w.writeSchema, cols, int64(n)), nil
}

// Process writes the rows of one batch into the current epoch's data files (or holds them
// while the epoch may be a replay).
func (w *Writer) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	if rec.NumRows() == 0 {
		return nil
	}
	r, err := w.augment(rec)
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

// write appends rec to the epoch's data files, after any held rows.
func (w *Writer) write(rec arrow.RecordBatch) error {
	if w.ew == nil {
		target := w.cfg.TargetFileSize
		if target == 0 {
			if n, err := cli.ParsePositiveSize(w.meta.Configuration["delta.targetFileSize"]); err == nil {
				target = n
			}
		}
		meta := w.meta
		// Each lane collects delta.DefaultRowGroupSize (8 MiB) of Arrow data per row group.
		opts := delta.WriterOptions{TargetFileSize: target, Compression: w.cfg.Compression,
			TruncateTimestamps: w.cfg.TruncateTimestamps, Allocator: w.env.Mem, Now: w.env.Now}
		// After an epoch large enough to be spread, the next one is spread from its first
		// batch: waiting for the threshold again would leave the other lanes idle for the
		// first threshold's worth of every epoch.
		threshold := w.laneThreshold
		if w.lastEpochBytes > 2*threshold {
			threshold = 0
		}
		w.ew = newEpochWriter(w.cfg.Writers, threshold, func() (*delta.DataWriter, error) {
			return delta.NewDataWriter(w.cfg.Table, meta, opts)
		})
	}
	if err := w.flushHeld(); err != nil {
		return err
	}
	if rec != nil {
		if err := w.ew.write(rec); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}

func (w *Writer) flushHeld() error {
	held := w.held
	w.held, w.heldBytes = nil, 0
	defer func() {
		for _, h := range held {
			h.Release()
		}
	}()
	for _, h := range held {
		if err := w.ew.write(h); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}

// discardEpoch drops the current epoch's rows: held batches are released and data files
// already written are deleted (they were never committed).
func (w *Writer) discardEpoch() error {
	for _, h := range w.held {
		h.Release()
	}
	w.held, w.heldBytes, w.rows = nil, 0, 0
	if w.ew == nil {
		return nil
	}
	files, err := w.ew.abort()
	w.ew = nil
	if err != nil {
		return fmt.Errorf("write-delta: delete uncommitted data files: %w", err)
	}
	if files > 0 {
		w.env.Log.Debug("deleted the data files of a discarded epoch", "files", files)
	}
	return nil
}

// Barrier commits epoch n (its data files and txn), or skips it when the table already holds
// it for this flow or when it had no rows (no empty Delta commit; the table is still created
// by the first epoch, rows or not).
func (w *Writer) Barrier(ctx context.Context, n uint64, _ stage.Emit) error {
	if !w.sawBarrier && w.env.Dir != nil {
		// With a checkpoint, epochs up to the table's txn version are skipped as replays:
		// only a replayable stream may be skipped.
		if err := stage.RequireReplayable(Tool, w.in, "run write-delta without --checkpoint "+
			"(every run then commits its rows under a new flow id; a stream without barriers, a foreign producer's, is committed as one final epoch either way)"); err != nil {
			w.discardEpoch()
			return err
		}
	}
	if err := w.endEpoch(ctx, n, true); err != nil {
		return err
	}
	w.lastBarrier, w.sawBarrier = n, true
	return nil
}

// pendingCommit is an epoch committing in the background: its lanes finish their files, then
// the Delta commit is attempted.
type pendingCommit struct {
	n        uint64
	ew       *epochWriter
	rows     int64
	creating bool // the commit creates the table
	start    time.Time
	done     chan struct{} // closed when adds, res, err and cause are set
	adds     []delta.Add
	res      *delta.CommitResult
	err      error // as reported
	cause    error // the commit's own error
}

// Durable switches the writer to background commits (stage.AsyncSink): Barrier(n) hands
// epoch n to a goroutine that closes its files and commits it while the next epoch's rows are
// encoded. Only appends (the first one may create the table) whose metadata this run does not
// change go to the background; --merge-schema changes, overwrite and a flow takeover's first
// commit stay synchronous (their retries read and change the writer's snapshot), and a
// creation that loses to another writer is completed synchronously by Settle. What
// overlaps is the tail of an epoch (its last row groups, fsync, the commit) with the start of
// the next; memory then holds up to two epochs' row-group buffers.
func (w *Writer) Durable() <-chan struct{} {
	if w.durable == nil {
		w.durable = make(chan struct{}, 1)
	}
	w.async = true
	return w.durable
}

// Settle completes the background commit if it finished (or, with wait, once it finishes)
// and returns the newest epoch durable in the table that it did not return before (0: none),
// or the commit's error; the data files of a failed commit are deleted.
func (w *Writer) Settle(ctx context.Context, wait bool) (uint64, error) {
	if err := w.settle(ctx, wait); err != nil {
		return 0, err
	}
	if w.settled > w.reported {
		w.reported = w.settled
		return w.reported, nil
	}
	return 0, nil
}

func (w *Writer) settle(ctx context.Context, wait bool) error {
	p := w.pending
	if p == nil {
		return nil
	}
	if wait {
		<-p.done
	} else {
		select {
		case <-p.done:
		default:
			return nil
		}
	}
	w.pending = nil
	var ce *delta.ConflictError
	if p.creating && errors.As(p.cause, &ce) && ce.Kind == delta.ConflictMetadata {
		// Another writer created the table first: the synchronous path joins it (or skips
		// the epoch if that table already holds it for this flow) with the files written.
		err := w.commit(ctx, p.n, p.adds, p.rows)
		if err != nil {
			p.ew.abort()
		}
		if errors.Is(err, errSkipAfterJoin) {
			w.settled = p.n
			return nil
		}
		return err
	}
	if p.err != nil {
		p.ew.abort()
		return p.err
	}
	return w.committedEpoch(ctx, p.n, p.res, p.rows, len(p.adds), p.start)
}

// canCommitAsync reports whether the current epoch may commit in the background: a plain
// append of files (creating the table if there is none yet), with nothing a retry must
// change. A creation that loses to another writer is retried synchronously by settle.
func (w *Writer) canCommitAsync() bool {
	return w.async && w.ew != nil && (w.snap != nil || w.createMeta != nil) && w.pendMeta == nil &&
		w.cfg.Mode == ModeAppend && !w.takeover
}

// commitAsync hands the current epoch (its lanes, held rows already written) to a background
// commit as epoch n.
func (w *Writer) commitAsync(ctx context.Context, n uint64) {
	p := &pendingCommit{n: n, ew: w.ew, rows: w.rows, creating: w.snap == nil, start: time.Now(), done: make(chan struct{})}
	w.ew, w.rows, w.pending = nil, 0, p
	req := w.commitRequest(n, p.rows)
	go func() {
		defer func() {
			close(p.done)
			select {
			case w.durable <- struct{}{}:
			default:
			}
		}()
		if p.adds, p.err = p.ew.close(); p.err != nil {
			p.err = fmt.Errorf("write-delta: epoch %d: %w", n, p.err)
			return
		}
		setAdds(&req, p.adds, p.rows, 0)
		if p.res, p.cause = w.table.Commit(ctx, req); p.cause != nil {
			p.err = w.commitError(p.cause, n)
		}
	}()
}

// endEpoch commits or skips the current epoch as epoch n, in the background when async and
// canCommitAsync allow.
func (w *Writer) endEpoch(ctx context.Context, n uint64, async bool) error {
	if n > math.MaxInt64 {
		return fmt.Errorf("write-delta: epoch %d does not fit a Delta txn version", n)
	}
	// The previous epoch's commit decides whether this one is a replay (w.txn).
	if err := w.settle(ctx, true); err != nil {
		return err
	}
	if w.haveTxn && int64(n) <= w.txn {
		if w.takeover && n > w.ownEpoch {
			return stage.Usagef("write-delta: --flow-takeover: epoch %d of this run is not above the txn version %d that table %s holds for flow %q: "+
				"its rows would be skipped, not written. Take over only with a pipeline whose epochs continue past %d, or write under another --flow",
				n, w.txn, w.cfg.Table, w.flow, w.txn)
		}
		rows := w.rows
		if err := w.discardEpoch(); err != nil {
			return err
		}
		w.skipped++
		w.settled = n
		w.env.Log.Info("epoch already committed to the table: skipped", "epoch", n, "flow", w.flow, "txn_version", w.txn, "rows", rows)
		return nil
	}
	if w.rows == 0 && w.ew == nil && len(w.held) == 0 && w.snap != nil && w.pendMeta == nil && !w.takeover {
		// An epoch without rows (an idle source's barrier) makes no Delta commit: the table's
		// txn stays at the last epoch with rows, which a replay compares with as before.
		if err := w.noteEmptyEpoch(); err != nil {
			return err
		}
		w.settled = n
		w.env.Log.Debug("epoch without rows: no Delta commit", "epoch", n)
		return nil
	}
	if w.ew != nil || len(w.held) > 0 {
		if err := w.write(nil); err != nil { // held rows go into the epoch's files
			return err
		}
		w.lastEpochBytes = w.ew.bytes
	}
	if async && w.canCommitAsync() {
		w.commitAsync(ctx, n)
		return nil
	}
	var adds []delta.Add
	if w.ew != nil {
		var err error
		if adds, err = w.ew.close(); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	rows := w.rows
	err := w.commit(ctx, n, adds, rows)
	if w.ew != nil {
		if err != nil {
			w.ew.abort()
		}
		w.ew = nil
	}
	w.rows = 0
	if errors.Is(err, errSkipAfterJoin) {
		w.settled = n
		return nil
	}
	return err
}

// commit writes epoch n as one Delta commit, creating the table or evolving its metadata when
// needed, and retries conflicts that can be resolved without rewriting data.
func (w *Writer) commit(ctx context.Context, n uint64, adds []delta.Add, rows int64) error {
	start := time.Now()
	root := w.cfg.Table
	overwrite := w.cfg.Mode == ModeOverwrite && len(adds) > 0
	for attempt := 1; ; attempt++ {
		req := w.commitRequest(n, rows)
		removed := 0
		if overwrite {
			req.Mode = delta.Overwrite
			if w.snap != nil {
				removed = w.snap.NumFiles()
			}
		}
		setAdds(&req, adds, rows, removed)
		creating := w.snap == nil
		res, err := w.table.Commit(ctx, req)
		if err == nil {
			res.Attempts += attempt - 1
			return w.committedEpoch(ctx, n, res, rows, len(adds), start)
		}
		var ce *delta.ConflictError
		if errors.As(err, &ce) {
			switch {
			case creating && ce.Kind == delta.ConflictMetadata:
				// Another writer created the table first (e.g. several flows starting at once):
				// append to it if it has exactly the schema and partitioning our files were
				// written for.
				if jerr := w.joinCreatedTable(ctx); jerr != nil {
					return jerr
				}
				if w.haveTxn && int64(n) <= w.txn {
					w.skipped++
					w.env.Log.Info("epoch already committed to the table: skipped", "epoch", n, "flow", w.flow)
					return errSkipAfterJoin
				}
				continue
			case overwrite && (ce.Kind == delta.ConflictAppend || ce.Kind == delta.ConflictDelete) && attempt < 20:
				ns, uerr := w.snap.Update(ctx)
				if uerr != nil {
					return fmt.Errorf("write-delta: %w", uerr)
				}
				if ns.Metadata().SchemaString != w.meta.SchemaString || !slices.Equal(ns.PartitionColumns(), w.meta.PartitionColumns) {
					return fmt.Errorf("write-delta: table %s: its metadata changed concurrently (%v); restart write-delta: the epoch will be replayed", root, err)
				}
				w.snap = ns
				continue
			}
		}
		return w.commitError(err, n)
	}
}

// commitRequest is the commit of epoch n with rows rows, before its add actions and metrics
// (setAdds): with the table's protocol and metadata when it creates the table or changes them.
func (w *Writer) commitRequest(n uint64, rows int64) delta.CommitRequest {
	outputMode := "Append"
	if w.cfg.Mode == ModeOverwrite {
		outputMode = "Complete"
	}
	req := delta.CommitRequest{
		Read:                w.snap,
		Txn:                 &delta.Txn{AppID: w.flow, Version: int64(n)},
		Operation:           "STREAMING UPDATE",
		OperationParameters: map[string]string{"outputMode": outputMode, "queryId": w.flow, "epochId": strconv.FormatUint(n, 10)},
	}
	if w.snap == nil {
		req.Protocol, req.Metadata = w.createProto, w.createMeta
	} else if w.pendMeta != nil {
		req.Protocol, req.Metadata = w.pendProto, w.pendMeta
	}
	return req
}

// setAdds puts the epoch's add actions into req with the operation metrics Spark records for a
// streaming update.
func setAdds(req *delta.CommitRequest, adds []delta.Add, rows int64, removed int) {
	var bytes int64
	for _, a := range adds {
		bytes += a.Size
	}
	req.Adds = adds
	req.OperationMetrics = map[string]string{
		"numAddedFiles":   strconv.Itoa(len(adds)),
		"numRemovedFiles": strconv.Itoa(removed),
		"numOutputRows":   strconv.FormatInt(rows, 10),
		"numOutputBytes":  strconv.FormatInt(bytes, 10),
	}
}

// commitError explains a failed commit of epoch n that is not retried.
func (w *Writer) commitError(err error, n uint64) error {
	var ce *delta.ConflictError
	if errors.As(err, &ce) {
		if ce.Kind == delta.ConflictTransaction {
			return fmt.Errorf("write-delta: table %s: %v: only one write-delta may run per flow (%s)", w.cfg.Table, err, w.flow)
		}
		return fmt.Errorf("write-delta: table %s: %w; another writer changed the table's metadata or protocol: restart write-delta to continue (epoch %d is replayed, nothing is lost)", w.cfg.Table, err, n)
	}
	return fmt.Errorf("write-delta: epoch %d: %w", n, err)
}

// committedEpoch records the successful commit res of epoch n (rows rows in files files,
// started at start).
func (w *Writer) committedEpoch(ctx context.Context, n uint64, res *delta.CommitResult, rows int64, files int, start time.Time) error {
	if err := w.committedAt(ctx, res); err != nil {
		return err
	}
	w.txn, w.haveTxn, w.takeover = int64(n), true, false
	w.settled = n
	if w.rec.TxnBeforeEmpty != nil {
		w.rec.TxnBeforeEmpty = nil
		if err := w.writeFlowFile(); err != nil {
			return err
		}
	}
	w.committed++
	w.rowsTotal += rows
	d := time.Since(start)
	w.commitTime += d
	w.env.Log.Debug("committed epoch", "epoch", n, "version", res.Version, "rows", rows, "files", files,
		"attempts", res.Attempts, "ms", d.Milliseconds())
	return nil
}

// noteEmptyEpoch records, before the commit marker of the first of a run of epochs without
// rows, the txn version the table keeps for the flow meanwhile (flowRecord.TxnBeforeEmpty).
func (w *Writer) noteEmptyEpoch() error {
	if w.env.Dir == nil || w.rec.TxnBeforeEmpty != nil {
		return nil
	}
	v := int64(-1)
	if w.haveTxn {
		v = w.txn
	}
	w.rec.TxnBeforeEmpty = &v
	return w.writeFlowFile()
}

// writeFlowFile rewrites FlowFile from w.rec.
func (w *Writer) writeFlowFile() error {
	if err := state.WriteJSON(w.env.Dir.Path, FlowFile, w.rec); err != nil {
		return fmt.Errorf("write-delta: record the flow in %s: %w", w.env.Dir.Path, err)
	}
	return nil
}

// tableHoldsCommitted reports whether the table's txn for the flow covers what the checkpoint
// records as committed: the newest committed epoch, or, after epochs without rows, the txn
// version before them (a commit after them leaves the txn higher, never lower).
func (w *Writer) tableHoldsCommitted() bool {
	if p := w.rec.TxnBeforeEmpty; p != nil {
		return *p < 0 && w.snap != nil || w.haveTxn && w.txn >= *p
	}
	return w.haveTxn && uint64(w.txn) >= w.ownEpoch
}

// errSkipAfterJoin is returned by commit when the table another writer created already holds
// the epoch for our flow; endEpoch treats it as a skip (the data files are deleted).
var errSkipAfterJoin = errors.New("epoch already committed")

// committedAt adopts the snapshot after a successful commit.
func (w *Writer) committedAt(ctx context.Context, res *delta.CommitResult) error {
	if res.CheckpointErr != nil {
		w.env.Log.Warn("could not write a Delta checkpoint (the commit itself is durable)", "version", res.Version, "err", res.CheckpointErr)
	}
	if res.LogCleanupErr != nil {
		w.env.Log.Warn("could not clean up expired Delta log files", "version", res.Version, "err", res.LogCleanupErr)
	} else if lc := res.LogCleanup; lc != nil && len(lc.Files) > 0 {
		w.env.Log.Info("deleted expired Delta log files", "files", len(lc.Files), "before_checkpoint", lc.Checkpoint,
			"cutoff", lc.Cutoff.Format(time.RFC3339))
	}
	s := res.Snapshot
	if s == nil {
		var err error
		if s, err = w.table.Snapshot(ctx); err != nil {
			return fmt.Errorf("write-delta: reload table after commit %d: %w", res.Version, err)
		}
	}
	if err := w.bindTable(s.Metadata().ID); err != nil {
		return err
	}
	w.snap = s
	w.meta = s.Metadata()
	w.pendProto, w.pendMeta = nil, nil
	return nil
}

// joinCreatedTable loads a table created concurrently by another writer and checks that our
// data files (written for w.createMeta) fit it.
func (w *Writer) joinCreatedTable(ctx context.Context) error {
	root := w.cfg.Table
	s, err := w.table.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("write-delta: table %s was created concurrently, but loading it failed: %w", root, err)
	}
	if err := s.CheckWrite(); err != nil {
		return fmt.Errorf("write-delta: cannot write to table %s: %w", root, err)
	}
	m := s.Metadata()
	if m.SchemaString != w.createMeta.SchemaString || !slices.Equal(m.PartitionColumns, w.createMeta.PartitionColumns) {
		return fmt.Errorf("write-delta: table %s was created concurrently by another writer with another schema or partitioning; restart write-delta to append to it (the epoch is replayed)", root)
	}
	w.env.Log.Info("the table was created concurrently by another writer; appending to it", "table", root, "version", s.Version())
	w.snap, w.meta = s, m
	w.txn, w.haveTxn = s.TxnVersion(w.flow)
	return nil
}

// End commits rows that arrived after the last barrier when the stream ends with final (see
// the package documentation), refuses them with pause, and creates the table when the stream
// carried no epoch at all.
func (w *Writer) End(ctx context.Context, kind codec.EndKind, _ stage.Emit) error {
	if err := w.settle(ctx, true); err != nil {
		return err
	}
	trailing := w.rows > 0
	switch {
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
			if err := state.WriteCommit(w.env.Dir.Path, e, Tool); err != nil {
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

func (w *Writer) version() int64 {
	if w.snap == nil {
		return -1
	}
	return w.snap.Version()
}

// createEmpty creates the table from the stream's schema when the stream carried no epoch.
func (w *Writer) createEmpty(ctx context.Context) error {
	props, _ := encodeJSON(w.createMeta.Configuration)
	parts, _ := encodeJSON(w.createMeta.PartitionColumns)
	res, err := w.table.Commit(ctx, delta.CommitRequest{
		Protocol: w.createProto, Metadata: w.createMeta, Operation: "CREATE TABLE",
		OperationParameters: map[string]string{"isManaged": "false", "partitionBy": parts, "properties": props},
	})
	var ce *delta.ConflictError
	if errors.As(err, &ce) && ce.Kind == delta.ConflictMetadata {
		return nil // created concurrently: there is a table, as wanted
	}
	if err != nil {
		return fmt.Errorf("write-delta: create table: %w", err)
	}
	w.env.Log.Info("created an empty table (the stream carried no rows)", "table", w.cfg.Table)
	return w.committedAt(ctx, res)
}

// Close deletes the data files of an epoch that was not committed (an error or an abort) and
// releases held batches.
func (w *Writer) Close() error {
	// A background commit still running finishes first: its files are deleted only if it
	// failed (a commit that succeeded is in the table, whether or not its markers were
	// written; a restart skips its epoch by the txn).
	if p := w.pending; p != nil {
		<-p.done
		w.pending = nil
		if p.err != nil {
			p.ew.abort()
		}
	}
	err := w.discardEpoch()
	// A run that failed before its first commit (malformed input, a truncated stream) created
	// no table: Finish removes the lock it made, so no directory is left that looks like one.
	w.lock.Finish()
	for _, c := range w.consts {
		c.Release()
	}
	return err
}

func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Watermark is ignored: a Delta table has no notion of event-time progress.
func (w *Writer) Watermark(context.Context, time.Time, stage.Emit) error { return nil }
