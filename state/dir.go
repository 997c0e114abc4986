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

// LockedError is returned by Open when another live process holds the directory.
type LockedError struct {
	Path string
	PID  string // as recorded in LOCK by the holder; "" when unreadable
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID != "" {
		holder = "process " + e.PID
	}
	return fmt.Sprintf("checkpoint %s is locked by %s: each stage needs its own directory (use --name or --checkpoint)", e.Path, holder)
}

// Dir is an open, exclusively locked stage checkpoint directory.
type Dir struct {
	Path       string
	Meta       Metadata
	lock       *os.File
	tool, name string
}

// Open creates (if needed) and locks the checkpoint directory path for tool/name with the given
// state-shaping options (nil: bind them later with CheckOptions). It fails at once with *LockedError if another process holds it, with
// *IncompatibleError if the directory was created with other options, and with *CorruptError
// if metadata.json is damaged. Leftover temporary files of a crashed writer are removed.
func Open(path, tool, name string, options map[string]string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %s: %w", path, err)
	}
	for _, sub := range []string{OffsetsDir, StateDir, CommitsDir} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return nil, fmt.Errorf("open checkpoint %s: %w", abs, err)
		}
	}
	lf, err := os.OpenFile(filepath.Join(abs, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %s: %w", abs, err)
	}
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(filepath.Join(abs, LockFile))
		lf.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{Path: abs, PID: strings.TrimSpace(string(pid))}
		}
		return nil, fmt.Errorf("lock checkpoint %s: %w", abs, err)
	}
	lf.Truncate(0)
	lf.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	d := &Dir{Path: abs, lock: lf, tool: tool, name: name}
	sweepTemps(abs)
	if options == nil {
		return d, nil // the caller binds options later with CheckOptions
	}
	if err := d.CheckOptions(options); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
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
	err := ReadJSON(filepath.Join(d.Path, MetadataFile), &have)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := WriteJSON(d.Path, MetadataFile, want); err != nil {
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

// Close releases the lock.
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	err := d.lock.Close() // closing the descriptor releases the flock
	d.lock = nil
	return err
}

// Epochs lists the epochs that have a valid-looking file "<epoch>.json" (EpochName) in sub
// (OffsetsDir, StateDir, CommitsDir, or any directory of such files, such as the files log of
// source/files) of the checkpoint directory at path, ascending; a missing directory has none.
// It does not verify checksums; readers do that on load.
func Epochs(path, sub string) ([]uint64, error) {
	ents, err := os.ReadDir(filepath.Join(path, sub))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || len(stem) != 20 {
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

// WriteCommit records that epoch is durable downstream, in the checkpoint directory at path
// (the sink's own or an upstream stage's; no lock is needed: the file is written atomically).
func WriteCommit(path string, epoch uint64, by string) error {
	return WriteJSON(filepath.Join(path, CommitsDir), EpochName(epoch)+".json",
		CommitRecord{Epoch: epoch, By: by, Time: time.Now().UTC()})
}

// TrimCommits removes the commit markers of the directory at path but its keep newest ones
// (at least one is kept). It is for directories holding only commit markers (keyby's shard
// commit records); a checkpoint directory is trimmed by Dir.GC.
func TrimCommits(path string, keep int) error {
	eps, err := Epochs(path, CommitsDir)
	if err != nil {
		return err
	}
	keep = max(keep, 1)
	for i := 0; i+keep < len(eps); i++ {
		if err := os.Remove(filepath.Join(path, CommitsDir, EpochName(eps[i])+".json")); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("trim commit markers: %w", err)
		}
	}
	return nil
}

// Committed returns the newest committed epoch of the directory at path whose commit marker
// verifies, 0 when none. A corrupt marker is reported (it is never silently skipped).
func Committed(path string) (uint64, error) {
	eps, err := Epochs(path, CommitsDir)
	if err != nil {
		return 0, err
	}
	if len(eps) == 0 {
		return 0, nil
	}
	n := eps[len(eps)-1]
	var rec CommitRecord
	p := filepath.Join(path, CommitsDir, EpochName(n)+".json")
	if err := ReadJSON(p, &rec); err != nil {
		return 0, err
	}
	if rec.Epoch != n {
		return 0, &CorruptError{Path: p, Reason: fmt.Sprintf("records epoch %d", rec.Epoch)}
	}
	return n, nil
}

// Committed returns the newest committed epoch of d (see the function Committed).
func (d *Dir) Committed() (uint64, error) { return Committed(d.Path) }

// WriteOffsets writes the end position of epoch n to the offsets WAL (offsets/<n>.json).
// Sources call it before emitting barrier n.
func (d *Dir) WriteOffsets(n uint64, pos []byte) error {
	return WriteJSON(filepath.Join(d.Path, OffsetsDir), EpochName(n)+".json", rawJSON(pos))
}

// ReadOffsets returns the end position of epoch n from the directory at path.
func ReadOffsets(path string, n uint64) ([]byte, error) {
	var raw rawJSON
	if err := ReadJSON(filepath.Join(path, OffsetsDir, EpochName(n)+".json"), &raw); err != nil {
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
// the oldest kept epoch needs. Epochs after the committed one are never touched.
func (d *Dir) GC(retain int) error {
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
	if snaps, err := snapshotEpochs(d.Path); err == nil {
		stateFrom = 0
		for _, s := range snaps {
			if s <= keepFrom {
				stateFrom = s
			}
		}
	}
	for _, sub := range []string{OffsetsDir, CommitsDir} {
		eps, _ := Epochs(d.Path, sub)
		for _, n := range eps {
			// The offsets of keepFrom-1 hold the start of the oldest kept epoch.
			if n+1 < keepFrom {
				os.Remove(filepath.Join(d.Path, sub, EpochName(n)+".json"))
			}
		}
	}
	eps, _ := Epochs(d.Path, StateDir)
	for _, n := range eps {
		if n < stateFrom {
			removeStateEpoch(d.Path, n)
		}
	}
	return nil
}
