package delta

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/storage"
)

// Table is a Delta table rooted at a local directory or a bucket prefix (its [storage.Store]).
// Its fields configure commits; the zero values give the documented defaults.
type Table struct {
	root  string // the local directory, or the redacted URL of a bucket table
	store storage.Store
	mem   memory.Allocator

	// EngineInfo goes into commitInfo.engineInfo; default "streamkit/dev".
	EngineInfo string
	// Now is the clock for timestamps in actions; default time.Now.
	Now func() time.Time
	// MaxAttempts bounds the commit attempts of one Commit call (each lost race is one
	// attempt); default 100.
	MaxAttempts int
	// Sleep waits between attempts (tests inject a fake); default time.Sleep.
	Sleep func(d time.Duration)
}

// NewTable binds the table rooted at local directory dir (which need not exist yet); its
// [Table.Root], and so its messages, keep dir as given (relative or not). mem allocates Arrow
// memory for checkpoints (nil: memory.DefaultAllocator).
func NewTable(dir string, mem memory.Allocator) *Table {
	s, err := storage.Local(dir, 0o644)
	if err != nil {
		// Only a failing os.Getwd makes a path unresolvable; keep the path as given.
		s, _ = storage.Local("/", 0o644)
		s = s.Sub(dir)
	}
	t := OpenTable(s, mem)
	t.root = dir
	return t
}

// OpenTable binds the table rooted at store s (see package storage; the root need not hold a
// table yet). mem allocates Arrow memory for checkpoints (nil: memory.DefaultAllocator).
func OpenTable(s storage.Store, mem memory.Allocator) *Table {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	root := s.LocalDir()
	if root == "" {
		root = s.Location()
	}
	return &Table{root: root, store: s, mem: mem}
}

// Root is the table root for messages: the directory given to [NewTable], the local directory
// of a local store, or the redacted URL of a bucket table.
func (t *Table) Root() string { return t.root }

// Store is the storage the table lives in, rooted at the table root.
func (t *Table) Store() storage.Store { return t.store }

// Exists reports whether the root holds a Delta log with at least one commit or checkpoint.
func (t *Table) Exists() (bool, error) {
	l, err := listLog(context.Background(), t.store)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return l.maxCommit >= 0 || len(l.checkpoints) > 0, nil
}

func (t *Table) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Table) sleep(d time.Duration) {
	if t.Sleep != nil {
		t.Sleep(d)
		return
	}
	time.Sleep(d)
}
