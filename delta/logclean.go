package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LogCleanup reports what [Table.CleanupLog] deleted (or, for a dry run, would delete).
type LogCleanup struct {
	// Cutoff is the retention cut-off: now − delta.logRetentionDuration, truncated to the
	// previous midnight UTC as delta-spark does.
	Cutoff time.Time
	// Checkpoint is the newest complete checkpoint committed at or before Cutoff, from which
	// every version from it on stays loadable; -1 when there is none (nothing is deleted).
	Checkpoint int64
	// Files are the deleted `_delta_log` file names, oldest version first, then the deleted
	// sidecar files of v2 checkpoints as `_sidecars/<name>`.
	Files []string
}

// logFile is one versioned file of `_delta_log` that log cleanup may delete.
type logFile struct {
	name    string
	version int64 // the version it belongs to (for a compacted file: its last version)
}

// CleanupLog deletes expired files of the table's transaction log, as delta-spark's metadata
// cleanup does after a checkpoint (PROTOCOL.md "Checkpoints", "Log Compaction Files";
// delta.logRetentionDuration, delta.enableExpiredLogCleanup). retention < 0 takes the table's
// delta.logRetentionDuration (default 30 days).
//
// A version's time is the modification time of its commit file (of its checkpoint when the
// commit is gone), made strictly increasing over versions as delta-spark's history manager
// does. The cut-off is now − retention truncated to the previous midnight UTC (delta-spark
// truncates to the day so that cleanup does not chase every commit). C is the newest complete
// checkpoint whose version's time is at or before the cut-off and from which the log is
// contiguous up to the latest version. Deleted are the files of versions before C: commit JSON
// files, checkpoints (also incomplete multi-part ones), `.crc` files and log compaction files
// ending before C. So every version committed after the cut-off, and the version current at the
// cut-off (time travel "as of" it), can still be loaded; C's own commit is kept. Files are
// deleted oldest version first, so an interrupted cleanup leaves a contiguous log. Nothing is
// deleted when there is no such checkpoint, or when the log has a gap after it. When a
// checkpoint was deleted, so are the sidecar files in `_delta_log/_sidecars` that no
// remaining checkpoint references and that are older than both the cut-off and one day. With
// dryRun the files are only listed. Files that vanish meanwhile (a concurrent cleanup) are
// ignored.
func (t *Table) CleanupLog(ctx context.Context, retention time.Duration, dryRun bool) (*LogCleanup, error) {
	if retention < 0 {
		s, err := t.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("clean up log %s: %w", t.root, err)
		}
		retention = configOf(s.metadata).logRetention
	}
	l, err := listLog(ctx, t.store)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("clean up log %s: %w", t.root, ErrNotATable)
	}
	if err != nil {
		return nil, fmt.Errorf("clean up log %s: %w", t.root, err)
	}
	cutoff := t.now().Add(-retention).UTC().Truncate(24 * time.Hour)
	res := &LogCleanup{Cutoff: cutoff, Checkpoint: -1}
	// Versions that have a commit or a complete checkpoint, oldest first, with their times;
	// the walk stops at the first version after the cut-off.
	vs := make([]int64, 0, len(l.commits)+len(l.checkpoints))
	for v := range l.commits {
		vs = append(vs, v)
	}
	for v := range l.checkpoints {
		if !l.commits[v] {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	prev := int64(-1 << 62)
	for _, v := range vs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := CommitFileName(v)
		if !l.commits[v] {
			name = l.checkpoints[v][0][0]
		}
		ms := max(l.mod[name].UnixMilli(), prev+1)
		prev = ms
		if ms > cutoff.UnixMilli() {
			break
		}
		if l.checkpoints[v] != nil {
			res.Checkpoint = v
		}
	}
	if res.Checkpoint < 0 {
		return res, nil
	}
	for v := res.Checkpoint + 1; v <= l.maxCommit; v++ {
		if !l.commits[v] {
			return res, nil // a gap after the checkpoint: leave the log as it is
		}
	}
	checkpointDeleted := false
	for _, f := range l.expiredLogFiles(res.Checkpoint) {
		if !dryRun {
			if err := t.store.Remove(ctx, logName(f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("clean up log %s: %w", t.root, err)
			}
		}
		res.Files = append(res.Files, f.name)
		checkpointDeleted = checkpointDeleted || strings.HasPrefix(f.name[21:], "checkpoint.")
	}
	if !checkpointDeleted {
		return res, nil // as delta-spark: sidecars are looked at only when a checkpoint went
	}
	names, err := t.unreferencedSidecars(ctx, l, res.Checkpoint, cutoff)
	if err != nil {
		return res, fmt.Errorf("clean up log %s: %w", t.root, err)
	}
	for _, name := range names {
		if !dryRun {
			if err := t.store.Remove(ctx, logName(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("clean up log %s: %w", t.root, err)
			}
		}
		res.Files = append(res.Files, name)
	}
	return res, nil
}

// unreferencedSidecars lists the sidecar files (as `_sidecars/<name>`) that log cleanup
// deletes once the checkpoints before version keep are gone (PROTOCOL.md "Metadata Cleanup",
// steps 4 and 5): those that no remaining checkpoint (version ≥ keep, as listed in l)
// references and that were modified before both the cut-off and the midnight UTC one day
// before now, so that a checkpoint being written, whose top-level file is not there yet,
// keeps its sidecars. The checksum file Hadoop writes beside a sidecar (.<name>.crc) goes
// with it and is otherwise kept. A remaining checkpoint that cannot be read is an error:
// nothing is deleted then.
func (t *Table) unreferencedSidecars(ctx context.Context, l *logListing, keep int64, cutoff time.Time) ([]string, error) {
	entries, err := t.store.ReadDir(ctx, logName(SidecarDir))
	if err != nil {
		return nil, err
	}
	before := t.now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	if cutoff.Before(before) {
		before = cutoff
	}
	var old []string
	crc := map[string]bool{}
	for _, e := range entries {
		switch {
		case e.IsDir:
		case strings.HasPrefix(e.Name, "."):
			crc[e.Name] = true // Hadoop's .<name>.crc: goes with <name>
		case e.ModTime.Before(before):
			old = append(old, e.Name)
		}
	}
	if len(old) == 0 {
		return nil, nil
	}
	used := map[string]bool{}
	scratch := t.newSnapshot()
	for v, cps := range l.checkpoints {
		if v < keep {
			continue
		}
		for _, names := range cps {
			refs, err := scratch.sidecarRefs(ctx, names)
			if err != nil {
				return nil, err
			}
			for _, r := range refs {
				used[r] = true
			}
		}
	}
	var out []string
	for _, name := range old {
		if !used[name] {
			out = append(out, SidecarDir+"/"+name)
			if c := "." + name + ".crc"; crc[c] {
				out = append(out, SidecarDir+"/"+c)
			}
		}
	}
	return out, nil
}

// expiredLogFiles lists the files of `_delta_log` that belong only to versions before keep:
// commits, checkpoints (any kind), .crc files and compaction files ending before keep, oldest
// version first (commit before checkpoint of the same version, so a reader never sees a
// version's checkpoint vanish while its commit is still listed). Temporary files are never
// among them: their names do not start with a version.
func (l *logListing) expiredLogFiles(keep int64) []logFile {
	var out []logFile
	for _, e := range l.entries {
		name := e.Name
		if len(name) < 21 || !allDigits(name[:20]) || name[20] != '.' {
			continue
		}
		v, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil {
			continue
		}
		rest := name[21:]
		switch {
		case rest == "json", rest == "crc", strings.HasPrefix(rest, "checkpoint.") && strings.HasSuffix(rest, ".parquet"),
			strings.HasPrefix(rest, "checkpoint.") && strings.HasSuffix(rest, ".json"):
		case len(rest) == len("00000000000000000000.compacted.json") && allDigits(rest[:20]) && rest[20:] == ".compacted.json":
			end, err := strconv.ParseInt(rest[:20], 10, 64)
			if err != nil || end < v {
				continue
			}
			v = end
		default:
			continue
		}
		if v < keep {
			out = append(out, logFile{name: name, version: v})
		}
	}
	isCommit := func(f logFile) bool { return len(f.name) == 25 && strings.HasSuffix(f.name, ".json") }
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.version != b.version {
			return a.version < b.version
		}
		if isCommit(a) != isCommit(b) {
			return isCommit(a)
		}
		return a.name < b.name
	})
	return out
}
