package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"
)

// CommitVersions lists the versions whose JSON commit file is present in `_delta_log`, oldest
// first. Older commits may have been cleaned up (log retention): the list then starts after
// a checkpoint. A directory without a log yields [ErrNotATable].
func (t *Table) CommitVersions() ([]int64, error) {
	l, err := listLog(filepath.Join(t.root, LogDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list log %s: %w", t.root, ErrNotATable)
	}
	if err != nil {
		return nil, fmt.Errorf("list log %s: %w", t.root, err)
	}
	vs := make([]int64, 0, len(l.commits))
	for v := range l.commits {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	return vs, nil
}

// ReadCommit reads and parses the JSON commit file of version v (its actions in file order;
// unknown action kinds are skipped). A missing file is an error matching fs.ErrNotExist.
func (t *Table) ReadCommit(v int64) ([]Action, error) {
	if v < 0 {
		return nil, fmt.Errorf("read commit %s: negative version %d", t.root, v)
	}
	a, err := readCommit(filepath.Join(t.root, LogDir), v)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", t.root, err)
	}
	return a, nil
}

// CheckpointInterval is delta.checkpointInterval of the table (default 10).
func (s *Snapshot) CheckpointInterval() int64 { return configOf(s.metadata).checkpointInterval }

// DeletedFileRetention is delta.deletedFileRetentionDuration of the table (default one
// week): how long removed files stay on disk for time travel and concurrent readers; VACUUM
// must not delete younger ones.
func (s *Snapshot) DeletedFileRetention() time.Duration {
	return configOf(s.metadata).tombstoneRetention
}

// LogRetention is delta.logRetentionDuration of the table (default 30 days): how long log
// files (commits, checkpoints) are kept for history and time travel before the cleanup after
// a checkpoint deletes them.
func (s *Snapshot) LogRetention() time.Duration { return configOf(s.metadata).logRetention }

// ExpiredLogCleanup is delta.enableExpiredLogCleanup of the table (default true): whether
// expired log files are deleted after each checkpoint.
func (s *Snapshot) ExpiredLogCleanup() bool { return configOf(s.metadata).expiredLogCleanup }
