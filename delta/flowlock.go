package delta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// FlowLockDir is the directory, inside a table root, holding one lock file per flow (txn
// appId) of streamkit's writers: `<table>/_streamkit/flows/<flow>.lock`. It is not part of the
// Delta protocol: readers only read `_delta_log` and the files it names, and VACUUM (Spark's,
// delta-rs', streamkit's) skips directories whose names start with '_'.
const FlowLockDir = "_streamkit/flows"

// FlowHolder describes the process holding a flow's lock.
type FlowHolder struct {
	Tool       string    `json:"tool"`                 // e.g. "write-delta", "backfill"
	PID        int       `json:"pid"`                  // process id
	Host       string    `json:"host"`                 // host name
	Since      time.Time `json:"since"`                // when the lock was taken
	Checkpoint string    `json:"checkpoint,omitempty"` // the holder's checkpoint directory, if any
}

// FlowOwner is the checkpoint a flow is bound to: the one whose epochs the table's txn
// version for the flow counts.
type FlowOwner struct {
	Checkpoint   string    `json:"checkpoint"`    // its directory when it was bound
	CheckpointID string    `json:"checkpoint_id"` // its identity (kept in the checkpoint)
	Since        time.Time `json:"since"`         // when it was bound
}

// FlowRecord is the JSON content of a flow's lock file: the flow, the table's metaData.id,
// the owning checkpoint (kept after the holder exits) and the current or last holder.
type FlowRecord struct {
	Flow    string     `json:"flow"`
	TableID string     `json:"table_id,omitempty"`
	Owner   *FlowOwner `json:"owner,omitempty"`
	Holder  FlowHolder `json:"holder"`
}

// FlowBusyError reports that another process holds the flow's lock.
type FlowBusyError struct {
	Flow, Table, Path string
	Holder            FlowHolder // zero when the lock file could not be read
}

// Error names the flow, the table and the other holder.
func (e *FlowBusyError) Error() string {
	h := "another process"
	if e.Holder.PID > 0 {
		h = fmt.Sprintf("%s (pid %d on %s, since %s", e.Holder.Tool, e.Holder.PID, e.Holder.Host, e.Holder.Since.UTC().Format(time.RFC3339))
		if e.Holder.Checkpoint != "" {
			h += ", checkpoint " + e.Holder.Checkpoint
		}
		h += ")"
	}
	return fmt.Sprintf("flow %q of table %s is in use by %s, which holds %s; only one writer may run per flow (a second one would skip the other's epochs)",
		e.Flow, e.Table, h, e.Path)
}

// FlowLock is a held flow lock: an exclusive flock(2) on the flow's lock file, released by
// Release or when the process exits (also kill -9).
type FlowLock struct {
	f    *os.File
	path string
	root string
	// newRoot: LockFlow created the table root (it did not exist before).
	newRoot bool
	// Prev is what the lock file held before this process took it (zero for a new file).
	Prev FlowRecord
	rec  FlowRecord
}

// FlowLockPath returns the lock file of flow in the table rooted at root. The flow id is
// percent-escaped into a file name; ids longer than 150 bytes are shortened with a hash.
func FlowLockPath(root, flow string) string {
	name := url.PathEscape(flow)
	if len(name) > 150 {
		sum := sha256.Sum256([]byte(flow))
		name = name[:100] + "-" + hex.EncodeToString(sum[:12])
	}
	return filepath.Join(root, filepath.FromSlash(FlowLockDir), name+".lock")
}

// LockFlow takes the lock of flow in the table rooted at root (creating the lock directory),
// waiting up to wait (0: not at all) while another process holds it; then a *FlowBusyError is
// returned. On success the lock file is rewritten with holder, keeping the table id and owner
// it recorded (see [FlowLock.Prev] and [FlowLock.Bind]).
func LockFlow(ctx context.Context, root, flow string, wait time.Duration, holder FlowHolder) (*FlowLock, error) {
	p := FlowLockPath(root, flow)
	_, statErr := os.Stat(root)
	newRoot := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("lock flow %s: %w", flow, err)
	}
	deadline := time.Now().Add(wait)
	var f *os.File
	for {
		var err error
		if f == nil {
			if f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
				return nil, fmt.Errorf("lock flow %s: %w", flow, err)
			}
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			if sameFile(f, p) {
				break
			}
			f.Close() // the file was removed (FlowLock.Finish) before we locked it: start over
			f = nil
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock flow %s: %s: %w", flow, p, err)
		}
		if !time.Now().Before(deadline) {
			busy := &FlowBusyError{Flow: flow, Table: root, Path: p}
			if rec, err := readFlowRecord(p); err == nil {
				busy.Holder = rec.Holder
			}
			f.Close()
			return nil, busy
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	l := &FlowLock{f: f, path: p, root: root, newRoot: newRoot}
	if rec, err := readFlowRecord(p); err == nil {
		l.Prev = rec
	}
	if holder.PID == 0 {
		holder.PID = os.Getpid()
	}
	if holder.Host == "" {
		holder.Host, _ = os.Hostname()
	}
	if holder.Since.IsZero() {
		holder.Since = time.Now().UTC()
	}
	l.rec = l.Prev
	l.rec.Flow, l.rec.Holder = flow, holder
	if err := l.write(); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

func readFlowRecord(p string) (FlowRecord, error) {
	var rec FlowRecord
	b, err := os.ReadFile(p)
	if err != nil {
		return rec, err
	}
	if len(b) == 0 {
		return rec, nil
	}
	err = json.Unmarshal(b, &rec)
	return rec, err
}

// write replaces the lock file's content with l.rec (write, truncate the rest, fsync).
func (l *FlowLock) write() error {
	b, err := json.MarshalIndent(l.rec, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write flow lock %s: %w", l.path, err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("write flow lock %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("write flow lock %s: %w", l.path, err)
	}
	return nil
}

// Path is the lock file.
func (l *FlowLock) Path() string { return l.path }

// Record is what the lock file holds now.
func (l *FlowLock) Record() FlowRecord { return l.rec }

// Bind records in the lock file the table's metaData.id (when not empty) and, when owner is
// not nil, the checkpoint that owns the flow from now on (an owner with an empty CheckpointID
// removes the binding).
func (l *FlowLock) Bind(tableID string, owner *FlowOwner) error {
	if tableID != "" {
		l.rec.TableID = tableID
	}
	switch {
	case owner != nil && owner.CheckpointID == "":
		l.rec.Owner = nil
	case owner != nil:
		l.rec.Owner = owner
	}
	return l.write()
}

// sameFile reports whether the open file f is still the file at path p.
func sameFile(f *os.File, p string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(p)
	return err == nil && os.SameFile(a, b)
}

// Finish releases the lock at the end of a run. When the root holds no Delta table (no
// _delta_log: the writer failed, or was stopped, before its first commit), it first deletes
// the lock file and the directories above it that are then empty, up to the table root, which
// goes too only if LockFlow created it: a failed run leaves no directory that looks like a
// table, and an existing directory the user gave stays. Processes waiting for the lock start
// over. Safe on nil.
func (l *FlowLock) Finish() {
	if l == nil || l.f == nil {
		return
	}
	if _, err := os.Stat(filepath.Join(l.root, LogDir)); errors.Is(err, os.ErrNotExist) {
		os.Remove(l.path)
		for d := filepath.Dir(l.path); len(d) > len(l.root) || (d == l.root && l.newRoot); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	l.Release()
}

// Release gives the lock up (closing the descriptor releases the flock); the file and its
// record stay. Safe on nil.
func (l *FlowLock) Release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
