package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/storage"
)

// ErrNotATable is returned when a directory holds no Delta log (no commit and no checkpoint).
var ErrNotATable = errors.New("not a Delta table")

// ErrLogIncomplete is wrapped when log replay finds a gap: a commit file missing between the
// checkpoint used and the target version, or no checkpoint and no version 0.
var ErrLogIncomplete = errors.New("delta log incomplete")

// Snapshot is the state of a table at one version (PROTOCOL.md "Action Reconciliation"):
// the latest protocol and metadata, the live files keyed by path, the tombstones, the latest
// txn per appId and the live metadata domains. A Snapshot is immutable; [Snapshot.Update] and
// [Table.Commit] return new ones.
type Snapshot struct {
	root       string
	store      storage.Store
	mem        memory.Allocator
	version    int64
	protocol   *Protocol
	metadata   *Metadata
	schema     *StructType
	files      map[string]*Add
	tombstones map[string]*Remove // key: path + "\x00" + deletion vector unique id
	txns       map[string]Txn
	domains    map[string]DomainMetadata
}

// newSnapshot is the empty state (version -1) of table t, before any action.
func (t *Table) newSnapshot() *Snapshot {
	return &Snapshot{root: t.root, store: t.store, mem: t.mem, version: -1, files: map[string]*Add{}, tombstones: map[string]*Remove{},
		txns: map[string]Txn{}, domains: map[string]DomainMetadata{}}
}

// Version is the table version this snapshot reflects.
func (s *Snapshot) Version() int64 { return s.version }

// Root is the table root: its local directory, or the redacted URL of a bucket table (see
// [Table.Root]).
func (s *Snapshot) Root() string { return s.root }

// Store is the storage the table lives in, rooted at the table root: data files are read
// through it, by the paths of [Snapshot.Files] (decoded with [DecodePath]).
func (s *Snapshot) Store() storage.Store { return s.store }

// Protocol returns the table's protocol action (a copy).
func (s *Snapshot) Protocol() Protocol { return *s.protocol }

// Metadata returns the table's metaData action (do not modify it).
func (s *Snapshot) Metadata() *Metadata { return s.metadata }

// Schema returns the parsed table schema (all columns, partition columns included).
func (s *Snapshot) Schema() *StructType { return s.schema }

// ArrowSchema returns the canonical Arrow schema of the table (see [StructType.ToArrow]).
func (s *Snapshot) ArrowSchema() (*arrow.Schema, error) { return s.schema.ToArrow() }

// PartitionColumns returns the partition columns in order.
func (s *Snapshot) PartitionColumns() []string { return s.metadata.PartitionColumns }

// NumFiles is the number of live data files.
func (s *Snapshot) NumFiles() int { return len(s.files) }

// Files returns the live add actions sorted by path (do not modify them).
func (s *Snapshot) Files() []*Add {
	out := make([]*Add, 0, len(s.files))
	for _, a := range s.files {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// File returns the live add action with the given (logged) path, or nil.
func (s *Snapshot) File(path string) *Add { return s.files[path] }

// Tombstones returns the remove actions still kept as tombstones, sorted by path.
func (s *Snapshot) Tombstones() []*Remove {
	out := make([]*Remove, 0, len(s.tombstones))
	for _, r := range s.tombstones {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// TxnVersion returns the latest txn version committed by application appID and whether there
// is one. An exactly-once sink skips every replayed epoch n with n ≤ this version
// (PROTOCOL.md "Transaction Identifiers", DESIGN.md §3).
func (s *Snapshot) TxnVersion(appID string) (int64, bool) {
	t, ok := s.txns[appID]
	return t.Version, ok
}

// Txns returns the latest txn action per appId.
func (s *Snapshot) Txns() map[string]Txn {
	out := make(map[string]Txn, len(s.txns))
	for k, v := range s.txns {
		out[k] = v
	}
	return out
}

// CheckWrite reports whether this package may write to the table: an error wrapping
// [ErrUnsupportedProtocol] names the protocol version, writer/reader feature or property
// that is not supported.
func (s *Snapshot) CheckWrite() error {
	if err := checkWrite(s.protocol, s.metadata); err != nil {
		return fmt.Errorf("check protocol %s: %w", s.root, err)
	}
	if err := checkClustering(s.protocol, s.metadata, s.domains); err != nil {
		return fmt.Errorf("check protocol %s: %w", s.root, err)
	}
	return nil
}

// CheckRead reports whether this package can read the table's data: the reader protocol
// must be supported (live files' deletion vectors are read, see [ReadDeletionVector]).
func (s *Snapshot) CheckRead() error {
	if err := checkRead(s.protocol, s.metadata); err != nil {
		return fmt.Errorf("check protocol %s: %w", s.root, err)
	}
	return nil
}

func tombstoneKey(path string, dv *DeletionVector) string { return path + "\x00" + dv.UniqueID() }

// apply folds the actions of one commit (or checkpoint) into s. Removes are applied before
// adds so that a commit replacing a file's deletion vector (add + remove of the same path)
// keeps the new add.
func (s *Snapshot) apply(actions []Action) error {
	for i := range actions {
		a := &actions[i]
		switch {
		case a.Protocol != nil:
			s.protocol = a.Protocol
		case a.MetaData != nil:
			schema, err := a.MetaData.Schema()
			if err != nil {
				return err
			}
			s.metadata, s.schema = a.MetaData, schema
		case a.Txn != nil:
			s.txns[a.Txn.AppID] = *a.Txn
		case a.DomainMetadata != nil:
			if a.DomainMetadata.Removed {
				delete(s.domains, a.DomainMetadata.Domain)
			} else {
				s.domains[a.DomainMetadata.Domain] = *a.DomainMetadata
			}
		case a.Remove != nil:
			r := a.Remove
			if live, ok := s.files[r.Path]; ok && live.DeletionVector.UniqueID() == r.DeletionVector.UniqueID() {
				delete(s.files, r.Path)
			}
			s.tombstones[tombstoneKey(r.Path, r.DeletionVector)] = r
		}
	}
	for i := range actions {
		if add := actions[i].Add; add != nil {
			s.files[add.Path] = add
			delete(s.tombstones, tombstoneKey(add.Path, add.DeletionVector))
		}
	}
	return nil
}

func (s *Snapshot) clone() *Snapshot {
	c := *s
	c.files = make(map[string]*Add, len(s.files))
	for k, v := range s.files {
		c.files[k] = v
	}
	c.tombstones = make(map[string]*Remove, len(s.tombstones))
	for k, v := range s.tombstones {
		c.tombstones[k] = v
	}
	c.txns = make(map[string]Txn, len(s.txns))
	for k, v := range s.txns {
		c.txns[k] = v
	}
	c.domains = make(map[string]DomainMetadata, len(s.domains))
	for k, v := range s.domains {
		c.domains[k] = v
	}
	return &c
}

func (s *Snapshot) validate() error {
	if s.protocol == nil {
		return fmt.Errorf("load snapshot %s version %d: %w: no protocol action", s.root, s.version, ErrLogIncomplete)
	}
	if s.metadata == nil {
		return fmt.Errorf("load snapshot %s version %d: %w: no metaData action", s.root, s.version, ErrLogIncomplete)
	}
	return nil
}

// Snapshot loads the latest version of the table. It fails with [ErrNotATable] when the
// directory has no Delta log.
func (t *Table) Snapshot(ctx context.Context) (*Snapshot, error) {
	return t.SnapshotAt(ctx, -1)
}

// SnapshotAt loads the table as of version (-1: latest). Replay starts from the newest
// complete checkpoint ≤ version found by listing `_delta_log` (so a stale or missing
// `_last_checkpoint` does not matter; an unreadable checkpoint falls back to an older one),
// then applies the JSON commits after it in order; a missing commit is an error wrapping
// [ErrLogIncomplete] (PROTOCOL.md "Checkpoints", "Action Reconciliation").
func (t *Table) SnapshotAt(ctx context.Context, version int64) (*Snapshot, error) {
	return t.snapshotAt(ctx, version, true)
}

// InspectSnapshot loads the latest version as Snapshot does, but also when the table's reader
// protocol is one this package does not support (reader features such as variantType or
// column mapping in mode name): for describing a table (`delta describe`), never for
// reading its data. Its protocol, metadata, schema, files and txns are what the log says; a
// feature may change what they mean (CheckRead names it).
func (t *Table) InspectSnapshot(ctx context.Context) (*Snapshot, error) {
	return t.snapshotAt(ctx, -1, false)
}

// snapshotAt is SnapshotAt; checkProtocol refuses a reader protocol this package does not
// support.
func (t *Table) snapshotAt(ctx context.Context, version int64, checkProtocol bool) (*Snapshot, error) {
	l, err := listLog(ctx, t.store)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load snapshot %s: %w", t.root, ErrNotATable)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", t.root, err)
	}
	target := version
	if target < 0 {
		target = l.maxCommit
		for v := range l.checkpoints {
			if v > target {
				target = v
			}
		}
	}
	if target < 0 {
		return nil, fmt.Errorf("load snapshot %s: %w", t.root, ErrNotATable)
	}
	if version >= 0 {
		if vs, err := l.versions(t.root); err == nil && version < vs.Earliest && version <= vs.Latest {
			return nil, fmt.Errorf("load snapshot %s version %d: the log before version %d was cleaned up (delta.logRetentionDuration); "+
				"the oldest version that can be reconstructed is %d (latest %d)", t.root, version, vs.Earliest, vs.Earliest, vs.Latest)
		}
		if !l.commits[version] && l.checkpoints[version] == nil {
			return nil, fmt.Errorf("load snapshot %s version %d: version does not exist (latest %d)", t.root, version, l.maxCommit)
		}
	}
	s := t.newSnapshot()
	var cpErr error
versions:
	for _, cv := range l.checkpointVersions(target) {
		for _, names := range l.checkpoints[cv] {
			cs := t.newSnapshot()
			if err := cs.readCheckpoint(ctx, cv, names); err != nil {
				cpErr = err
				continue
			}
			cs.version = cv
			s = cs
			break versions
		}
	}
	if s.version < 0 && cpErr != nil && !l.commits[0] {
		return nil, fmt.Errorf("load snapshot %s: %w", t.root, cpErr)
	}
	for v := s.version + 1; v <= target; v++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !l.commits[v] {
			return nil, fmt.Errorf("load snapshot %s: %w: commit %s is missing", t.root, ErrLogIncomplete, CommitFileName(v))
		}
		actions, err := readCommit(ctx, t.store, v)
		if err != nil {
			return nil, fmt.Errorf("load snapshot %s: %w", t.root, err)
		}
		if err := s.apply(actions); err != nil {
			return nil, fmt.Errorf("load snapshot %s version %d: %w", t.root, v, err)
		}
		s.version = v
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	if !checkProtocol {
		return s, nil
	}
	if err := checkRead(s.protocol, s.metadata); err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", t.root, err)
	}
	return s, nil
}

// Update returns a snapshot of the latest version, replaying only the commits after s, or
// reloading from the newest checkpoint when some of them were cleaned up. It returns s itself
// when nothing changed.
func (s *Snapshot) Update(ctx context.Context) (*Snapshot, error) {
	l, err := listLog(ctx, s.store)
	if err != nil {
		return nil, fmt.Errorf("update snapshot %s: %w", s.root, err)
	}
	if l.maxCommit <= s.version {
		return s, nil
	}
	for v := s.version + 1; v <= l.maxCommit; v++ {
		if !l.commits[v] {
			return (&Table{root: s.root, store: s.store, mem: s.mem}).SnapshotAt(ctx, -1)
		}
	}
	ns := s.clone()
	for v := s.version + 1; v <= l.maxCommit; v++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		actions, err := readCommit(ctx, s.store, v)
		if err != nil {
			return nil, fmt.Errorf("update snapshot %s: %w", s.root, err)
		}
		if err := ns.apply(actions); err != nil {
			return nil, fmt.Errorf("update snapshot %s version %d: %w", s.root, v, err)
		}
		ns.version = v
	}
	if err := checkRead(ns.protocol, ns.metadata); err != nil {
		return nil, fmt.Errorf("update snapshot %s: %w", s.root, err)
	}
	return ns, nil
}
