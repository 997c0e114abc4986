package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// Config configures a [Source].
type Config struct {
	// Table names the table root in messages: its local directory, or its redacted URL
	// (storage.Store.Location).
	Table string
	// Store is the opened table root (tools/cli.OpenStore: a local directory or a bucket
	// prefix). Nil or local: the local directory Table (named as given in messages).
	Store storage.Store
	// Columns, Workers: see [ReadOptions] (projection, decoders). Where is the --where
	// condition, ReadOptions.Predicate: Spark SQL over any column, or the partition syntax.
	Columns []string
	Where   string
	Workers int
	// Version reads the table as of this version (time travel); -1 = latest. With Follow, the
	// snapshot of this version is read first, then the commits after it.
	Version int64
	// Timestamp, when not zero, reads the newest version committed at or before it instead.
	Timestamp time.Time
	// Follow keeps reading the commits made after the start, polling the log every
	// PollInterval (default 250 ms), until interrupted.
	Follow       bool
	PollInterval time.Duration
	// StartingVersion, when ≥ 0, reads the files added by commits StartingVersion, … instead
	// of a snapshot first (Spark's startingVersion); StartingLatest starts after the current
	// latest version (only new commits).
	StartingVersion int64
	StartingLatest  bool
	// IgnoreDeletes skips commits that only remove data (dataChange=true removes, no adds);
	// IgnoreChanges also accepts commits that rewrite files (update, merge, overwrite),
	// emitting their added files — so unchanged rows of a rewritten file come again. Without
	// them such commits fail the stream (Spark's Delta source options of the same names).
	// A commit that deletes or updates rows through deletion vectors removes each touched file
	// and adds it back with its new vector, so it is a rewrite: IgnoreChanges reads the file's
	// remaining rows again.
	IgnoreDeletes, IgnoreChanges bool
	// SkipChangeCommits skips every commit that removes data (dataChange=true removes: deletes,
	// updates, merges, overwrites, new deletion vectors), its added files included, so only
	// appends are read (Spark's skipChangeCommits).
	SkipChangeCommits bool
	// MaxFilesPerEpoch cuts an epoch once it has read this many files (Spark's
	// maxFilesPerTrigger); 0 = 1000, < 0 = no limit.
	MaxFilesPerEpoch int
}

// position is the source's position, stored in the offsets WAL of every epoch: the next row
// to read is row Row of file File of the change set of Version — the live files of the
// snapshot at Version sorted by path when Initial, else the add actions of commit Version in
// file order. Indices count every file (also those skipped by --where or because they carry no
// data change), so they do not depend on the filter. An epoch spans from the position of the
// previous epoch to its own, i.e. a range of table versions.
type position struct {
	TableID string `json:"table_id"`
	Version int64  `json:"version"`
	Initial bool   `json:"initial,omitempty"`
	File    int    `json:"file"`
	Row     int64  `json:"row"`
}

// less orders positions: an initial snapshot at V comes after the commits up to V and before
// commit V+1.
func (p position) less(o position) bool {
	if p.Version != o.Version {
		return p.Version < o.Version
	}
	if p.Initial != o.Initial {
		return !p.Initial
	}
	if p.File != o.File {
		return p.File < o.File
	}
	return p.Row < o.Row
}

// Source is the read-delta source (a [stage.Source]): a bounded read of one snapshot (plus,
// on a restart with a checkpoint, the commits since), or with Follow a stream of the files
// added by every new commit, in commit order.
type Source struct {
	cfg           Config
	env           *stage.Env
	tbl           *dl.Table
	rd            *Reader
	meta          *dl.Metadata
	schema        *arrow.Schema
	bound         int64 // last version to read when not following
	schemaVersion int64 // the version whose schema the output has
	pos           position

	files    []*dl.Add // change set of pos.Version
	verdicts []Verdict // per file of files, once the scan of the change set starts (nil before)
	pruned   int64     // files skipped by --where so far
	loaded   bool      // files holds pos's change set
	scan     *Scan
	scanIdx  []int // scan ref → change set index
	scanLim  *position
	epochN   int // files completed in the current epoch
	lastPoll time.Time
}

// NewSource validates cfg.
func NewSource(cfg Config) (*Source, error) {
	if cfg.Table == "" {
		return nil, stage.Usagef("read-delta: a table path is required")
	}
	if cfg.Version >= 0 && !cfg.Timestamp.IsZero() {
		return nil, stage.Usagef("read-delta: give --version or --timestamp, not both")
	}
	if (cfg.StartingVersion >= 0 || cfg.StartingLatest) && (cfg.Version >= 0 || !cfg.Timestamp.IsZero()) {
		return nil, stage.Usagef("read-delta: --starting-version reads commits, --version/--timestamp a snapshot: give one of them")
	}
	if cfg.StartingLatest && !cfg.Follow {
		return nil, stage.Usagef("read-delta: --starting-version latest only makes sense with --follow")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MaxFilesPerEpoch == 0 {
		cfg.MaxFilesPerEpoch = 1000
	}
	return &Source{cfg: cfg}, nil
}

// Open loads the table, fixes the schema and the start position (committed, else the
// configured start) and returns the output schema.
func (s *Source) Open(ctx context.Context, env *stage.Env, committed stage.Position) (*arrow.Schema, error) {
	s.env = env
	if s.cfg.Store != nil && s.cfg.Store.LocalDir() == "" {
		s.tbl = dl.OpenTable(s.cfg.Store, env.Mem)
	} else {
		s.tbl = dl.NewTable(s.cfg.Table, env.Mem) // messages name a local table as given
	}
	var snap, latest *dl.Snapshot
	var err error
	switch {
	case s.cfg.Version >= 0:
		snap, err = s.tbl.SnapshotAt(ctx, s.cfg.Version)
	case !s.cfg.Timestamp.IsZero():
		var v int64
		if v, err = s.tbl.VersionAt(ctx, s.cfg.Timestamp); err == nil {
			env.Log.Info("reading the version committed at or before the timestamp", "timestamp", s.cfg.Timestamp, "version", v)
			snap, err = s.tbl.SnapshotAt(ctx, v)
		}
	default:
		snap, err = s.tbl.Snapshot(ctx)
		latest = snap
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	if latest == nil && (s.cfg.Follow || committed != nil) {
		if latest, err = s.tbl.Snapshot(ctx); err != nil {
			return nil, s.wrap(err)
		}
	}
	if latest == nil {
		latest = snap
	}
	s.bound = snap.Version()
	schemaSnap := snap
	if s.cfg.Follow {
		s.bound = -1
		schemaSnap = latest
	}
	s.meta, s.schemaVersion = schemaSnap.Metadata(), schemaSnap.Version()
	s.rd, err = NewReader(s.tbl.Store(), s.meta, ReadOptions{Name: s.cfg.Table, Columns: s.cfg.Columns, Predicate: s.cfg.Where,
		BatchRows: env.BatchRows, Workers: s.cfg.Workers, Allocator: env.Mem})
	if err != nil {
		var ue *stage.UsageError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, stage.Usagef("read-delta: %v", err)
	}
	s.schema = s.rd.Schema()
	id := latest.Metadata().ID
	switch {
	case committed != nil && string(committed) != "null":
		if err := json.Unmarshal(committed, &s.pos); err != nil {
			return nil, fmt.Errorf("read-delta: checkpointed position %s: %w", committed, err)
		}
		if s.pos.TableID != id {
			return nil, fmt.Errorf("read-delta: the checkpoint was written for table id %s but %s now has id %s (the table was replaced); use a new checkpoint directory", s.pos.TableID, s.cfg.Table, id)
		}
	case s.cfg.StartingLatest:
		s.pos = position{TableID: id, Version: latest.Version() + 1}
	case s.cfg.StartingVersion >= 0:
		vr, err := s.tbl.Versions()
		if err != nil {
			return nil, s.wrap(err)
		}
		if s.cfg.StartingVersion > vr.Latest+1 {
			return nil, stage.Usagef("read-delta: --starting-version %d is after the latest version %d", s.cfg.StartingVersion, vr.Latest)
		}
		if ok, err := s.tbl.CommitExists(s.cfg.StartingVersion); err != nil {
			return nil, s.wrap(err)
		} else if !ok && s.cfg.StartingVersion <= vr.Latest {
			return nil, fmt.Errorf("read-delta: commit %d of %s is no longer in the log (the earliest loadable version is %d); start from a later version or read a snapshot", s.cfg.StartingVersion, s.cfg.Table, vr.Earliest)
		}
		s.pos = position{TableID: id, Version: s.cfg.StartingVersion}
	default:
		s.pos = position{TableID: id, Version: snap.Version(), Initial: true}
		s.files = snap.Files()
		s.loaded = true
		if err := s.checkFiles(snap.Version(), s.files); err != nil {
			return nil, err
		}
	}
	return s.schema, nil
}

func (s *Source) wrap(err error) error {
	if strings.HasPrefix(err.Error(), "read-delta") {
		return err
	}
	return fmt.Errorf("read-delta %s: %w", s.cfg.Table, err)
}

// checkFiles validates every path of a change set before anything is read.
func (s *Source) checkFiles(version int64, files []*dl.Add) error {
	for _, a := range files {
		if err := s.rd.CheckPath(a.Path); err != nil {
			return fmt.Errorf("read-delta %s version %d: %w", s.cfg.Table, version, err)
		}
	}
	return nil
}

// Position returns the JSON position after the last batch read.
func (s *Source) Position() stage.Position {
	b, _ := json.Marshal(s.pos)
	return b
}

// EpochFull reports that the current epoch has read MaxFilesPerEpoch files.
func (s *Source) EpochFull() bool {
	return s.cfg.MaxFilesPerEpoch > 0 && s.epochN >= s.cfg.MaxFilesPerEpoch
}

// EpochCut starts counting files afresh.
func (s *Source) EpochCut() { s.epochN = 0 }

// loadChanges loads the change set of commit pos.Version (not initial). It returns false
// when the commit does not exist yet.
func (s *Source) loadChanges(ctx context.Context) (bool, error) {
	v := s.pos.Version
	actions, err := s.tbl.ReadCommit(v)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(err)
	}
	var adds []*dl.Add
	var removed []*dl.Remove
	op := ""
	metaChanged := false
	for i := range actions {
		a := &actions[i]
		switch {
		case a.CommitInfo != nil:
			op = a.CommitInfo.Operation
		case a.Protocol != nil, a.MetaData != nil:
			metaChanged = true
		case a.Add != nil:
			adds = append(adds, a.Add)
		case a.Remove != nil && a.Remove.DataChange:
			removed = append(removed, a.Remove)
		}
	}
	if metaChanged && v > 0 {
		snap, err := s.tbl.SnapshotAt(ctx, v)
		if err != nil {
			return false, s.wrap(err)
		}
		if err := s.readable(snap.Metadata(), v); err != nil {
			return false, fmt.Errorf("read-delta %s: version %d changes the table: %w; restart read-delta to read with the new schema", s.cfg.Table, v, err)
		}
	}
	dataAdds := 0
	for _, a := range adds {
		if a.DataChange {
			dataAdds++
		}
	}
	if len(removed) > 0 {
		what := fmt.Sprintf("version %d of %s removes data (operation %s, file %s)", v, s.cfg.Table, orUnknown(op), removed[0].Path)
		switch {
		case s.cfg.SkipChangeCommits:
			s.env.Log.Info("skipping a commit that changes existing data", "version", v, "operation", op, "removed_files", len(removed), "skipped_files", len(adds))
			s.files = nil
			s.loaded = true
			return true, nil
		case dataAdds > 0 && !s.cfg.IgnoreChanges:
			return false, fmt.Errorf("read-delta: %s and rewrites files%s: a streaming read only follows appends; pass --skip-change-commits to skip such commits, or --ignore-changes to read the rewritten files (their unchanged rows come again)", what, dvNote(removed, adds))
		case dataAdds == 0 && !s.cfg.IgnoreDeletes && !s.cfg.IgnoreChanges:
			return false, fmt.Errorf("read-delta: %s: a streaming read only follows appends; pass --ignore-deletes or --skip-change-commits to skip commits that only delete", what)
		}
		s.env.Log.Info("skipping removed data", "version", v, "operation", op, "removed_files", len(removed))
	}
	if err := s.checkFiles(v, adds); err != nil {
		return false, err
	}
	s.files = adds
	s.loaded = true
	return true, nil
}

// dvNote says that a rewrite marks rows deleted through deletion vectors, when one of its
// adds puts back a removed file with a new vector.
func dvNote(removed []*dl.Remove, adds []*dl.Add) string {
	for _, a := range adds {
		if a.DeletionVector == nil {
			continue
		}
		for _, r := range removed {
			if r.Path == a.Path {
				return fmt.Sprintf(" (file %s gets a deletion vector)", a.Path)
			}
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// readable checks that data written under meta (a metaData action of version v met while
// following) reads into the output schema: the same partition columns, and every column of
// meta either in the output with a type it reads into, or projected away. Columns added later
// are fine (older files read them as null); a column the output lacks or a changed type is
// not. Under column mapping columns are identified by physical name (readableMapped).
func (s *Source) readable(meta *dl.Metadata, v int64) error {
	if s.rd.cm.mode.Mapped() || meta.ColumnMapping().Mapped() {
		return s.readableMapped(meta, v)
	}
	if strings.Join(meta.PartitionColumns, ",") != strings.Join(s.meta.PartitionColumns, ",") {
		return fmt.Errorf("partition columns changed from [%s] to [%s]", strings.Join(s.meta.PartitionColumns, ", "), strings.Join(meta.PartitionColumns, ", "))
	}
	st, err := meta.Schema()
	if err != nil {
		return err
	}
	sc, err := st.ToArrow()
	if err != nil {
		return err
	}
	for _, f := range sc.Fields() {
		idx := s.schema.FieldIndices(f.Name)
		if len(idx) == 0 {
			if len(s.cfg.Columns) > 0 {
				continue // projected away
			}
			return fmt.Errorf("new column %s", f.Name)
		}
		if !readsInto(f.Type, s.schema.Field(idx[0]).Type) {
			return fmt.Errorf("column %s changed type to %s", f.Name, typeName(f.Type))
		}
	}
	return nil
}

// readsInto reports whether data of type from conforms to type to without losing fields:
// equal types, a type widening ([widening]: files written before the column was widened), or
// structs whose fields all read into fields of to (to may have more).
func readsInto(from, to arrow.DataType) bool {
	switch f := from.(type) {
	case *arrow.StructType:
		t, ok := to.(*arrow.StructType)
		if !ok {
			return false
		}
		for _, ff := range f.Fields() {
			j, ok := t.FieldIdx(ff.Name)
			if !ok || !readsInto(ff.Type, t.Field(j).Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		t, ok := to.(*arrow.ListType)
		return ok && readsInto(f.Elem(), t.Elem())
	case *arrow.MapType:
		t, ok := to.(*arrow.MapType)
		return ok && readsInto(f.KeyType(), t.KeyType()) && readsInto(f.ItemType(), t.ItemType())
	}
	return arrow.TypeEqual(from, to) || widening(from, to)
}

// loadInitial loads the change set of an initial snapshot position (after a restart).
func (s *Source) loadInitial(ctx context.Context) error {
	snap, err := s.tbl.SnapshotAt(ctx, s.pos.Version)
	if err != nil {
		return s.wrap(err)
	}
	s.files = snap.Files()
	s.loaded = true
	return s.checkFiles(s.pos.Version, s.files)
}

// judge decides, once per change set, which of its files --where rules out (the files from
// pos on; those before it were read already), counts and logs them.
func (s *Source) judge() error {
	if s.verdicts != nil {
		return nil
	}
	s.verdicts = make([]Verdict, len(s.files))
	if s.rd.Filter() == nil && s.rd.Predicate() == nil {
		for i := range s.verdicts {
			s.verdicts[i] = VerdictAll
		}
		return nil
	}
	considered, pruned := 0, 0
	for i, a := range s.files {
		if i < s.pos.File || (!s.pos.Initial && !a.DataChange) {
			continue
		}
		v, err := s.rd.Verdict(a)
		if err != nil {
			return s.wrap(err)
		}
		s.verdicts[i] = v
		considered++
		if v == VerdictNone {
			pruned++
		}
	}
	s.pruned += int64(pruned)
	if s.env.Stats != nil {
		s.env.Stats.FilesPruned.Store(s.pruned)
	}
	log := s.env.Log.Debug
	if s.pos.Initial {
		log = s.env.Log.Info
	}
	log("--where skips the files that cannot match", "version", s.pos.Version, "files", considered, "files_pruned", pruned)
	return nil
}

// startScan scans the change set from pos, up to limit when it falls in this version.
func (s *Source) startScan(ctx context.Context, limit *position) error {
	if err := s.judge(); err != nil {
		return err
	}
	s.scanIdx = s.scanIdx[:0]
	var refs []FileRef
	for i := s.pos.File; i < len(s.files); i++ {
		a := s.files[i]
		ref := FileRef{Add: a, End: -1}
		if i == s.pos.File {
			ref.Start = s.pos.Row
		}
		if limit != nil && limit.Version == s.pos.Version && limit.Initial == s.pos.Initial {
			if i > limit.File || (i == limit.File && limit.Row == 0) {
				break
			}
			if i == limit.File {
				ref.End = limit.Row
			}
		}
		if !s.pos.Initial && !a.DataChange {
			continue
		}
		if s.verdicts[i] == VerdictNone {
			continue
		}
		ref.Matched = s.verdicts[i] == VerdictAll
		refs = append(refs, ref)
		s.scanIdx = append(s.scanIdx, i)
	}
	s.scan = s.rd.Scan(ctx, refs)
	s.scanLim = limit
	return nil
}

func (s *Source) closeScan() {
	if s.scan != nil {
		s.scan.Close()
		s.scan = nil
	}
}

// nextVersion moves past the current change set.
func (s *Source) nextVersion() {
	s.closeScan()
	s.pos = position{TableID: s.pos.TableID, Version: s.pos.Version + 1}
	s.files, s.verdicts, s.loaded = nil, nil, false
}

// Read returns the next batch (see [stage.Source]).
func (s *Source) Read(ctx context.Context, limitPos stage.Position) (arrow.RecordBatch, error) {
	var limit *position
	if limitPos != nil {
		limit = new(position)
		if err := json.Unmarshal(limitPos, limit); err != nil {
			return nil, fmt.Errorf("read-delta: WAL position %s: %w", limitPos, err)
		}
	}
	if s.scan != nil && !samePos(s.scanLim, limit) {
		s.closeScan()
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if limit != nil && !s.pos.less(*limit) {
			s.closeScan()
			return nil, io.EOF
		}
		if limit == nil && s.EpochFull() {
			return nil, nil
		}
		if !s.loaded {
			if s.pos.Initial {
				if err := s.loadInitial(ctx); err != nil {
					return nil, err
				}
			} else {
				if limit == nil && !s.cfg.Follow && s.pos.Version > s.bound {
					return nil, io.EOF
				}
				if limit == nil && s.cfg.Follow && time.Since(s.lastPoll) < s.cfg.PollInterval && !s.lastPoll.IsZero() {
					return nil, s.idle(ctx)
				}
				ok, err := s.loadChanges(ctx)
				if err != nil {
					return nil, err
				}
				if !ok {
					if limit != nil {
						return nil, fmt.Errorf("read-delta: commit %d of %s, needed to replay an epoch, is missing from the log", s.pos.Version, s.cfg.Table)
					}
					if !s.cfg.Follow {
						return nil, io.EOF
					}
					s.lastPoll = time.Now()
					return nil, s.idle(ctx)
				}
				s.lastPoll = time.Time{}
			}
		}
		if s.scan == nil {
			if err := s.startScan(ctx, limit); err != nil {
				return nil, err
			}
		}
		b, err := s.scan.Next()
		if err == io.EOF {
			s.nextVersion()
			continue
		}
		if err != nil {
			return nil, s.wrap(err)
		}
		idx := s.scanIdx[b.File]
		if b.Done {
			s.pos.File, s.pos.Row = idx+1, 0
			s.epochN++
			continue
		}
		s.pos.File, s.pos.Row = idx, b.Row
		return b.Rec, nil
	}
}

// idle waits a little while nothing new is committed (follow mode).
func (s *Source) idle(ctx context.Context) error {
	d := s.env.Linger
	if d <= 0 || d > s.cfg.PollInterval {
		d = s.cfg.PollInterval
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(d):
		return nil
	}
}

func samePos(a, b *position) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Close stops reading.
func (s *Source) Close() error {
	s.closeScan()
	if s.rd != nil {
		return s.rd.Close()
	}
	return nil
}

// Files returns the live files of snap that pass rd's partition filter, sorted by path, with
// every path validated (for --plan style listings and backfill).
func Files(rd *Reader, snap *dl.Snapshot) ([]*dl.Add, error) {
	var out []*dl.Add
	for _, a := range snap.Files() {
		if err := rd.CheckPath(a.Path); err != nil {
			return nil, err
		}
		ok, err := rd.Match(a)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
