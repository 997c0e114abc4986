package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/streamkit/streamkit/storage"
)

// Mode is the write mode of a commit.
type Mode int

const (
	// Append adds files (a blind append: it reads nothing of the table, so concurrent
	// appends, compactions and deletes never conflict with it).
	Append Mode = iota
	// Overwrite removes every file live in the read snapshot and adds the new ones in the same
	// commit. It conflicts with concurrent commits that add or remove data files.
	Overwrite
)

// String returns "Append" or "Overwrite" (commitInfo.operationParameters.mode).
func (m Mode) String() string {
	if m == Overwrite {
		return "Overwrite"
	}
	return "Append"
}

// CommitRequest describes one atomic commit.
type CommitRequest struct {
	// Read is the snapshot the writer read (its Version becomes commitInfo.readVersion); nil
	// when the commit creates the table, which then requires Protocol and Metadata.
	Read *Snapshot
	// Protocol and Metadata, when set, are written as protocol/metaData actions (table
	// creation, schema evolution, property changes).
	Protocol *Protocol
	Metadata *Metadata // see Protocol
	// Mode is Append (default) or Overwrite.
	Mode Mode
	// Adds are the new data files (from DataWriter.Close).
	Adds []Add
	// Removes are extra files to remove (Overwrite removes all live files by itself).
	Removes []Remove
	// Txn, when set, records application progress {appId, version}; lastUpdated is filled
	// in. Commit fails with ConflictTransaction when a concurrent commit carries the same
	// appId.
	Txn *Txn
	// Txns are more txn actions in the same commit, for a writer that records progress per
	// part of its input: one appId per Kafka partition, as kafka-delta-ingest does
	// (docs/protocol.md §13). A concurrent commit carrying one of their appIds conflicts, as
	// for Txn; lastUpdated is filled in.
	Txns []Txn
	// ExpectTxn makes the commit conditional (compare and set): for every appId in it, the
	// read snapshot's txn version must be the value (NoTxn: the snapshot has no txn for the
	// appId), and no concurrent commit may carry a txn for it; otherwise Commit fails with a
	// ConflictTransaction *ConflictError naming the appId and both versions.
	ExpectTxn map[string]int64
	// Operation is commitInfo.operation; default "WRITE" ("CREATE TABLE" style names and
	// "STREAMING UPDATE" are common).
	Operation string
	// OperationParameters (string→string) default to {"mode": Mode, "partitionBy": JSON list}.
	OperationParameters map[string]string
	// OperationMetrics (string→string) default to numFiles, numOutputRows, numOutputBytes
	// (and numRemovedFiles for overwrites).
	OperationMetrics map[string]string
	// NoCheckpoint suppresses the automatic checkpoint.
	NoCheckpoint bool
}

// CommitResult is a successful commit.
type CommitResult struct {
	// Version is the committed table version.
	Version int64
	// Snapshot is the table state right after the commit.
	Snapshot *Snapshot
	// Attempts counts the put-if-absent attempts (1 when no race was lost).
	Attempts int
	// Checkpointed is true when a checkpoint was written for Version.
	Checkpointed bool
	// CheckpointErr is a failure to write the checkpoint; the commit itself is durable.
	CheckpointErr error
	// LogCleanup reports the expired log files deleted after the checkpoint (when
	// delta.enableExpiredLogCleanup is true, the default; see [Table.CleanupLog]); nil when no
	// checkpoint was written.
	LogCleanup *LogCleanup
	// LogCleanupErr is a failure of that cleanup; the commit and checkpoint are durable.
	LogCleanupErr error
}

// Commit writes one commit: commitInfo, then protocol/metaData if set, txn, removes and adds
// (DELTA.md "Actions"). The commit file is made visible with put-if-absent at version
// Read.Version+1; when another writer won that version, the newer commits are read and
// checked (DELTA.md "Concurrency"): a metaData or protocol change, or a txn for our appId,
// fails with a *ConflictError, as does a change of the clustering columns (domain
// delta.clustering) to columns the commit's files cannot serve (checkDomains, ConflictDomain);
// for appends other adds/removes never conflict and the same actions are retried at the next
// version (data files are not rewritten), with jittered exponential backoff (1 ms doubling to
// 500 ms) and at most MaxAttempts attempts. For Overwrite, concurrent data adds and removals
// of our removed files also conflict.
//
// A put whose outcome is unknown (a bucket's answer lost after the store's own retries) is
// settled by reading the log: a version holding our commitInfo.txnId is our commit. What
// reading cannot settle is retried with the same bytes at the same version, never at the next
// one; failing that, the error says the outcome is unknown and nothing more is written.
//
// The table's write protocol is checked first (errors wrap ErrUnsupportedProtocol), and
// delta.appendOnly tables refuse removes with dataChange. After the commit a classic
// checkpoint is written when version % delta.checkpointInterval == 0 (default 10), followed
// by the cleanup of expired log files ([Table.CleanupLog]) unless
// delta.enableExpiredLogCleanup is false.
func (t *Table) Commit(ctx context.Context, req CommitRequest) (*CommitResult, error) {
	meta, err := writeTarget(req)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", t.root, err)
	}
	if err := checkExpectedTxns(req); err != nil {
		return nil, err
	}
	nowMs := t.now().UnixMilli()
	removes, err := commitRemoves(req, meta, nowMs)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", t.root, err)
	}
	txnID := uuid.NewString()
	actions := t.commitActions(req, meta, removes, txnID, nowMs)
	data, err := encodeActions(actions)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", t.root, err)
	}
	// The store creates _delta_log (and the root) with the first commit, fsyncing the
	// directories on a local disk.
	return t.publish(ctx, req, actions, data, removes, txnID)
}

// readVersion is the version of the read snapshot, -1 when the commit creates the table.
func (req CommitRequest) readVersion() int64 {
	if req.Read == nil {
		return -1
	}
	return req.Read.version
}

// target returns the protocol and metadata the commit writes under: req's, else the read
// snapshot's (nil when neither has them).
func (req CommitRequest) target() (*Protocol, *Metadata) {
	proto, meta := req.Protocol, req.Metadata
	if req.Read != nil {
		if proto == nil {
			proto = req.Read.protocol
		}
		if meta == nil {
			meta = req.Read.metadata
		}
	}
	return proto, meta
}

// writeTarget returns the metadata the commit writes under (req's, else the read snapshot's)
// after checking that this package can write the table's protocol.
func writeTarget(req CommitRequest) (*Metadata, error) {
	proto, meta := req.target()
	if proto == nil || meta == nil {
		return nil, errors.New("creating a table needs protocol and metadata")
	}
	if err := checkWrite(proto, meta); err != nil {
		return nil, err
	}
	var domains map[string]DomainMetadata
	if req.Read != nil {
		domains = req.Read.domains
	}
	if err := checkClustering(proto, meta, domains); err != nil {
		return nil, err
	}
	return meta, nil
}

// commitRemoves returns req.Removes plus, for an Overwrite, a remove of every file live in
// the read snapshot (deleted at nowMs); a delta.appendOnly table refuses any with dataChange.
func commitRemoves(req CommitRequest, meta *Metadata, nowMs int64) ([]Remove, error) {
	removes := slices.Clone(req.Removes)
	if req.Mode == Overwrite && req.Read != nil {
		ext := true
		for _, a := range req.Read.Files() {
			size := a.Size
			removes = append(removes, Remove{Path: a.Path, DeletionTimestamp: &nowMs, DataChange: true,
				ExtendedFileMetadata: &ext, PartitionValues: a.PartitionValues, Size: &size,
				DeletionVector: a.DeletionVector, BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion})
		}
	}
	if configOf(meta).appendOnly {
		for _, r := range removes {
			if r.DataChange {
				return nil, fmt.Errorf("table is append-only (delta.appendOnly=true): cannot remove %s", r.Path)
			}
		}
	}
	return removes, nil
}

// commitActions returns the commit's actions in log order: commitInfo (with defaults for
// operation, engine, parameters and metrics), protocol, metaData, txn, removes, adds.
func (t *Table) commitActions(req CommitRequest, meta *Metadata, removes []Remove, txnID string, nowMs int64) []Action {
	readVersion := req.readVersion()
	blind := req.Mode == Append && len(removes) == 0
	info := &CommitInfo{
		Timestamp:           nowMs,
		Operation:           req.Operation,
		OperationParameters: req.OperationParameters,
		OperationMetrics:    req.OperationMetrics,
		IsolationLevel:      "WriteSerializable",
		IsBlindAppend:       blind,
		EngineInfo:          t.EngineInfo,
		TxnID:               txnID,
	}
	if req.Read != nil {
		info.ReadVersion = &readVersion
	}
	if info.Operation == "" {
		info.Operation = "WRITE"
	}
	if info.EngineInfo == "" {
		info.EngineInfo = "streamkit/dev"
	}
	if info.OperationParameters == nil {
		pb := meta.PartitionColumns
		if pb == nil {
			pb = []string{}
		}
		enc, _ := encodeJSONList(pb)
		info.OperationParameters = map[string]string{"mode": req.Mode.String(), "partitionBy": enc}
	}
	if info.OperationMetrics == nil {
		var rows, bytes int64
		for _, a := range req.Adds {
			bytes += a.Size
			rows += numRecordsOf(a.Stats)
		}
		info.OperationMetrics = map[string]string{
			"numFiles":       strconv.Itoa(len(req.Adds)),
			"numOutputRows":  strconv.FormatInt(rows, 10),
			"numOutputBytes": strconv.FormatInt(bytes, 10),
		}
		if len(removes) > 0 {
			info.OperationMetrics["numRemovedFiles"] = strconv.Itoa(len(removes))
		}
	}
	actions := []Action{{CommitInfo: info}}
	if req.Protocol != nil {
		actions = append(actions, Action{Protocol: req.Protocol})
	}
	if req.Metadata != nil {
		actions = append(actions, Action{MetaData: req.Metadata})
	}
	if req.Txn != nil {
		tx := *req.Txn
		tx.LastUpdated = &nowMs
		actions = append(actions, Action{Txn: &tx})
	}
	for _, t := range req.Txns {
		tx := t
		tx.LastUpdated = &nowMs
		actions = append(actions, Action{Txn: &tx})
	}
	for i := range removes {
		actions = append(actions, Action{Remove: &removes[i]})
	}
	for i := range req.Adds {
		actions = append(actions, Action{Add: &req.Adds[i]})
	}
	return actions
}

// maxUnknownOutcomes bounds how often one commit retries a version whose put-if-absent
// failed with an unknown outcome that reading the log could not settle (see publish).
const maxUnknownOutcomes = 3

// publish makes data (the encoded actions) the next version of the log with put-if-absent,
// starting at the read version + 1. When another writer won a version it checks every newer
// commit with checkConflict and retries at the next free version, with jittered exponential
// backoff and at most t.MaxAttempts attempts.
//
// A commit whose outcome is unknown is never written again blindly. Every commit of the log
// that carries our commitInfo.txnId is ours: the version it holds is the result, whether we
// learn it from the read-back after a failed put, or while checking the commits that won the
// versions we tried (a put whose response was lost may land before its retry). After a failed
// put (not ErrExist) the version is read back: ours → done; another writer's → a lost race;
// absent or unreadable → for a store error after its own retries ([storage.OpError]) the same
// bytes are put at the same version again, which put-if-absent can create only once, at most
// maxUnknownOutcomes times; a local error ends the commit as before.
func (t *Table) publish(ctx context.Context, req CommitRequest, actions []Action, data []byte, removes []Remove, txnID string) (*CommitResult, error) {
	readVersion := req.readVersion()
	removed := map[string]bool{}
	for _, r := range removes {
		removed[r.Path] = true
	}
	maxAttempts := t.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 100
	}
	var newer [][]Action                  // commits by others between readVersion and ours
	var domains map[string]DomainMetadata // the domains after newer (nil: the read snapshot's)
	version := readVersion + 1
	backoff := time.Millisecond
	unknown := 0 // unsettled unknown outcomes so far
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if unknown > 0 {
				return nil, t.unknownOutcome(version, err)
			}
			return nil, fmt.Errorf("commit %s: %w", t.root, err)
		}
		err := t.store.PutIfAbsent(ctx, logName(CommitFileName(version)), data)
		if err == nil {
			return t.finishCommit(req, actions, newer, version, attempt), nil
		}
		if !errors.Is(err, storage.ErrExist) {
			// The put may have taken effect: read the version back.
			got, rerr := readCommit(ctx, t.store, version)
			switch {
			case rerr == nil && ownCommit(got, txnID):
				return t.finishCommit(req, actions, newer, version, attempt), nil
			case rerr == nil:
				// Another writer's commit holds the version: a lost race, checked below.
			default:
				var oe *storage.OpError
				if !errors.As(err, &oe) {
					return nil, fmt.Errorf("commit %s version %d: %w", t.root, version, err)
				}
				if unknown++; unknown > maxUnknownOutcomes || attempt >= maxAttempts {
					return nil, t.unknownOutcome(version, err)
				}
				backoff = t.pause(backoff)
				continue // the same bytes at the same version
			}
		}
		// Lost the race: check every commit from version on.
		for ; ; version++ {
			other, err := readCommit(ctx, t.store, version)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("commit %s: read concurrent commit: %w", t.root, err)
			}
			if ownCommit(other, txnID) {
				// An earlier put of ours landed after all (its answer was lost).
				return t.finishCommit(req, actions, newer, version, attempt), nil
			}
			if err := checkConflict(version, other, req, removed); err != nil {
				return nil, err
			}
			if domains, err = checkDomains(version, other, req, domains); err != nil {
				return nil, err
			}
			newer = append(newer, other)
		}
		if attempt >= maxAttempts {
			return nil, fmt.Errorf("commit %s: gave up after %d attempts (last tried version %d)", t.root, attempt, version)
		}
		backoff = t.pause(backoff)
	}
}

// pause sleeps a jittered backoff (between half and all of backoff) and returns the next one,
// doubling up to 500 ms.
func (t *Table) pause(backoff time.Duration) time.Duration {
	jitter := time.Duration(rand.Int64N(int64(backoff) + 1))
	t.sleep(backoff/2 + jitter/2)
	return min(2*backoff, 500*time.Millisecond)
}

// ownCommit reports whether the commit's commitInfo carries txnID (written by this Commit).
func ownCommit(actions []Action, txnID string) bool {
	for _, a := range actions {
		if a.CommitInfo != nil {
			return a.CommitInfo.TxnID == txnID
		}
	}
	return false
}

// unknownOutcome is the error of a commit whose put of version may or may not have taken
// effect: nothing more is written; the log decides (a restarted writer finds its txn version
// in it, or not).
func (t *Table) unknownOutcome(version int64, err error) error {
	return fmt.Errorf("commit %s version %d: outcome unknown, not retried (the log tells whether it was committed: a restarted writer reads it): %w",
		t.root, version, err)
}

// finishCommit builds the post-commit snapshot and writes the checkpoint when due.
func (t *Table) finishCommit(req CommitRequest, ours []Action, newer [][]Action, version int64, attempts int) *CommitResult {
	res := &CommitResult{Version: version, Attempts: attempts}
	var s *Snapshot
	if req.Read != nil {
		s = req.Read.clone()
	} else {
		s = t.newSnapshot()
	}
	ok := true
	for _, c := range newer {
		if err := s.apply(c); err != nil {
			ok = false
		}
	}
	if err := s.apply(ours); err != nil {
		ok = false
	}
	s.version = version
	if !ok || s.validate() != nil {
		// Fall back to reading the log.
		if ls, err := t.SnapshotAt(context.Background(), version); err == nil {
			s = ls
		} else {
			res.CheckpointErr = err
			return res
		}
	}
	res.Snapshot = s
	if !req.NoCheckpoint && version > 0 && version%configOf(s.metadata).checkpointInterval == 0 {
		res.CheckpointErr = t.writeCheckpoint(context.Background(), s)
		res.Checkpointed = res.CheckpointErr == nil
		if cfg := configOf(s.metadata); res.Checkpointed && cfg.expiredLogCleanup {
			res.LogCleanup, res.LogCleanupErr = t.CleanupLog(context.Background(), cfg.logRetention, false)
		}
	}
	return res
}

// Checkpoint writes a checkpoint of snapshot s (classic, or v2 when the table's
// delta.checkpointPolicy is v2) and points `_last_checkpoint` at it (unless that already names
// a newer version).
func (t *Table) Checkpoint(s *Snapshot) error { return t.writeCheckpoint(context.Background(), s) }

// NumRecords returns numRecords from the file's stats JSON; 0 when the stats are absent or do
// not parse.
func (a *Add) NumRecords() int64 { return numRecordsOf(a.Stats) }

// StatsNumRecords returns numRecords from the file's stats JSON and whether the stats give it
// (false when they are absent, do not parse or have no numRecords: the count is unknown).
func (a *Add) StatsNumRecords() (int64, bool) { return statsNumRecords(a.Stats) }

func numRecordsOf(stats string) int64 {
	n, _ := statsNumRecords(stats)
	return n
}

func statsNumRecords(stats string) (int64, bool) {
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if stats == "" || jsonUnmarshal([]byte(stats), &st) != nil || st.NumRecords == nil {
		return 0, false
	}
	return *st.NumRecords, true
}
