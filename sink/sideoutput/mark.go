package sideoutput

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Mark is where a side output stood at the end of an epoch: the absolute path and its
// length in bytes after Sync. An operator with a checkpoint records it in its state of the
// epoch (state.Manifest's extra), and a restart from that epoch continues the file there
// (OpenAt), so each row of a committed epoch is in the file exactly once.
type Mark struct {
	Path string `json:"path"` // absolute
	Size int64  `json:"size"` // bytes
}

// OpenAt opens the side output at path (absolute, see Path) for an operator restored to an
// epoch whose state recorded mark: Resume at mark's size when mark names path, else Open
// (mark nil: no epoch was committed with this file).
func OpenAt(flag, path string, s *arrow.Schema, mem memory.Allocator, mark *Mark) (*File, error) {
	if mark != nil && mark.Path == path {
		return Resume(flag, path, s, mem, mark.Size)
	}
	return Open(flag, path, s, mem)
}

// Mark syncs the file (Sync) and returns where it stands, path being the absolute path it was
// opened at; operators call it at every barrier and record the result with the epoch.
func (s *File) Mark(path string) (*Mark, error) {
	if err := s.Sync(); err != nil {
		return nil, err
	}
	size, err := s.Size()
	if err != nil {
		return nil, err
	}
	return &Mark{Path: path, Size: size}, nil
}
