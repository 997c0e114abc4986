package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
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
// time is not after its predecessor's counts as predecessor + 1 ms). On a table whose latest
// version has in-commit timestamps (PROTOCOL.md "In-Commit Timestamps"), the versions from
// delta.inCommitTimestampEnablementVersion on (from version 0 when the table was created
// with them) have their commitInfo.inCommitTimestamp instead, found by a binary search over
// the commits, and file times are used only for a ts before the enablement, as Spark does: a
// copied or replicated table, whose file times are the copy's, travels to the same version.
// A ts before the earliest loadable version is an error naming that version's time; a ts after
// the latest returns the latest version. The file times come from one listing of `_delta_log`
// (on a bucket: the store's write times).
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
	if from, err := t.ictStart(ctx, vs); err != nil {
		return 0, fmt.Errorf("find version at %s: %w", ts.Format(time.RFC3339), err)
	} else if from < len(vs) {
		v, first, err := t.ictVersionAt(ctx, vs[from:], want)
		if err != nil || v >= 0 {
			return v, err
		}
		if from == 0 {
			return 0, fmt.Errorf("find version at %s: the timestamp is before the earliest available version %d (committed %s)",
				ts.Format(time.RFC3339), vs[0], time.UnixMilli(first).UTC().Format(time.RFC3339Nano))
		}
		vs = vs[:from] // before the enablement: the file times
	}
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

// ictEnablementVersion is the table property naming the first version with in-commit
// timestamps when they were enabled on an existing table.
const ictEnablementVersion = "delta.inCommitTimestampEnablementVersion"

// ictStart returns the index in vs (ascending versions) of the first version whose time is its
// in-commit timestamp, or len(vs) when the latest version has none (the feature is off, or
// was turned off: file times then hold for every version, as for Spark).
func (t *Table) ictStart(ctx context.Context, vs []int64) (int, error) {
	if len(vs) == 0 {
		return 0, nil
	}
	latest := vs[len(vs)-1]
	if _, err := t.inCommitTimestamp(ctx, latest); err != nil {
		if errors.Is(err, errNoICT) {
			return len(vs), nil
		}
		return 0, err
	}
	snap, err := t.snapshotAt(ctx, latest, false)
	if err != nil {
		return 0, err
	}
	var from int64
	if s, ok := snap.Metadata().Configuration[ictEnablementVersion]; ok {
		if from, err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, fmt.Errorf("table property %s=%q is not a version", ictEnablementVersion, s)
		}
	}
	return sort.Search(len(vs), func(i int) bool { return vs[i] >= from }), nil
}

// errNoICT: a commit without commitInfo.inCommitTimestamp.
var errNoICT = errors.New("no inCommitTimestamp in commitInfo")

// inCommitTimestamp reads commit v's commitInfo.inCommitTimestamp (ms since the epoch).
func (t *Table) inCommitTimestamp(ctx context.Context, v int64) (int64, error) {
	actions, err := readCommit(ctx, t.store, v)
	if err != nil {
		return 0, err
	}
	for _, a := range actions {
		if a.CommitInfo != nil && a.CommitInfo.InCommitTimestamp != nil {
			return *a.CommitInfo.InCommitTimestamp, nil
		}
	}
	return 0, fmt.Errorf("commit %d: %w", v, errNoICT)
}

// ictVersionAt returns the newest of vs (ascending versions with in-commit timestamps, which
// increase with the version) committed at or before want (ms), or -1 when vs[0] is after it;
// first is vs[0]'s timestamp. It reads O(log len(vs)) commits.
func (t *Table) ictVersionAt(ctx context.Context, vs []int64, want int64) (v, first int64, err error) {
	if first, err = t.inCommitTimestamp(ctx, vs[0]); err != nil {
		return 0, 0, err
	}
	if first > want {
		return -1, first, nil
	}
	lo, hi := 0, len(vs)-1 // vs[lo] is at or before want
	for lo < hi {
		mid := (lo + hi + 1) / 2
		ms, err := t.inCommitTimestamp(ctx, vs[mid])
		if err != nil {
			return 0, 0, err
		}
		if ms <= want {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return vs[lo], first, nil
}
