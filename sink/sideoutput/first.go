package sideoutput

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
)

// FirstMark returns the mark at which an operator with a checkpoint resumes its side output
// at path (absolute) when its restored epoch recorded none for that file (nothing committed
// yet, or another file before): the size the file had when this checkpoint first opened it,
// kept in the file name of the checkpoint directory st. The first call records the file's
// current size there (0 when it does not exist) and returns nil: open the file as new (Open,
// which appends to JSON lines). A later call, after a crash before the first commit, returns
// that record, so OpenAt cuts off what the crashed run appended and each row of the epochs it
// replays is written once. Errors: an unreadable (corrupt) record, a failed write.
func FirstMark(st storage.Store, name, path string) (*Mark, error) {
	var m Mark
	err := state.ReadJSONAt(st, name, &m)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case err == nil && m.Path == path:
		return &m, nil
	}
	m = Mark{Path: path}
	if fi, err := os.Stat(path); err == nil {
		m.Size = fi.Size()
	}
	if err := state.WriteJSONAt(st, name, m); err != nil {
		return nil, fmt.Errorf("record the start of %s: %w", path, err)
	}
	return nil, nil
}

// Reopen opens the side output at path (absolute) for an operator restored to its committed
// epoch: at mark, the side output's mark recorded with that epoch, or, when the epoch
// recorded none for this file and the operator keeps a checkpoint (ckpt, its directory's
// store; nil without one), at the size the file had when this checkpoint first opened it
// (FirstMark under the checkpoint file name), so that the file holds each set-aside row of
// the committed epochs exactly once however often the operator crashed before a commit.
// Errors are those of FirstMark and OpenAt, prefixed with flag.
func Reopen(flag, path string, s *arrow.Schema, mem memory.Allocator, ckpt storage.Store, name string, mark *Mark) (*File, error) {
	if ckpt != nil && (mark == nil || mark.Path != path) {
		var err error
		if mark, err = FirstMark(ckpt, name, path); err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	return OpenAt(flag, path, s, mem, mark)
}

// StartFile is the checkpoint file name under which the --dropped-output of dedup, filter and
// expect records where the file started (Reopen).
const StartFile = "dropped-output-start.json"
