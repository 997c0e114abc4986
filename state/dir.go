package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streamkit/streamkit/storage"
)

// Subdirectories and files of a stage checkpoint directory (DESIGN.md §3, docs/protocol.md).
const (
	LockFile     = "LOCK"          // flock'ed by the owning process; holds its PID
	MetadataFile = "metadata.json" // tool, options that shape state, fingerprint
	OffsetsDir   = "offsets"       // sources: <epoch>.json = end position of the epoch (WAL)
	StateDir     = "state"         // operators: <epoch>.json manifest + Arrow IPC changelog/snapshot
	CommitsDir   = "commits"       // <epoch>.json written by the sink once the epoch is durable
)

// EpochName is the file name stem of epoch n: 20 zero-padded decimal digits, so names sort.
func EpochName(n uint64) string { return fmt.Sprintf("%020d", n) }

// Metadata is metadata.json: who owns the directory and the options that shape its state.
type Metadata struct {
	Tool    string            `json:"tool"`
	Name    string            `json:"name"`
	Options map[string]string `json:"options"` // state-shaping options, e.g. "key": "value.id"
	// Fingerprint is the hex SHA-256 of the sorted Options; set by Open.
	Fingerprint string    `json:"fingerprint"`
	Created     time.Time `json:"created"`
}

// Fingerprint returns the hex SHA-256 of options as sorted "k=v\n" lines.
func Fingerprint(options map[string]string) string {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, options[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// IncompatibleError is returned by Open when a restart's state-shaping options differ from
// the ones the directory was created with. Diffs names each differing option.
type IncompatibleError struct {
	Path  string
	Diffs []string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("checkpoint %s was written with other options: %s; use the original options or a new checkpoint directory",
		e.Path, strings.Join(e.Diffs, "; "))
}

// LeaseFile is the lease of a checkpoint directory on a bucket: a directory of put-if-absent
// generation objects (storage.AcquireLease) that replaces the flock of LockFile.
const LeaseFile = "_lease"

// LockedError is returned by Open when another live process holds the directory: the flock
// of a local directory, the lease of one on a bucket.
type LockedError struct {
	Path string
	PID  string // as recorded in LOCK (or the lease) by the holder; "" when unreadable
	// Host and Expires are set for a bucket lease: the holder's host, and how long its lease
	// stays valid if it stops renewing (a killed holder's lease is free after that).
	Host    string
	Expires time.Duration
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID != "" {
		holder = "process " + e.PID
	}
	if e.Host != "" {
		holder += " on " + e.Host
		return fmt.Sprintf("checkpoint %s is locked by %s (its lease expires %s after that process stops): each stage needs its own directory (use --name or --checkpoint)",
			e.Path, holder, e.Expires.Round(time.Second))
	}
	return fmt.Sprintf("checkpoint %s is locked by %s: each stage needs its own directory (use --name or --checkpoint)", e.Path, holder)
}

// Dir is an open, exclusively held stage checkpoint directory: flock'ed on a local disk,
// leased on a bucket.
type Dir struct {
	// Path is the directory's location: an absolute local path, or the bucket URL (redacted).
	Path       string
	Meta       Metadata
	st         storage.Store
	lock       *os.File       // local: the flock'ed LOCK file
	lease      *storage.Lease // bucket: the held lease
	tool, name string
}

// Open creates (if needed) and takes the checkpoint directory at location path (a local path
// or a bucket URL) for tool/name with the given state-shaping options (nil: bind them later
// with CheckOptions). It fails at once with *LockedError if another process holds it, with
// *IncompatibleError if the directory was created with other options, and with *CorruptError
// if metadata.json is damaged. Leftover temporary files of a crashed writer are removed (a
// bucket has none).
//
// A local directory is held by flock(2) on LOCK. A bucket prefix is held by the lease
// LeaseFile for storage.LeaseTTL(), renewed in the background; once it is lost (Lost), every
// write through the Dir fails (Held).
func Open(path, tool, name string, options map[string]string) (*Dir, error) {
	if err := storage.CheckScheme(path); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	abs, err := Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %s: %w", path, err)
	}
	st, err := StoreAt(path)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %s: %w", abs, err)
	}
	if isLocal(st) {
		abs = st.LocalDir() // also for a file:// URL
	}
	d := &Dir{Path: abs, st: st, tool: tool, name: name}
	if isLocal(st) {
		err = d.flock()
	} else {
		err = d.acquire()
	}
	if err != nil {
		return nil, err
	}
	sweepTemps(st)
	if options == nil {
		return d, nil // the caller binds options later with CheckOptions
	}
	if err := d.CheckOptions(options); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// flock creates the subdirectories of a local directory and takes the flock on LOCK.
func (d *Dir) flock() error {
	abs := d.Path
	for _, sub := range []string{OffsetsDir, StateDir, CommitsDir} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return fmt.Errorf("open checkpoint %s: %w", abs, err)
		}
	}
	lf, err := os.OpenFile(filepath.Join(abs, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open checkpoint %s: %w", abs, err)
	}
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(filepath.Join(abs, LockFile))
		lf.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return &LockedError{Path: abs, PID: strings.TrimSpace(string(pid))}
		}
		return fmt.Errorf("lock checkpoint %s: %w", abs, err)
	}
	lf.Truncate(0)
	lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	d.lock = lf
	return nil
}

// acquire takes the lease of a directory on a bucket (there are no directories to create).
func (d *Dir) acquire() error {
	l, err := storage.AcquireLease(bg, d.st, LeaseFile, "checkpoint "+d.Path, storage.LeaseTTL())
	var busy *storage.LeaseBusyError
	if errors.As(err, &busy) {
		return &LockedError{Path: d.Path, PID: strconv.Itoa(busy.Holder.PID), Host: busy.Holder.Host, Expires: busy.Left}
	}
	if err != nil {
		return fmt.Errorf("lease checkpoint %s: %w", d.Path, err)
	}
	d.lease = l
	return nil
}

// Store is the store rooted at the checkpoint directory: names such as "offsets/<n>.json"
// are relative to it. Files a stage keeps beside the standard ones (the seen-files log of
// read-files, write-delta's flow record) go through it, so they live wherever the directory
// does.
func (d *Dir) Store() storage.Store { return d.st }

// Lost is closed when the directory's lease on a bucket is lost (taken over after this
// process failed to renew it for a TTL); nil, which never closes, for a local directory.
func (d *Dir) Lost() <-chan struct{} {
	if d == nil || d.lease == nil {
		return nil
	}
	return d.lease.Lost()
}

// Held is nil while this process holds the directory, and the reason once its lease is lost:
// a stage must then stop without writing (another process may own the directory now).
func (d *Dir) Held() error {
	if d == nil || d.lease == nil {
		return nil
	}
	if err := d.lease.Check(); err != nil {
		return fmt.Errorf("checkpoint %s: this process lost its lease and stops without committing: %w", d.Path, err)
	}
	return nil
}

// CheckOptions binds the state-shaping options of this run to the directory: on first use it
// writes metadata.json; afterwards it refuses (*IncompatibleError, naming each difference)
// options that differ from the recorded ones. Open calls it unless given nil options (for
// stages that know their options only after reading the input schema).
func (d *Dir) CheckOptions(options map[string]string) error {
	if options == nil {
		options = map[string]string{}
	}
	want := Metadata{Tool: d.tool, Name: d.name, Options: options, Fingerprint: Fingerprint(options), Created: time.Now().UTC()}
	var have Metadata
	err := ReadJSONAt(d.st, MetadataFile, &have)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := d.Held(); err != nil {
			return err
		}
		if err := WriteJSONAt(d.st, MetadataFile, want); err != nil {
			return err
		}
		d.Meta = want
	case err != nil:
		return err
	default:
		if diffs := diffMeta(have, want); len(diffs) > 0 {
			return &IncompatibleError{Path: d.Path, Diffs: diffs}
		}
		d.Meta = have
	}
	return nil
}

// LaterOptions are state-shaping options that stages record only since a later version
// (dedup's time-unit and tz): a checkpoint written before holds none, and any value of them
// matches it (it cannot tell which one it was written with); once recorded they must match.
var LaterOptions = map[string]bool{"time-unit": true, "tz": true}

func diffMeta(have, want Metadata) []string {
	var diffs []string
	if have.Tool != want.Tool {
		diffs = append(diffs, fmt.Sprintf("tool: checkpoint has %q, this run is %q", have.Tool, want.Tool))
	}
	keys := map[string]bool{}
	for k := range have.Options {
		keys[k] = true
	}
	for k := range want.Options {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		h, hok := have.Options[k]
		w, wok := want.Options[k]
		switch {
		case hok && wok && h != w:
			diffs = append(diffs, fmt.Sprintf("%s: checkpoint has %q, this run has %q", k, h, w))
		case hok && !wok:
			diffs = append(diffs, fmt.Sprintf("%s: checkpoint has %q, this run has none", k, h))
		case !hok && wok && !LaterOptions[k]:
			diffs = append(diffs, fmt.Sprintf("%s: checkpoint has none, this run has %q", k, w))
		}
	}
	return diffs
}

// Close releases the lock, or the lease (writing a released generation, so the next owner
// need not wait out the TTL).
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	var err error
	if d.lock != nil {
		err = d.lock.Close() // closing the descriptor releases the flock
		d.lock = nil
	}
	if d.lease != nil {
		err = d.lease.Release()
		d.lease = nil
	}
	return err
}

// Epochs lists the epochs that have a valid-looking file "<epoch>.json" (EpochName) in sub
// (OffsetsDir, StateDir, CommitsDir, or any directory of such files, such as the files log of
// source/files) of the checkpoint directory at location path, ascending; a missing directory
// has none. It does not verify checksums; readers do that on load.
func Epochs(path, sub string) ([]uint64, error) {
	st, err := openLoc("list", path)
	if err != nil {
		return nil, err
	}
	return EpochsAt(st, sub)
}

// EpochsAt is Epochs for directory sub of st.
func EpochsAt(st storage.Store, sub string) ([]uint64, error) {
	ents, err := st.ReadDir(bg, sub)
	if err != nil {
		return nil, err
	}
	return epochsOf(ents)
}

// epochsOf picks the epoch files out of a listing, ascending.
func epochsOf(ents []storage.Info) ([]uint64, error) {
	var out []uint64
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name, ".json")
		if !ok || len(stem) != 20 || e.IsDir {
			continue
		}
		n, err := strconv.ParseUint(stem, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// CommitRecord is the content of commits/<epoch>.json.
type CommitRecord struct {
	Epoch uint64    `json:"epoch"`
	By    string    `json:"by"` // the sink that made the epoch durable, e.g. "write-delta"
	Time  time.Time `json:"time"`
}

// commitName is the name of epoch n's commit marker, relative to the directory.
func commitName(n uint64) string { return CommitsDir + "/" + EpochName(n) + ".json" }

// WriteCommit records that epoch is durable downstream, in the checkpoint directory at
// location path (the sink's own or an upstream stage's; no lock is needed: the file is written
// atomically). On a local disk the marker replaces any old one (rename); on a bucket it is
// written put-if-absent, and a marker already there counts as written (the epoch is committed
// either way).
func WriteCommit(path string, epoch uint64, by string) error {
	st, err := openLoc("commit", path)
	if err != nil {
		return err
	}
	b, err := EncodeJSON(CommitRecord{Epoch: epoch, By: by, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	err = putEpochFile(st, commitName(epoch), b)
	if errors.Is(err, storage.ErrExist) {
		return nil
	}
	return err
}

// putEpochFile writes an epoch file (offsets, state manifest, commit marker): a rename over
// the name on a local disk, whose flock guarantees one writer, as before; a put-if-absent on a
// bucket, so that of a zombie and the directory's new owner writing the same epoch, the first
// write wins and the other gets storage.ErrExist instead of replacing it.
func putEpochFile(st storage.Store, name string, data []byte) error {
	if isLocal(st) {
		return st.WriteFile(bg, name, data)
	}
	return st.PutIfAbsent(bg, name, data)
}

// TrimCommits removes the commit markers of the directory at location path but its keep
// newest ones (at least one is kept). It is for directories holding only commit markers
// (keyby's shard commit records); a checkpoint directory is trimmed by Dir.GC.
func TrimCommits(path string, keep int) error {
	st, err := openLoc("trim commit markers", path)
	if err != nil {
		return err
	}
	eps, err := EpochsAt(st, CommitsDir)
	if err != nil {
		return err
	}
	keep = max(keep, 1)
	for i := 0; i+keep < len(eps); i++ {
		if err := st.Remove(bg, commitName(eps[i])); err != nil {
			return fmt.Errorf("trim commit markers: %w", err)
		}
	}
	return nil
}

// Committed returns the newest committed epoch of the directory at location path whose commit
// marker verifies, 0 when none. A corrupt marker is reported (it is never silently skipped).
func Committed(path string) (uint64, error) {
	st, err := openLoc("read commits of", path)
	if err != nil {
		return 0, err
	}
	return committedAt(st)
}

func committedAt(st storage.Store) (uint64, error) {
	eps, err := EpochsAt(st, CommitsDir)
	if err != nil {
		return 0, err
	}
	if len(eps) == 0 {
		return 0, nil
	}
	n := eps[len(eps)-1]
	var rec CommitRecord
	if err := ReadJSONAt(st, commitName(n), &rec); err != nil {
		return 0, err
	}
	if rec.Epoch != n {
		return 0, &CorruptError{Path: where(st, commitName(n)), Reason: fmt.Sprintf("records epoch %d", rec.Epoch)}
	}
	return n, nil
}

// Committed returns the newest committed epoch of d (see the function Committed).
func (d *Dir) Committed() (uint64, error) { return committedAt(d.st) }

// offsetsName is the name of epoch n's offsets WAL entry, relative to the directory.
func offsetsName(n uint64) string { return OffsetsDir + "/" + EpochName(n) + ".json" }

// WriteOffsets writes the end position of epoch n to the offsets WAL (offsets/<n>.json).
// Sources call it before emitting barrier n. On a bucket the entry is put-if-absent: an
// existing one (a zombie's, or a lost lease's) is an error, never replaced.
func (d *Dir) WriteOffsets(n uint64, pos []byte) error {
	if err := d.Held(); err != nil {
		return err
	}
	b, err := EncodeJSON(rawJSON(pos))
	if err != nil {
		return err
	}
	if err := putEpochFile(d.st, offsetsName(n), b); err != nil {
		if errors.Is(err, storage.ErrExist) {
			// Only another owner writes this epoch's offsets: ours were never written.
			return fmt.Errorf("checkpoint %s: epoch %d was already written by another process that took this checkpoint over; this process lost its lease and stops without committing (%w)", d.Path, n, err)
		}
		return fmt.Errorf("write offsets of epoch %d: %w", n, err)
	}
	return nil
}

// ReadOffsets returns the end position of epoch n from the directory at location path.
func ReadOffsets(path string, n uint64) ([]byte, error) {
	st, err := openLoc("read offsets of", path)
	if err != nil {
		return nil, err
	}
	return readOffsetsAt(st, n)
}

// ReadOffsets returns the end position of epoch n from d's offsets WAL.
func (d *Dir) ReadOffsets(n uint64) ([]byte, error) { return readOffsetsAt(d.st, n) }

func readOffsetsAt(st storage.Store, n uint64) ([]byte, error) {
	var raw rawJSON
	if err := ReadJSONAt(st, offsetsName(n), &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// rawJSON marshals as itself (null when empty).
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// GC deletes offsets, commit markers and state files of epochs no longer needed: it keeps the
// newest retain committed epochs (at least 1) and whatever snapshot and changelogs restoring
// the oldest kept epoch needs. Epochs after the committed one are never touched. A Dir whose
// lease is lost deletes nothing.
func (d *Dir) GC(retain int) error {
	if err := d.Held(); err != nil {
		return err
	}
	committed, err := d.Committed()
	if err != nil || committed == 0 {
		return err
	}
	if retain < 1 {
		retain = 1
	}
	keepFrom := uint64(1)
	if committed > uint64(retain) {
		keepFrom = committed - uint64(retain) + 1
	}
	// State must keep the newest snapshot at or before keepFrom and everything after it.
	stateFrom := keepFrom
	if snaps, err := snapshotEpochs(d.st); err == nil {
		stateFrom = 0
		for _, s := range snaps {
			if s <= keepFrom {
				stateFrom = s
			}
		}
	}
	for _, sub := range []string{OffsetsDir, CommitsDir} {
		eps, _ := EpochsAt(d.st, sub)
		for _, n := range eps {
			// The offsets of keepFrom-1 hold the start of the oldest kept epoch.
			if n+1 < keepFrom {
				d.st.Remove(bg, sub+"/"+EpochName(n)+".json")
			}
		}
	}
	eps, _ := EpochsAt(d.st, StateDir)
	for _, n := range eps {
		if n < stateFrom {
			removeStateEpoch(d.st, n)
		}
	}
	return nil
}
