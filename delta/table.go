package delta

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Table is a Delta table rooted at a local directory. Its fields configure commits; the zero
// values give the documented defaults.
type Table struct {
	root string
	mem  memory.Allocator

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

// NewTable binds the table rooted at dir (which need not exist yet). mem allocates Arrow
// memory for checkpoints (nil: memory.DefaultAllocator).
func NewTable(dir string, mem memory.Allocator) *Table {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Table{root: dir, mem: mem}
}

// Root is the table root directory.
func (t *Table) Root() string { return t.root }

// Exists reports whether dir holds a Delta log with at least one commit or checkpoint.
func (t *Table) Exists() (bool, error) {
	l, err := listLog(filepath.Join(t.root, LogDir))
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
