package rescue

import (
	"bufio"
	"fmt"
	"os"
)

// LineFile appends lines (bad records as JSON lines) to a file through a 64 KiB buffer; Sync
// makes what was written durable (flush and fsync), as a source must before the offsets of an
// epoch whose bad records it wrote are recorded. Errors are prefixed with the flag and path
// (e.g. "--bad-records-output bad.ndjson: …").
type LineFile struct {
	flag, path string
	f          *os.File
	w          *bufio.Writer
	dirty      bool
}

// OpenLineFile opens path for appending, creating it.
func OpenLineFile(flag, path string) (*LineFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return &LineFile{flag: flag, path: path, f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// Path is the file's path.
func (l *LineFile) Path() string { return l.path }

// Write appends line (which carries its own newline).
func (l *LineFile) Write(line []byte) error {
	l.dirty = true
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("%s %s: %w", l.flag, l.path, err)
	}
	return nil
}

// Sync flushes and fsyncs what was written since the last Sync (nothing to do when clean).
func (l *LineFile) Sync() error {
	if l == nil || !l.dirty {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("%s %s: %w", l.flag, l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("%s %s: %w", l.flag, l.path, err)
	}
	l.dirty = false
	return nil
}

// Close syncs and closes the file; a nil or closed LineFile is a no-op.
func (l *LineFile) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
