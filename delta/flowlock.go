package delta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streamkit/streamkit/storage"
)

// FlowLockDir is the directory, inside a table root, holding one lock file per flow (txn
// appId) of streamkit's writers: `<table>/_streamkit/flows/<flow>.lock`. It is not part of the
// Delta protocol: readers only read `_delta_log` and the files it names, and VACUUM (Spark's,
// delta-rs', streamkit's) skips directories whose names start with '_'. On a bucket the lock
// is a lease, `<flow>.lease/<generation>.json` beside the `<flow>.lock` record (see
// [Table.LockFlow]).
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
	// Flow is the flow id, Table the table root (a redacted URL for a bucket table), Path the
	// lock file or, on a bucket, the lease.
	Flow, Table, Path string
	Holder            FlowHolder // zero when the lock file could not be read
	// Left is, on a bucket, how long the holder's lease stays valid if it stops renewing it
	// (it was killed); 0 on a local disk, where the lock goes with the process.
	Left time.Duration
}

// Error names the flow, the table and the other holder.
func (e *FlowBusyError) Error() string {
	h := "another process"
	if e.Holder.PID > 0 {
		tool := e.Holder.Tool
		if tool == "" {
			tool = "a process"
		}
		h = fmt.Sprintf("%s (pid %d on %s", tool, e.Holder.PID, e.Holder.Host)
		if !e.Holder.Since.IsZero() {
			h += ", since " + e.Holder.Since.UTC().Format(time.RFC3339)
		}
		if e.Holder.Checkpoint != "" {
			h += ", checkpoint " + e.Holder.Checkpoint
		}
		h += ")"
	}
	held := e.Path
	if e.Left > 0 {
		held = fmt.Sprintf("the lease %s (valid for %s more if its holder stops)", e.Path, e.Left.Round(time.Second))
	}
	return fmt.Sprintf("flow %q of table %s is in use by %s, which holds %s; only one writer may run per flow (a second one would skip the other's epochs)",
		e.Flow, e.Table, h, held)
}

// FlowLock is a held flow lock. On a local disk it is an exclusive flock(2) on the flow's lock
// file, released by Release or when the process exits (also kill -9). On a bucket it is a
// [storage.Lease] that renews itself in the background; a killed holder's lease expires after
// its TTL ([storage.LeaseTTL]), and a lease that could not be renewed in time or was taken
// over is lost: [FlowLock.Lost] is closed then, and the writer must stop committing.
type FlowLock struct {
	f     *os.File       // local: the flocked lock file
	lease *storage.Lease // bucket: the held lease
	store storage.Store  // bucket: the table's store
	name  string         // bucket: the record's name in store
	path  string         // the lock file, or the record's URL
	root  string
	// newRoot: LockFlow created the table root (it did not exist before).
	newRoot bool
	// Prev is what the lock file held before this process took it (zero for a new file).
	Prev FlowRecord
	rec  FlowRecord
}

// FlowLockPath returns the lock file of flow in the table rooted at local directory root. The
// flow id is percent-escaped into a file name; ids longer than 150 bytes are shortened with a
// hash.
func FlowLockPath(root, flow string) string {
	return filepath.Join(root, filepath.FromSlash(flowLockName(flow)))
}

// flowLockName is the name of flow's lock file (record) relative to the table root.
func flowLockName(flow string) string {
	name := url.PathEscape(flow)
	if len(name) > 150 {
		sum := sha256.Sum256([]byte(flow))
		name = name[:100] + "-" + hex.EncodeToString(sum[:12])
	}
	return FlowLockDir + "/" + name + ".lock"
}

// LockFlow takes the lock of flow in the table: [LockFlow] on a local table; on a bucket the
// lease `_streamkit/flows/<flow>.lease` ([storage.AcquireLease], TTL [storage.LeaseTTL]),
// whose holder's record (holder, table id, owner) is the object `_streamkit/flows/<flow>.lock`.
// It waits up to wait (0: not at all) while another live process holds the flow, then
// returns a *FlowBusyError. Callers use the lock alike on both: Prev, Bind, Finish, Release;
// a bucket writer also watches [FlowLock.Lost].
func (t *Table) LockFlow(ctx context.Context, flow string, wait time.Duration, holder FlowHolder) (*FlowLock, error) {
	if t.store.LocalDir() != "" {
		return LockFlow(ctx, t.root, flow, wait, holder) // the root as given, as in messages
	}
	return lockFlowLease(ctx, t.store, t.root, flow, wait, holder)
}

// LockFlow takes the lock of flow in the table rooted at local directory root (creating the
// lock directory), waiting up to wait (0: not at all) while another process holds it; then a
// *FlowBusyError is returned. On success the lock file is rewritten with holder, keeping the
// table id and owner it recorded (see [FlowLock.Prev] and [FlowLock.Bind]). For a table that
// may be on a bucket use [Table.LockFlow].
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
	return l.hold(flow, holder)
}

// hold records holder (defaults filled in) as the flow's holder, keeping what Prev recorded.
func (l *FlowLock) hold(flow string, holder FlowHolder) (*FlowLock, error) {
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

// lockFlowLease is [Table.LockFlow] on a bucket: the lease, then the record.
func lockFlowLease(ctx context.Context, s storage.Store, root, flow string, wait time.Duration, holder FlowHolder) (*FlowLock, error) {
	name := flowLockName(flow)
	leaseDir := strings.TrimSuffix(name, ".lock") + ".lease"
	deadline := time.Now().Add(wait)
	var lease *storage.Lease
	for {
		var err error
		lease, err = storage.AcquireLease(ctx, s, leaseDir, fmt.Sprintf("flow %q of table %s", flow, root), storage.LeaseTTL())
		if err == nil {
			break
		}
		var lb *storage.LeaseBusyError
		if !errors.As(err, &lb) {
			return nil, fmt.Errorf("lock flow %s: %w", flow, err)
		}
		if !time.Now().Before(deadline) {
			busy := &FlowBusyError{Flow: flow, Table: root, Path: lb.Location, Left: max(lb.Left, time.Second),
				Holder: FlowHolder{PID: lb.Holder.PID, Host: lb.Holder.Host}}
			// The record names the tool and checkpoint, if it is the lease holder's.
			if rec, err := readStoreFlowRecord(ctx, s, name); err == nil && rec.Holder.PID == lb.Holder.PID && rec.Holder.Host == lb.Holder.Host {
				busy.Holder = rec.Holder
			}
			return nil, busy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(500*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
	l := &FlowLock{lease: lease, store: s, name: name, path: s.Location() + "/" + name, root: root}
	rec, err := readStoreFlowRecord(ctx, s, name)
	switch {
	case err == nil:
		l.Prev = rec
	case !errors.Is(err, fs.ErrNotExist):
		// Without the record the flow's owner would be forgotten: do not guess.
		lease.Release()
		return nil, fmt.Errorf("lock flow %s: %w", flow, err)
	}
	return l.hold(flow, holder)
}

func readFlowRecord(p string) (FlowRecord, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return FlowRecord{}, err
	}
	return parseFlowRecord(b)
}

func readStoreFlowRecord(ctx context.Context, s storage.Store, name string) (FlowRecord, error) {
	b, err := s.ReadFile(ctx, name)
	if err != nil {
		return FlowRecord{}, err
	}
	rec, err := parseFlowRecord(b)
	if err != nil {
		return rec, fmt.Errorf("flow lock %s/%s: %w", s.Location(), name, err)
	}
	return rec, nil
}

func parseFlowRecord(b []byte) (FlowRecord, error) {
	var rec FlowRecord
	if len(b) == 0 {
		return rec, nil
	}
	err := json.Unmarshal(b, &rec)
	return rec, err
}

// write replaces the lock file's content with l.rec: in place on a local disk (write, truncate
// the rest, fsync), an atomic replace of the record on a bucket while the lease is held.
func (l *FlowLock) write() error {
	b, err := json.MarshalIndent(l.rec, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if l.lease != nil {
		if err := l.lease.Err(); err != nil {
			return fmt.Errorf("write flow lock %s: %w", l.path, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), storage.LeaseTTL())
		defer cancel()
		if err := l.store.WriteFile(ctx, l.name, b); err != nil {
			return fmt.Errorf("write flow lock %s: %w", l.path, err)
		}
		return nil
	}
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

// Path is the lock file (on a bucket: the URL of the record object).
func (l *FlowLock) Path() string { return l.path }

// Lost is closed when a bucket table's lease is lost: not renewed within its TTL (the store was
// unreachable) or taken over by another process after that. The holder must then stop
// committing at once — another writer of the flow may be running — and fail; [FlowLock.Err]
// says why. On a local disk the lock cannot be lost while the process lives, and Lost is nil
// (a receive blocks forever).
func (l *FlowLock) Lost() <-chan struct{} {
	if l == nil || l.lease == nil {
		return nil
	}
	return l.lease.Lost()
}

// Err is why the lock was lost (see [FlowLock.Lost]), or nil while it is held.
func (l *FlowLock) Err() error {
	if l == nil || l.lease == nil {
		return nil
	}
	return l.lease.Err()
}

// Check is nil while the lock is surely held ([storage.Lease.Check]: not lost, renewed
// recently); always nil on a local table, whose flock cannot be lost.
func (l *FlowLock) Check() error {
	if l == nil || l.lease == nil {
		return nil
	}
	return l.lease.Check()
}

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
// over. On a bucket it deletes the record; the lease's last (released) generation stays, since
// deleting the newest generation could let two later processes both take the lease. Safe on
// nil.
func (l *FlowLock) Finish() {
	if l == nil {
		return
	}
	if l.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storage.LeaseTTL())
		defer cancel()
		if ents, err := l.store.ReadDir(ctx, LogDir); err == nil && len(ents) == 0 && l.lease.Err() == nil {
			l.store.Remove(ctx, l.name)
		}
		l.Release()
		return
	}
	if l.f == nil {
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

// Release gives the lock up (closing the descriptor releases the flock; on a bucket the lease
// is released, so the next process need not wait out its TTL); the file and its record stay.
// Safe on nil.
func (l *FlowLock) Release() {
	if l != nil && l.lease != nil {
		l.lease.Release() // idempotent; a failure leaves the lease to expire
	}
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
