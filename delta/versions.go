package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"
)

// Reader-side access to individual commits, for streaming reads (read-delta --follow) and time
// travel (--timestamp). Commit file names are built only from parsed integers (DELTA.md
// "Reader safety").

// LogVersions describes which versions the log can reconstruct: Earliest is the oldest version
// a snapshot can be loaded at (the oldest checkpoint when older commits were cleaned up, else
// the oldest commit), Latest the newest commit or checkpoint.
type LogVersions struct {
	Earliest int64 // oldest loadable version
	Latest   int64 // newest version
}

// Versions lists `_delta_log` and returns the range of loadable versions. It fails with
// [ErrNotATable] when the directory has no Delta log.
func (t *Table) Versions() (LogVersions, error) {
	l, err := listLog(context.Background(), t.store)
	if errors.Is(err, fs.ErrNotExist) {
		return LogVersions{}, fmt.Errorf("list log %s: %w", t.root, ErrNotATable)
	}
	if err != nil {
		return LogVersions{}, fmt.Errorf("list log %s: %w", t.root, err)
	}
	return l.versions(t.root)
}

func (l *logListing) versions(root string) (LogVersions, error) {
	latest := l.maxCommit
	for v := range l.checkpoints {
		latest = max(latest, v)
	}
	if latest < 0 {
		return LogVersions{}, fmt.Errorf("list log %s: %w", root, ErrNotATable)
	}
	// The oldest loadable version: walk down from latest while commits are contiguous; the
	// oldest checkpoint inside that contiguous run (or version 0) bounds it.
	earliest := latest
	v := latest
	for v >= 0 && (l.commits[v] || l.checkpoints[v] != nil) {
		if l.checkpoints[v] != nil || v == 0 {
			earliest = v
		}
		if !l.commits[v] {
			break // a checkpoint without its commit: nothing older can be reached from here
		}
		v--
	}
	return LogVersions{Earliest: earliest, Latest: latest}, nil
}

// CommitExists reports whether the commit file of version v is present.
func (t *Table) CommitExists(v int64) (bool, error) {
	if v < 0 {
		return false, nil
	}
	_, err := t.store.Stat(context.Background(), logName(CommitFileName(v)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// VersionAt returns the newest version whose commit timestamp is at or before ts (time travel
// "TIMESTAMP AS OF"). A version's timestamp is the modification time of its commit file, made
// strictly increasing over versions as Spark's DeltaHistoryManager does (a commit whose file
// time is not after its predecessor's counts as predecessor + 1 ms). A ts before the earliest
// loadable version is an error naming that version's time; a ts after the latest returns the
// latest version. The file times come from one listing of `_delta_log` (on a bucket: the
// store's write times).
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	l, err := listLog(ctx, t.store)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("find version at %s: %w", ts.Format(time.RFC3339), ErrNotATable)
	}
	if err != nil {
		return 0, fmt.Errorf("find version at %s: %w", ts.Format(time.RFC3339), err)
	}
	vr, err := l.versions(t.root)
	if err != nil {
		return 0, err
	}
	var vs []int64
	for v := range l.commits {
		if v >= vr.Earliest {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	want := ts.UnixMilli()
	found := int64(-1)
	var prev int64 = -1 << 62
	var first int64
	for i, v := range vs {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		ms := l.mod[CommitFileName(v)].UnixMilli()
		if ms <= prev {
			ms = prev + 1
		}
		prev = ms
		if i == 0 {
			first = ms
		}
		if ms > want {
			break
		}
		found = v
	}
	if found < 0 {
		if len(vs) == 0 {
			return 0, fmt.Errorf("find version at %s: %w: no commit file", ts.Format(time.RFC3339), ErrLogIncomplete)
		}
		return 0, fmt.Errorf("find version at %s: the timestamp is before the earliest available version %d (committed %s)",
			ts.Format(time.RFC3339), vs[0], time.UnixMilli(first).UTC().Format(time.RFC3339Nano))
	}
	return found, nil
}
