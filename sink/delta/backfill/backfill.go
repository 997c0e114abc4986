// Package backfill runs `streamkit backfill`'s once flow: a bounded flow that copies files or
// a Delta table into a target Delta table once (Lakeflow's "once" append flow), recorded in the
// target's log as a txn action {appId = flow name}; optionally with MERGE-style insert-only
// deduplication against the target, an overlap check against a live flow writing the same
// table, constant columns, and a dry-run plan.
//
// # Exactly once, and MERGE under concurrency
//
// All data files of a backfill are committed in one Delta commit carrying txn {appId: flow,
// version: n}: either everything lands or nothing does (files written by a run that dies are
// never referenced). A later run finds the txn and does nothing (--rerun commits version n+1).
// Without dedup the commit is a blind append: commits of concurrent writers (a live
// write-delta flow) never conflict with it and it is retried at the next version. With dedup
// the commit depends on what the target holds, so a lost race is not retried blindly: the keys
// of the files committed meanwhile are checked, rows of the backfill whose key arrived
// concurrently are removed from its files (which are rewritten), and the commit is tried again
// — the effect of Delta's conflict detection for MERGE followed by a retry.
//
// The data files are written by the sink's [deltasink.WriterPool] with the constant columns of
// a [deltasink.Augmenter] (package sink/delta), as write-delta writes an epoch; tools/backfill
// turns the command's flags into a [Config] and calls [Run].
package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rescue"
	dl "github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	rd "github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// testHookBeforeCommit, when set by a test, runs before every commit attempt.
var testHookBeforeCommit func()

// ExitOverlap is the exit code of a backfill that did not run because the overlap with the
// live flow is not large enough yet (--min-overlap).
const ExitOverlap = 3

// KV is a COL=VALUE option (--with, --stream-filter).
type KV struct{ Key, Value string }

// Config are backfill's options.
type Config struct {
	// FromDelta is the source Delta table (--from-delta); FromVersion its version (-1:
	// latest) and FromWhere a partition filter on it (the partition syntax of read-delta
	// --where, source/delta.Filter).
	FromDelta   string
	FromVersion int64
	FromWhere   string
	// FromStore is the opened source table root (tools/cli.OpenStore); nil: the local
	// directory FromDelta.
	FromStore storage.Store
	// Files, when set, is the file source (--from PATTERN with read-files options), opened
	// without a checkpoint directory: every matching file is read once.
	Files func(ctx context.Context, env *stage.Env) (stage.Source, error)
	// FilesDesc names the file source in messages and the plan (the patterns).
	FilesDesc []string
	// To is the target table; Flow the flow name (the txn appId).
	To, Flow string
	// ToStore is the opened target table root (tools/cli.OpenStore: a local directory or a
	// bucket prefix); nil: the local directory To.
	ToStore storage.Store
	// Rerun runs a flow that already ran again (txn version + 1).
	Rerun bool
	// Dedup turns on MERGE-style insert-only dedup on DedupCols (dot paths; empty: every
	// source column, --with constants excluded).
	Dedup     bool
	DedupCols []string
	// OverlapCol, MinOverlap, StreamFilter, OverlapDeadline: the overlap check (see the
	// command's help).
	OverlapCol      string
	MinOverlap      string
	StreamFilter    []KV
	OverlapDeadline time.Duration
	// With adds constant columns.
	With []KV
	// Plan prints what would be done as JSON on Stdout and writes nothing.
	Plan bool
	// PartitionBy partitions a new target table (must match an existing one's).
	PartitionBy []string
	// MergeSchema adds source columns the target lacks.
	MergeSchema bool
	// Compression and TargetFileSize of the data files (see write-delta).
	Compression    string
	TargetFileSize int64
	// TruncateTimestamps drops the sub-microsecond digits of nanosecond timestamps (floored,
	// as write-delta --truncate-timestamps does) instead of failing on them.
	TruncateTimestamps bool
	// Writers is the number of data writers encoding Parquet in parallel (each writes its own
	// files); default GOMAXPROCS, at most 4.
	Writers int
	// LockWait waits this long for another run of the flow to finish (0: fail at once).
	LockWait time.Duration
	// Progress is auto (a bar on a terminal), json or off.
	Progress string
	// Now is the clock (the overlap deadline); default time.Now.
	Now func() time.Time
	// Stdout receives the plan; Stderr the progress; Log messages.
	Stdout, Stderr io.Writer
	Log            *slog.Logger
	// Mem allocates Arrow memory; default memory.DefaultAllocator.
	Mem memory.Allocator
}

// Validate checks the options (usage errors name the flag).
func (c *Config) Validate() error {
	switch {
	case c.FromDelta == "" && c.Files == nil:
		return stage.Usagef("backfill: give --from PATTERN or --from-delta TABLE")
	case c.FromDelta != "" && c.Files != nil:
		return stage.Usagef("backfill: give --from or --from-delta, not both")
	case c.To == "":
		return stage.Usagef("backfill: --to TABLE is required")
	case strings.TrimSpace(c.Flow) == "":
		return stage.Usagef("backfill: --flow NAME is required (it records that the backfill ran, as the txn appId in the target)")
	case c.FromWhere != "" && c.FromDelta == "":
		return stage.Usagef("backfill: --from-where filters a --from-delta source")
	}
	if len(c.DedupCols) > 0 {
		c.Dedup = true
	}
	if c.OverlapCol == "" && (c.MinOverlap != "" || len(c.StreamFilter) > 0 || c.OverlapDeadline != 0) {
		return stage.Usagef("backfill: --min-overlap, --stream-filter and --overlap-deadline need --overlap-col")
	}
	if c.OverlapCol != "" && c.MinOverlap == "" {
		c.MinOverlap = "0"
	}
	if c.OverlapDeadline < 0 {
		return stage.Usagef("backfill: --overlap-deadline must be positive")
	}
	seen := map[string]bool{}
	for _, kv := range c.With {
		if kv.Key == "" {
			return stage.Usagef("backfill: --with needs COL=VALUE")
		}
		if seen[strings.ToLower(kv.Key)] {
			return stage.Usagef("backfill: --with %s given twice", kv.Key)
		}
		seen[strings.ToLower(kv.Key)] = true
	}
	for _, kv := range c.StreamFilter {
		if kv.Key == "" {
			return stage.Usagef("backfill: --stream-filter needs COL=VALUE")
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Mem == nil {
		c.Mem = memory.DefaultAllocator
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	return nil
}

// plan is the --plan output.
type plan struct {
	Flow         string            `json:"flow"`
	Target       string            `json:"target"`
	TargetExists bool              `json:"target_exists"`
	TargetVer    *int64            `json:"target_version,omitempty"`
	AlreadyRan   bool              `json:"already_ran"`
	RanAtVersion *int64            `json:"ran_txn_version,omitempty"`
	Rerun        bool              `json:"rerun"`
	WouldWrite   bool              `json:"would_write"`
	Reason       string            `json:"reason,omitempty"`
	Source       *planSource       `json:"source,omitempty"`
	With         map[string]string `json:"with,omitempty"`
	Overlap      *planOverlap      `json:"overlap,omitempty"`
	Dedup        *planDedup        `json:"dedup,omitempty"`
	RowsToWrite  int64             `json:"rows_to_write"`
}

type planSource struct {
	Kind     string     `json:"kind"` // delta or files
	Table    string     `json:"table,omitempty"`
	Version  int64      `json:"version,omitempty"`
	Where    string     `json:"where,omitempty"`
	Patterns []string   `json:"patterns,omitempty"`
	NumFiles int        `json:"num_files"`
	Rows     int64      `json:"rows"` // -1 when unknown before reading
	Bytes    int64      `json:"bytes"`
	Files    []planFile `json:"files"`
}

type planFile struct {
	Path  string `json:"path"`
	Rows  int64  `json:"rows"` // -1 when the log has no statistics
	Bytes int64  `json:"bytes"`
}

type planDedup struct {
	Columns            []string `json:"columns"`
	TargetRows         int64    `json:"target_rows"`
	TargetKeys         int      `json:"target_keys"`
	SourceRows         int64    `json:"source_rows"`
	HitsInTarget       int64    `json:"key_hits_in_target"`
	DuplicatesInSource int64    `json:"duplicates_in_source"`
}

// run is the state of one backfill.
type run struct {
	cfg    Config
	root   string        // the target's location, for messages
	store  storage.Store // the target's root
	tbl    *dl.Table
	lock   *dl.FlowLock // the flow's lock (nil with --plan)
	snap   *dl.Snapshot // nil when the target does not exist
	txnVer int64        // txn version to commit
	in     input
	prog   *stage.JobProgress
	plan   plan

	// target shape
	proto  *dl.Protocol // set when this run creates the table or changes its metadata
	meta   *dl.Metadata
	create bool
	target *arrow.Schema // canonical Arrow schema of the target

	aug         deltasink.Augmenter // the --with constants; drops dropRescued
	dropRescued int                 // index of the source's _rescued_data column to drop, -1: none
	keyEnc      *codec.KeyEncoder
	keys        *keySet
	keyBuf      []byte
	res         []byte // per-row InsertBlock results

	bmax *extremum // backfill max of the overlap column

	adds    []dl.Add
	read    int64
	written int64
	hits    int64 // rows dropped: key already in the target
	dups    int64 // rows dropped: key repeated within the backfill
}

// Run executes the backfill.
func Run(ctx context.Context, cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	store := cfg.ToStore
	if store == nil {
		if store, err = storage.Local(cfg.To, 0); err != nil {
			return err
		}
	}
	root := store.Location()
	r := &run{cfg: cfg, root: root, store: store, tbl: dl.OpenTable(store, cfg.Mem)}
	r.plan = plan{Flow: cfg.Flow, Target: root, Rerun: cfg.Rerun}
	if !cfg.Plan {
		lock, err := lockFlow(ctx, r.tbl, cfg.Flow, cfg.LockWait)
		if err != nil {
			return err
		}
		r.lock = lock
		defer lock.Finish() // a run that created no table leaves no lock file behind
	}
	if err := r.loadTarget(ctx); err != nil {
		return err
	}
	if r.plan.AlreadyRan && !cfg.Rerun {
		r.plan.Reason = fmt.Sprintf("flow %q already ran (txn version %d in %s); use --rerun to run it again", cfg.Flow, *r.plan.RanAtVersion, root)
		if cfg.Plan {
			return r.printPlan()
		}
		// A warning, not info: if the input is new data (another day's files under the same
		// --flow), none of it is written.
		cfg.Log.Warn("backfill already done; nothing to do: no row of this input is written", "flow", cfg.Flow, "target", root, "txn_version", *r.plan.RanAtVersion,
			"hint", "a backfill flow runs once; for new input use another --flow, or --rerun to append this input again")
		return nil
	}
	if err := r.openInput(ctx); err != nil {
		return err
	}
	defer r.in.Close()
	r.plan.Source = r.in.Describe()
	if err := r.prepareTarget(); err != nil {
		return err
	}
	defer r.aug.Release()
	r.prog = stage.StartJobProgress(cfg.Stderr, cfg.Progress, "backfill", r.in.TotalRows())
	defer r.prog.Stop()

	// The overlap check needs the backfill's max: before the main pass when the source can
	// read one column cheaply, else during it (and the written files are dropped on failure).
	overlapDone := false
	if cfg.OverlapCol != "" {
		if cs, ok := r.in.(columnScanner); ok && !r.hasConst(cfg.OverlapCol) {
			r.prog.SetPhase("overlap check")
			if err := r.sourceMax(ctx, cs); err != nil {
				return err
			}
			if err := r.checkOverlap(ctx); err != nil {
				return err
			}
			overlapDone = true
		}
	}
	if r.cfg.Dedup {
		r.prog.SetPhase("loading target keys")
		if err := r.loadKeys(ctx); err != nil {
			return err
		}
	}
	r.prog.SetPhase("reading")
	if err := r.mainPass(ctx); err != nil {
		r.abort()
		return err
	}
	if cfg.OverlapCol != "" && !overlapDone {
		if err := r.checkOverlap(ctx); err != nil {
			r.abort()
			return err
		}
	}
	r.plan.RowsToWrite = r.written
	if _, files := r.in.(*sourceInput); files {
		r.plan.Source = r.in.Describe() // rows are known now
	}
	if r.plan.Dedup != nil {
		r.plan.Dedup.SourceRows = r.read
		r.plan.Dedup.HitsInTarget = r.hits
		r.plan.Dedup.DuplicatesInSource = r.dups
	}
	if cfg.Plan {
		ov := r.plan.Overlap
		r.plan.WouldWrite = ov == nil || ov.OK || ov.DeadlinePassed
		r.prog.Stop()
		r.prog = stage.StartJobProgress(io.Discard, stage.ProgressOff, "backfill", 0)
		return r.printPlan()
	}
	r.prog.SetPhase("committing")
	return r.commit(ctx)
}

func (r *run) printPlan() error {
	enc := json.NewEncoder(r.cfg.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r.plan)
}

func (r *run) abort() {
	r.removeFiles(r.adds)
	r.adds = nil
}

// removeFiles deletes data files this run wrote and will not commit.
func (r *run) removeFiles(adds []dl.Add) {
	for _, a := range adds {
		if p, err := dl.DecodePath(a.Path); err == nil {
			r.store.Remove(context.Background(), p) // best effort: an uncommitted file is invisible anyway
		}
	}
}

// loadTarget loads the target snapshot (if any) and the flow's txn.
func (r *run) loadTarget(ctx context.Context) error {
	ok, err := r.tbl.Exists()
	if err != nil {
		return fmt.Errorf("backfill: target %s: %w", r.root, err)
	}
	r.txnVer = 1
	if !ok {
		return nil
	}
	if r.snap, err = r.tbl.Snapshot(ctx); err != nil {
		return fmt.Errorf("backfill: target %s: %w", r.root, err)
	}
	if !r.cfg.Plan {
		if err := r.snap.CheckWrite(); err != nil {
			return fmt.Errorf("backfill: target %s: %w", r.root, err)
		}
	}
	v := r.snap.Version()
	r.plan.TargetExists, r.plan.TargetVer = true, &v
	if tv, ok := r.snap.TxnVersion(r.cfg.Flow); ok {
		r.plan.AlreadyRan, r.plan.RanAtVersion = true, &tv
		r.txnVer = tv + 1
	}
	return nil
}

func (r *run) openInput(ctx context.Context) error {
	if r.cfg.FromDelta != "" {
		src := r.cfg.FromStore
		if src == nil {
			var err error
			if src, err = storage.Local(r.cfg.FromDelta, 0); err != nil {
				return err
			}
		}
		in, err := openDelta(ctx, r.cfg.FromDelta, src, r.cfg.FromVersion, r.cfg.FromWhere, r.cfg.Mem)
		if err != nil {
			return err
		}
		if src.Location() == r.root {
			in.Close()
			return stage.Usagef("backfill: --from-delta and --to are the same table")
		}
		r.in = in
		return nil
	}
	in, err := openFiles(ctx, r.cfg)
	if err != nil {
		return err
	}
	r.in = in
	return nil
}

func (r *run) hasConst(col string) bool {
	for _, kv := range r.cfg.With {
		if strings.EqualFold(kv.Key, col) {
			return true
		}
	}
	return false
}

// prepareTarget fixes the target schema (existing, evolved or new), the constant columns and
// the dedup key.
func (r *run) prepareTarget() error {
	src := r.in.Schema()
	r.dropRescued = -1
	if idx := src.FieldIndices(rescue.Column); len(idx) > 0 && r.snap != nil && !r.cfg.MergeSchema {
		if st := r.snap.Schema(); st.Field(rescue.Column) == nil {
			// read-files always adds _rescued_data; an existing target without it gets none, as
			// long as nothing was rescued (checked per batch).
			r.dropRescued = idx[0]
			src = dropField(src, idx[0])
		}
	}
	for _, kv := range r.cfg.With {
		if len(src.FieldIndices(kv.Key)) > 0 {
			return stage.Usagef("backfill: --with %s: the source already has a column %s", kv.Key, kv.Key)
		}
	}
	var existing *arrow.Schema
	if r.snap != nil {
		var err error
		if existing, err = r.snap.ArrowSchema(); err != nil {
			return err
		}
	}
	// Constants take the target column's type when it has the column, else string.
	fields := slices.Clone(src.Fields())
	for _, kv := range r.cfg.With {
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if existing != nil {
			if idx := fieldIndexFold(existing, kv.Key); idx >= 0 {
				typ = existing.Field(idx).Type
			}
		}
		c, err := codec.NewConstant(r.cfg.Mem, kv.Key, kv.Value, typ, "target's")
		if err != nil {
			return stage.Usagef("backfill: %v", err)
		}
		r.aug.Consts = append(r.aug.Consts, c)
		fields = append(fields, arrow.Field{Name: kv.Key, Type: typ, Nullable: true})
		if r.plan.With == nil {
			r.plan.With = map[string]string{}
		}
		r.plan.With[kv.Key] = kv.Value
	}
	augmented := arrow.NewSchema(fields, nil)
	r.aug.Drop, r.aug.Dropping = r.dropRescued, r.dropRescued >= 0
	if r.snap == nil {
		p, m, err := dl.NewTableMetadata(augmented, dl.CreateOptions{PartitionColumns: r.cfg.PartitionBy})
		if err != nil {
			return stage.Usagef("backfill: %v", err)
		}
		r.proto, r.meta, r.create = p, m, true
	} else {
		r.meta = r.snap.Metadata()
		if len(r.cfg.PartitionBy) > 0 && strings.Join(r.cfg.PartitionBy, ",") != strings.Join(r.meta.PartitionColumns, ",") {
			return stage.Usagef("backfill: --partition-by %s, but %s is partitioned by [%s]", strings.Join(r.cfg.PartitionBy, ","), r.root, strings.Join(r.meta.PartitionColumns, ", "))
		}
		merged, changed, err := dl.MergeSchema(r.snap.Schema(), augmented)
		if err != nil {
			return fmt.Errorf("backfill: the source does not fit the target %s: %w", r.root, err)
		}
		if changed {
			if !r.cfg.MergeSchema {
				var extra []string
				for _, f := range augmented.Fields() {
					if fieldIndexFold(existing, f.Name) < 0 {
						extra = append(extra, f.Name)
					}
				}
				return fmt.Errorf("backfill: the source has columns the target %s lacks (%s); pass --merge-schema to add them", r.root, strings.Join(extra, ", "))
			}
			p := r.snap.Protocol()
			r.proto, r.meta = dl.EvolveMetadata(&p, r.meta, merged)
		}
	}
	st, err := r.meta.Schema()
	if err != nil {
		return err
	}
	if r.target, err = st.ToArrow(); err != nil {
		return err
	}
	if r.cfg.Dedup {
		cols := r.cfg.DedupCols
		if len(cols) == 0 {
			for _, f := range src.Fields() {
				cols = append(cols, f.Name)
			}
		}
		if r.keyEnc, err = codec.NewKeyEncoder(r.target, cols); err != nil {
			return stage.Usagef("backfill: --dedup-cols: %v", err)
		}
		for _, p := range r.keyEnc.Paths {
			top := strings.Split(p.Name, ".")[0]
			if fieldIndexFold(augmented, top) < 0 {
				return stage.Usagef("backfill: --dedup-cols %s: the source has no column %s", p.Name, top)
			}
		}
		r.plan.Dedup = &planDedup{Columns: r.keyEnc.Names()}
	}
	return nil
}

func fieldIndexFold(s *arrow.Schema, name string) int {
	if idx := s.FieldIndices(name); len(idx) > 0 {
		return idx[0]
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// keyColumns returns the top-level columns of the key, as a schema and the names to read.
func (r *run) keyColumns() []string {
	var cols []string
	for _, p := range r.keyEnc.Paths {
		top := strings.Split(p.Name, ".")[0]
		if idx := fieldIndexFold(r.target, top); idx >= 0 {
			top = r.target.Field(idx).Name
		}
		if !slices.Contains(cols, top) {
			cols = append(cols, top)
		}
	}
	return cols
}

// keyRecord conforms the key's top-level columns of rec (any schema holding them) to the
// target's types, as a record with the target's field order restricted to those columns.
func (r *run) keyRecord(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, *codec.KeyEncoder, error) {
	cols := r.keyColumns()
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range cols {
		tf := r.target.Field(fieldIndexFold(r.target, c))
		fields[i] = tf
		idx := fieldIndexFold(rec.Schema(), c)
		if idx < 0 {
			arrs[i] = array.MakeArrayOfNull(r.cfg.Mem, tf.Type, int(rec.NumRows()))
			continue
		}
		a, err := rd.ConformArray(ctx, r.cfg.Mem, c, rec.Column(idx), tf.Type)
		if err != nil {
			return nil, nil, fmt.Errorf("backfill: dedup key: %w", err)
		}
		arrs[i] = a
	}
	sc := arrow.NewSchema(fields, nil)
	enc, err := codec.NewKeyEncoder(sc, r.keyEnc.Names())
	if err != nil {
		return nil, nil, err
	}
	return array.NewRecordBatch(sc, arrs, rec.NumRows()), enc, nil
}

// loadKeys reads the key columns of every live target file into the key set.
func (r *run) loadKeys(ctx context.Context) error {
	var hint int64
	var files []*dl.Add
	if r.snap != nil {
		files = r.snap.Files()
		for _, f := range files {
			hint += max(numRecords(f), 0)
		}
	}
	if n := r.in.TotalRows(); n > 0 {
		hint += n
	}
	r.keys = newKeySet(int(min(hint, 1<<28)), min(runtime.GOMAXPROCS(0), 8))
	if r.snap == nil {
		return nil
	}
	// Scan and encode on one goroutine, insert on this one.
	var rows int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	blocks := make(chan *passItem, 4)
	var err error
	go func() {
		defer close(blocks)
		serr := scanTable(ctx, r.store, r.snap.Metadata(), files, r.keyColumns(), r.cfg.Mem, func(_ *dl.Add, rec arrow.RecordBatch) error {
			it := &passItem{rec: rec}
			if err := r.encodeKeys(ctx, it); err != nil {
				return err
			}
			it.rec = nil
			select {
			case blocks <- it:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if serr != nil {
			blocks <- &passItem{err: serr}
		}
	}()
	for it := range blocks {
		if it.err != nil {
			err = it.err
			cancel()
			continue
		}
		if cap(r.res) < len(it.keys.hashes) {
			r.res = make([]byte, len(it.keys.hashes))
		}
		r.keys.InsertBlock(&it.keys, false, r.res[:len(it.keys.hashes)])
	}
	for _, f := range files {
		rows += max(numRecords(f), 0)
	}
	if err != nil {
		return fmt.Errorf("backfill: read the keys of %s: %w", r.root, err)
	}
	r.plan.Dedup.TargetRows = rows
	r.plan.Dedup.TargetKeys = r.keys.Len()
	r.cfg.Log.Debug("target keys loaded", "keys", r.keys.Len(), "bytes", r.keys.Bytes())
	return nil
}

func dropField(s *arrow.Schema, i int) *arrow.Schema {
	fs := slices.Delete(slices.Clone(s.Fields()), i, i+1)
	return arrow.NewSchema(fs, nil)
}

// augment appends the constant columns to rec (and drops an all-null _rescued_data column
// the target lacks); a new reference.
func (r *run) augment(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if i := r.dropRescued; i >= 0 {
		if rescued := int(rec.NumRows()) - rec.Column(i).NullN(); rescued > 0 {
			return nil, fmt.Errorf("backfill: %d rows have values in %s (fields that did not fit the schema) and the target %s has no such column; pass --merge-schema to keep them, or fix --schema", rescued, rescue.Column, r.root)
		}
	}
	return r.aug.Augment(r.cfg.Mem, rec)
}

// passItem is one source batch moving through the main pass: read and augmented by the
// reader goroutine, keys encoded and hashed by the encoder goroutine, then deduplicated (in
// order) and handed to a data writer.
type passItem struct {
	rec   arrow.RecordBatch // augmented with the constants
	keys  keyBlock
	err   error
	ready chan struct{} // closed once keys (or err) are set
}

// keyBlock holds the encoded keys of a batch: key i is buf[ends[i-1]:ends[i]].
type keyBlock struct {
	buf    []byte
	ends   []int
	hashes []uint64
}

func (k *keyBlock) key(i int) []byte {
	lo := 0
	if i > 0 {
		lo = k.ends[i-1]
	}
	return k.buf[lo:k.ends[i]]
}

// encodeKeys fills it.keys from it.rec.
func (r *run) encodeKeys(ctx context.Context, it *passItem) error {
	kr, enc, err := r.keyRecord(ctx, it.rec)
	if err != nil {
		return err
	}
	defer kr.Release()
	cols := enc.Columns(kr)
	n := int(kr.NumRows())
	kb := &it.keys
	kb.ends = make([]int, n)
	kb.hashes = make([]uint64, n)
	for i := 0; i < n; i++ {
		kb.buf = codec.AppendRow(kb.buf, cols, i)
		kb.ends[i] = len(kb.buf)
	}
	for i := 0; i < n; i++ {
		kb.hashes[i] = r.keys.Hash(kb.key(i))
	}
	return nil
}

// mainPass reads the source: constants, dedup, overlap max (when not done before), data
// files. Reading (with the source's own decoders), key encoding, dedup and Parquet encoding
// (Writers data writers) run concurrently; batches keep their order through dedup, so the
// first occurrence of a key in the source is the one kept.
func (r *run) mainPass(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var pool *deltasink.WriterPool // nil with --plan, and once closed: its files are in r.adds
	if !r.cfg.Plan {
		pool = r.newWriterPool(ctx)
		defer func() {
			if pool != nil {
				pool.Abort()
			}
		}()
	}
	trackMax := r.cfg.OverlapCol != "" && r.bmax == nil
	if trackMax {
		r.bmax = &extremum{max: true}
	}
	dedup := r.keys != nil
	order := make(chan *passItem, 4)
	encq := make(chan *passItem, 4)
	go func() { // reader
		defer close(order)
		defer close(encq)
		for {
			rec, err := r.in.Next(ctx)
			if err == io.EOF {
				return
			}
			it := &passItem{ready: make(chan struct{})}
			if err == nil {
				it.rec, err = r.augment(rec)
				rec.Release()
			}
			failed := err != nil
			if failed {
				it.err = err
				close(it.ready)
			} else if dedup {
				select {
				case encq <- it:
				case <-ctx.Done():
					it.rec.Release()
					return
				}
			} else {
				close(it.ready)
			}
			select {
			case order <- it:
			case <-ctx.Done():
				<-it.ready
				if it.rec != nil {
					it.rec.Release()
				}
				return
			}
			if failed {
				return
			}
		}
	}()
	if dedup {
		for range min(runtime.GOMAXPROCS(0), 4) {
			go func() { // key encoders
				for it := range encq {
					it.err = r.encodeKeys(ctx, it)
					close(it.ready)
				}
			}()
		}
	}
	drain := func() {
		cancel()
		for it := range order {
			<-it.ready
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}
	mask := array.NewBooleanBuilder(r.cfg.Mem)
	defer mask.Release()
	cctx := compute.WithAllocator(ctx, r.cfg.Mem)
	for it := range order {
		<-it.ready
		if it.err != nil {
			if it.rec != nil {
				it.rec.Release()
			}
			drain()
			return it.err
		}
		// The overlap check measures the backfill's own max, before dedup (as sourceMax does for
		// a Delta source): the rows dedup drops are the ones the live flow already wrote.
		var err error
		if trackMax {
			err = r.foldMax(ctx, it.rec)
		}
		var out arrow.RecordBatch
		if err == nil {
			out, err = r.dedupItem(cctx, it, mask)
		}
		it.rec.Release()
		if err == nil && out != nil {
			r.written += out.NumRows()
			r.prog.Written.Add(out.NumRows())
			if pool != nil {
				if err = pool.Write(out); err != nil {
					err = fmt.Errorf("backfill: write %s: %w", r.root, err)
				}
			}
			out.Release()
		}
		if err != nil {
			drain()
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if pool != nil {
		adds, err := pool.Close()
		if err != nil {
			return fmt.Errorf("backfill: write %s: %w", r.root, err)
		}
		r.adds, pool = adds, nil
	}
	return nil
}

// dedupItem returns the rows of it to write (a new reference, nil for none).
func (r *run) dedupItem(ctx context.Context, it *passItem, mask *array.BooleanBuilder) (arrow.RecordBatch, error) {
	n := it.rec.NumRows()
	r.read += n
	r.prog.Read.Add(n)
	if r.keys == nil {
		it.rec.Retain()
		return it.rec, nil
	}
	kept := 0
	mask.Reserve(int(n))
	if cap(r.res) < int(n) {
		r.res = make([]byte, n)
	}
	res := r.res[:n]
	r.keys.InsertBlock(&it.keys, true, res)
	for _, x := range res {
		mask.UnsafeAppend(x == resNew)
		switch x {
		case resNew:
			kept++
		case resOurs:
			r.dups++
		default:
			r.hits++
		}
	}
	m := mask.NewBooleanArray()
	defer m.Release()
	r.prog.Skipped.Add(n - int64(kept))
	switch kept {
	case 0:
		return nil, nil
	case int(n):
		it.rec.Retain()
		return it.rec, nil
	}
	out, err := compute.FilterRecordBatch(ctx, it.rec, m, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("backfill: filter duplicates: %w", err)
	}
	return out, nil
}

// newWriterPool returns the data writers of the main pass: Writers lanes (default
// deltasink.DefaultWriters), each encoding Parquet on its own goroutine with its own files, spread
// from the first batch on.
func (r *run) newWriterPool(ctx context.Context) *deltasink.WriterPool {
	n := r.cfg.Writers
	if n <= 0 {
		n = deltasink.DefaultWriters()
	}
	store, meta := r.store, r.meta
	opts := r.writerOptions(ctx)
	return deltasink.NewWriterPool(n, 0, func() (*deltasink.DataWriter, error) { return deltasink.NewDataWriter(store, meta, opts) })
}

// foldMax updates the backfill max of the overlap column with rec's rows.
func (r *run) foldMax(ctx context.Context, rec arrow.RecordBatch) error {
	idx := fieldIndexFold(rec.Schema(), r.cfg.OverlapCol)
	if idx < 0 {
		return stage.Usagef("backfill: --overlap-col %s: the source has no such column", r.cfg.OverlapCol)
	}
	tidx := fieldIndexFold(r.target, r.cfg.OverlapCol)
	col := rec.Column(idx)
	if tidx >= 0 {
		a, err := rd.ConformArray(ctx, r.cfg.Mem, r.cfg.OverlapCol, col, r.target.Field(tidx).Type)
		if err != nil {
			return err
		}
		defer a.Release()
		col = a
	}
	if r.bmax.kind == kindUnsupported {
		r.bmax.kind = kindOf(col.DataType())
	}
	r.bmax.update(col, nil)
	return nil
}

// sourceMax computes the backfill max of the overlap column with a projected scan.
func (r *run) sourceMax(ctx context.Context, cs columnScanner) error {
	r.bmax = &extremum{max: true}
	col := r.in.Schema().Field(fieldIndexFold(r.in.Schema(), r.cfg.OverlapCol))
	if fieldIndexFold(r.in.Schema(), r.cfg.OverlapCol) < 0 {
		return stage.Usagef("backfill: --overlap-col %s: the source has no such column", r.cfg.OverlapCol)
	}
	return cs.ScanColumns(ctx, []string{col.Name}, func(rec arrow.RecordBatch) error { return r.foldMax(ctx, rec) })
}

// checkOverlap compares the backfill max with the live rows' min in the target. It returns an
// error with exit code 3 when the backfill may not run yet.
func (r *run) checkOverlap(ctx context.Context) error {
	col := r.cfg.OverlapCol
	ov := &planOverlap{Column: col, MinOverlap: r.cfg.MinOverlap}
	r.plan.Overlap = ov
	tidx := fieldIndexFold(r.target, col)
	if tidx < 0 {
		return stage.Usagef("backfill: --overlap-col %s: the target has no such column", col)
	}
	kind := kindOf(r.target.Field(tidx).Type)
	if kind == kindUnsupported {
		return stage.Usagef("backfill: --overlap-col %s has type %s; use a timestamp, date or numeric column", col, r.target.Field(tidx).Type)
	}
	spec, err := parseOverlap(kind, r.cfg.MinOverlap)
	if err != nil {
		return stage.Usagef("backfill: --min-overlap: %v", err)
	}
	r.bmax.kind = kind
	lmin := &extremum{kind: kind}
	var firstLive int64 = -1
	if r.snap != nil {
		cols := []string{r.target.Field(tidx).Name}
		for _, kv := range r.cfg.StreamFilter {
			idx := fieldIndexFold(r.target, kv.Key)
			if idx < 0 {
				return stage.Usagef("backfill: --stream-filter %s: the target has no such column", kv.Key)
			}
			if name := r.target.Field(idx).Name; !slices.Contains(cols, name) {
				cols = append(cols, name)
			}
		}
		err := scanTable(ctx, r.store, r.snap.Metadata(), r.snap.Files(), cols, r.cfg.Mem, func(add *dl.Add, rec arrow.RecordBatch) error {
			keep := make([]bool, rec.NumRows())
			any := false
			for i := range keep {
				keep[i] = true
				for _, kv := range r.cfg.StreamFilter {
					a := rec.Column(fieldIndexFold(rec.Schema(), kv.Key))
					if a.IsNull(i) || a.ValueStr(i) != kv.Value {
						keep[i] = false
						break
					}
				}
				any = any || keep[i]
			}
			if any && (firstLive < 0 || add.ModificationTime < firstLive) {
				firstLive = add.ModificationTime
			}
			before := lmin.valid
			lmin.update(rec.Column(0), keep)
			ov.LiveRows += lmin.valid - before
			return nil
		})
		if err != nil {
			return fmt.Errorf("backfill: overlap check: read %s: %w", r.root, err)
		}
	}
	ov.BackfillMax, ov.LiveMin = r.bmax.String(), lmin.String()
	now := r.cfg.Now()
	if firstLive >= 0 {
		ov.FirstLiveCommit = time.UnixMilli(firstLive).UTC().Format(time.RFC3339)
		if r.cfg.OverlapDeadline > 0 {
			dl := time.UnixMilli(firstLive).Add(r.cfg.OverlapDeadline)
			ov.Deadline = dl.UTC().Format(time.RFC3339)
			ov.DeadlinePassed = !now.Before(dl)
		}
	}
	switch {
	case !lmin.ok:
		ov.Reason = "the target has no live rows yet"
		if r.cfg.StreamFilter != nil {
			ov.Reason += " matching --stream-filter"
		}
	case !r.bmax.ok:
		ov.Reason = "the backfill has no values in " + col
	default:
		d, num := gap(kind, r.bmax, lmin)
		if kind == kindTimestamp || kind == kindDate {
			ov.Overlap = d.String()
			ov.OK = d >= spec.dur
			if !ov.OK {
				if d < 0 {
					ov.Reason = fmt.Sprintf("the backfill ends %s before the live rows start (backfill max %s, live min %s); it must overlap them by %s", (-d).String(), ov.BackfillMax, ov.LiveMin, spec.dur)
				} else {
					ov.Reason = fmt.Sprintf("the backfill overlaps the live rows by %s only (backfill max %s, live min %s); %s needed", d, ov.BackfillMax, ov.LiveMin, spec.dur)
				}
			}
		} else {
			ov.Overlap = fmt.Sprint(num)
			ov.OK = num >= spec.num
			if !ov.OK {
				ov.Reason = fmt.Sprintf("the backfill max %s exceeds the live min %s by %v only; %v needed", ov.BackfillMax, ov.LiveMin, num, spec.num)
			}
		}
		if ov.OK {
			ov.Reason = "the backfill overlaps the live rows enough"
		}
	}
	if ov.OK {
		return nil
	}
	if ov.DeadlinePassed {
		msg := fmt.Sprintf("overlap deadline %s passed (first live commit %s + %s): running anyway although %s", ov.Deadline, ov.FirstLiveCommit, r.cfg.OverlapDeadline, ov.Reason)
		ov.Reason = msg
		r.cfg.Log.Warn("backfill: " + msg)
		fmt.Fprintf(r.cfg.Stderr, "backfill: %s\n", msg)
		return nil
	}
	if r.cfg.Plan {
		return nil
	}
	hint := ""
	if ov.Deadline != "" {
		hint = fmt.Sprintf("; it will run anyway after the deadline %s", ov.Deadline)
	}
	return &stage.ChildExitError{Code: ExitOverlap, Err: fmt.Errorf("backfill: not running yet: %s%s", ov.Reason, hint)}
}

// commit commits the data files with the flow's txn; with dedup, a lost race is resolved by
// removing the rows whose keys were committed concurrently and trying again.
func (r *run) commit(ctx context.Context) error {
	start := time.Now()
	ops := map[string]string{"mode": "Append", "partitionBy": jsonList(r.meta.PartitionColumns), "flow": r.cfg.Flow}
	op := "WRITE"
	if r.cfg.Dedup {
		op = "MERGE"
		ops["predicate"] = "insert-only on " + strings.Join(r.keyEnc.Names(), ", ")
	}
	if r.cfg.FromDelta != "" {
		ops["source"] = r.cfg.FromDelta
	} else {
		ops["source"] = strings.Join(r.cfg.FilesDesc, " ")
	}
	metrics := map[string]string{"numOutputRows": fmt.Sprint(r.written), "numFiles": fmt.Sprint(len(r.adds)),
		"numSourceRows": fmt.Sprint(r.read), "numTargetRowsSkipped": fmt.Sprint(r.hits + r.dups)}
	if r.cfg.Dedup {
		r.tbl.MaxAttempts = 1
	}
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		req := dl.CommitRequest{Read: r.snap, Adds: r.adds, Txn: &dl.Txn{AppID: r.cfg.Flow, Version: r.txnVer},
			Operation: op, OperationParameters: ops, OperationMetrics: metrics}
		if r.create || r.proto != nil || (r.snap != nil && r.meta != r.snap.Metadata()) {
			req.Protocol, req.Metadata = r.proto, r.meta
			if r.create {
				req.Read = nil
			}
		}
		if testHookBeforeCommit != nil {
			testHookBeforeCommit()
		}
		if err := r.lock.Check(); err != nil { // on a bucket: the lease was not renewed in time or taken over
			return fmt.Errorf("backfill: the lock of flow %q on %s was lost (%v); nothing was committed", r.cfg.Flow, r.root, err)
		}
		res, err := r.tbl.Commit(ctx, req)
		if err == nil {
			if res.CheckpointErr != nil {
				r.cfg.Log.Warn("backfill: checkpoint not written", "err", res.CheckpointErr)
			}
			r.cfg.Log.Info("backfill committed", "flow", r.cfg.Flow, "target", r.root, "version", res.Version,
				"rows_read", r.read, "rows_written", r.written, "key_hits_in_target", r.hits, "duplicates_in_source", r.dups,
				"files", len(r.adds), "commit_attempts", attempt, "commit_time", time.Since(start).Round(time.Millisecond))
			return nil
		}
		var ce *dl.ConflictError
		if errors.As(err, &ce) && ce.Kind == dl.ConflictMetadata && r.create && attempt < 100 {
			// A live flow's first commit created the table first (as write-delta does, join it
			// when it has the schema and partitioning our files were written for; with dedup,
			// its rows' keys are dropped from the backfill like any lost race's).
			if jerr := r.joinCreated(ctx); jerr != nil {
				r.abort()
				return jerr
			}
			continue
		}
		if errors.As(err, &ce) {
			r.abort()
			if ce.Kind == dl.ConflictTransaction {
				return fmt.Errorf("backfill: another run of flow %q committed concurrently (%v); nothing of this run was committed", r.cfg.Flow, err)
			}
			return fmt.Errorf("backfill: %w; nothing was committed, run the backfill again", err)
		}
		if !r.cfg.Dedup || attempt >= 100 || ctx.Err() != nil {
			r.abort()
			return fmt.Errorf("backfill: %w", err)
		}
		// Did we lose a race? Then merge against the new commits and retry.
		lost, rerr := r.resolveRace(ctx)
		if rerr != nil {
			r.abort()
			return rerr
		}
		if !lost {
			r.abort()
			return fmt.Errorf("backfill: %w", err)
		}
		jitter := time.Duration(rand.Int64N(int64(backoff) + 1))
		time.Sleep(backoff/2 + jitter/2)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func jsonList(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// joinCreated adopts the table another writer created while the backfill meant to create it,
// when its schema and partition columns are the ones the backfill's files were written for;
// with dedup the keys of the rows it already holds are removed from the backfill (resolveRace).
func (r *run) joinCreated(ctx context.Context) error {
	snap, err := r.tbl.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("backfill: reload %s: %w", r.root, err)
	}
	m := snap.Metadata()
	if m.SchemaString != r.meta.SchemaString || !slices.Equal(m.PartitionColumns, r.meta.PartitionColumns) {
		return fmt.Errorf("backfill: table %s was created concurrently with another schema or partitioning than the backfill's; nothing was committed", r.root)
	}
	r.cfg.Log.Info("backfill: the table was created concurrently; appending to it", "target", r.root, "version", snap.Version())
	r.create, r.proto = false, nil
	if r.cfg.Dedup {
		if _, err := r.resolveRaceFrom(ctx, nil, snap); err != nil {
			return err
		}
	}
	r.snap, r.meta = snap, m
	return nil
}

// resolveRace loads the commits made since the snapshot the backfill read; their added files'
// keys that the backfill also writes are removed from its files. It reports whether the table
// moved (a race was lost).
func (r *run) resolveRace(ctx context.Context) (bool, error) {
	if r.snap == nil {
		return false, nil
	}
	newer, err := r.snap.Update(ctx)
	if err != nil {
		return false, fmt.Errorf("backfill: reload %s: %w", r.root, err)
	}
	return r.resolveRaceFrom(ctx, r.snap, newer)
}

// resolveRaceFrom is resolveRace from snapshot old (nil: before the table existed) to newer.
func (r *run) resolveRaceFrom(ctx context.Context, old, newer *dl.Snapshot) (bool, error) {
	from := int64(0)
	if old != nil {
		if newer.Version() == old.Version() {
			return false, nil
		}
		from = old.Version() + 1
	}
	if tv, ok := newer.TxnVersion(r.cfg.Flow); ok && tv >= r.txnVer {
		r.abort()
		return false, fmt.Errorf("backfill: another run of flow %q committed txn version %d meanwhile; nothing of this run was committed", r.cfg.Flow, tv)
	}
	if old != nil && newer.Metadata() != old.Metadata() && newer.Metadata().SchemaString != old.Metadata().SchemaString {
		return false, fmt.Errorf("backfill: the target's schema changed concurrently; nothing was committed, run the backfill again")
	}
	var added []*dl.Add
	for v := from; v <= newer.Version(); v++ {
		acts, err := r.tbl.ReadCommit(v)
		if err != nil {
			return false, fmt.Errorf("backfill: read concurrent commit: %w", err)
		}
		for _, a := range acts {
			if a.Add != nil && a.Add.DataChange && newer.File(a.Add.Path) != nil {
				added = append(added, a.Add)
			}
		}
	}
	collide := newKeySet(0, 1)
	err := scanTable(ctx, r.store, newer.Metadata(), added, r.keyColumns(), r.cfg.Mem, func(_ *dl.Add, rec arrow.RecordBatch) error {
		kr, enc, err := r.keyRecord(ctx, rec)
		if err != nil {
			return err
		}
		defer kr.Release()
		cols := enc.Columns(kr)
		for i := 0; i < int(kr.NumRows()); i++ {
			r.keyBuf = codec.AppendRow(r.keyBuf[:0], cols, i)
			if found, ours := r.keys.Lookup(r.keyBuf); found && ours {
				collide.Insert(r.keyBuf, false)
				r.keys.Disown(r.keyBuf)
			} else if !found {
				r.keys.Insert(r.keyBuf, false)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("backfill: read concurrent commits: %w", err)
	}
	r.snap = newer
	if !r.create && r.proto == nil {
		r.meta = newer.Metadata()
	}
	if collide.Len() == 0 {
		return true, nil
	}
	r.cfg.Log.Info("backfill: rows committed concurrently by another flow share keys with the backfill; dropping them from the backfill", "keys", collide.Len())
	return true, r.rewriteWithout(ctx, collide)
}

// rewriteWithout rewrites the backfill's data files without the rows whose key is in drop.
func (r *run) rewriteWithout(ctx context.Context, drop *keySet) error {
	old := r.adds
	ptrs := make([]*dl.Add, len(old))
	for i := range old {
		ptrs[i] = &old[i]
	}
	dw, err := deltasink.NewDataWriter(r.store, r.meta, r.writerOptions(ctx))
	if err != nil {
		return err
	}
	mask := array.NewBooleanBuilder(r.cfg.Mem)
	defer mask.Release()
	var removed int64
	err = scanTable(ctx, r.store, r.meta, ptrs, nil, r.cfg.Mem, func(_ *dl.Add, rec arrow.RecordBatch) error {
		kr, enc, err := r.keyRecord(ctx, rec)
		if err != nil {
			return err
		}
		cols := enc.Columns(kr)
		for i := 0; i < int(kr.NumRows()); i++ {
			r.keyBuf = codec.AppendRow(r.keyBuf[:0], cols, i)
			found, _ := drop.Lookup(r.keyBuf)
			mask.Append(!found)
			if found {
				removed++
			}
		}
		kr.Release()
		m := mask.NewBooleanArray()
		defer m.Release()
		out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, r.cfg.Mem), rec, m, compute.DefaultFilterOptions())
		if err != nil {
			return err
		}
		defer out.Release()
		return dw.Write(out)
	})
	if err != nil {
		dw.Abort()
		return fmt.Errorf("backfill: rewrite data files: %w", err)
	}
	adds, err := dw.Close()
	if err != nil {
		return fmt.Errorf("backfill: rewrite data files: %w", err)
	}
	r.removeFiles(old)
	r.adds = adds
	r.written -= removed
	r.hits += removed
	return nil
}

// writerOptions are the options of every data writer of the run.
func (r *run) writerOptions(ctx context.Context) deltasink.WriterOptions {
	return deltasink.WriterOptions{Allocator: r.cfg.Mem, Compression: r.cfg.Compression, TargetFileSize: r.cfg.TargetFileSize,
		TruncateTimestamps: r.cfg.TruncateTimestamps, Context: ctx}
}
