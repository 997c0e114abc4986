package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
)

// CommitVersions lists the versions whose JSON commit file is present in `_delta_log`, oldest
// first. Older commits may have been cleaned up (log retention): the list then starts after
// a checkpoint. A directory without a log yields [ErrNotATable].
func (t *Table) CommitVersions() ([]int64, error) {
	l, err := listLog(context.Background(), t.store)
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
	a, err := readCommit(context.Background(), t.store, v)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", t.root, err)
	}
	return a, nil
}
