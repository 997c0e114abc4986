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
	// Files are the deleted `_delta_log` file names, oldest version first.
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
// deleted when there is no such checkpoint, or when the log has a gap after it. With dryRun
// the files are only listed. Files that vanish meanwhile (a concurrent cleanup) are ignored.
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
			name = l.checkpoints[v][0]
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
	for _, f := range l.expiredLogFiles(res.Checkpoint) {
		if !dryRun {
			if err := t.store.Remove(ctx, logName(f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("clean up log %s: %w", t.root, err)
			}
		}
		res.Files = append(res.Files, f.name)
	}
	return res, nil
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
