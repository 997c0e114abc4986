// Package sideoutput writes the rows an operator sets aside — window's late rows
// (--late-output), dedup's dropped duplicates (--dropped-output) — to a file, so that they are
// counted and kept, never silently dropped (DESIGN.md §4).
//
// The format follows the file name: .arrow, .arrows or .ipc is an Arrow IPC stream (the
// input's schema and metadata, an end=final control and the end-of-stream marker at Close:
// `streamkit print < file`, `streamkit read-files file`, pyarrow.ipc.open_stream and DuckDB read it); .ndjson, .jsonl or
// .json is JSON lines as `streamkit print --format json` writes them, appended to an existing
// file. An Arrow IPC stream cannot be appended to, so an existing non-empty .arrow file is an
// error. The file is synced at every barrier (Sync). An operator with a checkpoint records
// Size in its epoch's state and, on a restart from that epoch, continues the file with Resume,
// which cuts off what uncommitted epochs wrote: replayed epochs then write their rows once
// more, so each row of a committed epoch is in the file exactly once. Without that, rows of a
// replayed epoch are written again (at-least-once, like print).
package sideoutput

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/sink/print"
	"github.com/streamkit/streamkit/stage"
)

// Path is the file an operator writes for the side output path: path itself, or, in a child
// of `keyby --shards` named shard (stage.Env's Shard.Name(): STREAMKIT_SHARD=i,
// docs/protocol.md §6), path with ".shard-i" before its extension (dropped.ndjson →
// dropped.shard-0.ndjson), so that the shards never write into one file.
func Path(path, shard string) string {
	if shard == "" {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".shard-" + shard + ext
}

// Check validates the file name's extension before any input is read; the error is a usage
// error naming flag (e.g. "window: --late-output").
func Check(flag, path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".arrow", ".arrows", ".ipc", ".json", ".ndjson", ".jsonl":
		return nil
	}
	return stage.Usagef("%s %s: use .arrow (Arrow IPC) or .ndjson/.json (JSON lines)", flag, path)
}

// File is an open side output.
type File struct {
	f   *os.File
	ipc *codec.Writer
	txt *print.Printer
}

// Open creates (or, for JSON lines, appends to) the side output at path (see Path) for rows of
// schema s. flag prefixes errors (e.g. "dedup: --dropped-output").
func Open(flag, path string, s *arrow.Schema, mem memory.Allocator) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	so := &File{f: f}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".ndjson", ".jsonl":
		so.txt, err = print.New(print.Config{Format: print.FormatJSON}, f)
		if err != nil {
			f.Close()
			return nil, err
		}
		so.txt.Start(s)
	default:
		if fi, _ := f.Stat(); fi != nil && fi.Size() > 0 {
			f.Close()
			return nil, fmt.Errorf("%s %s exists; an Arrow IPC stream cannot be appended to (remove it or use .ndjson)", flag, path)
		}
		so.ipc = codec.NewWriter(f, s, mem)
	}
	return so, nil
}

// Resume continues the side output at path, which an earlier run of the operator left at
// size bytes when it recorded its committed epoch: the file is cut to size (what later,
// uncommitted epochs wrote goes away, as does a closed stream's end marker), then written
// on — an Arrow IPC stream without a second schema message. size 0 is Open. Errors: the file
// is shorter than size, or its stream does not start with schema s (it was changed).
func Resume(flag, path string, s *arrow.Schema, mem memory.Allocator, size int64) (*File, error) {
	if size == 0 {
		if err := os.Truncate(path, 0); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return Open(flag, path, s, mem)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: resume: %w", flag, err)
	}
	fail := func(format string, a ...any) (*File, error) {
		f.Close()
		return nil, fmt.Errorf("%s %s: resume: %s", flag, path, fmt.Sprintf(format, a...))
	}
	fi, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	if fi.Size() < size {
		return fail("the file has %d bytes, the committed epoch wrote %d (was it changed?)", fi.Size(), size)
	}
	if err := f.Truncate(size); err != nil {
		return fail("%v", err)
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		return fail("%v", err)
	}
	so := &File{f: f}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".ndjson", ".jsonl":
		if so.txt, err = print.New(print.Config{Format: print.FormatJSON}, f); err != nil {
			return fail("%v", err)
		}
		so.txt.Start(s)
	default:
		// The writer starts with the schema message; the file has it already.
		var hdr bytes.Buffer
		w := codec.NewWriter(&hdr, s, mem)
		if err := w.Close(); err != nil {
			return fail("%v", err)
		}
		schemaMsg := hdr.Bytes()[:hdr.Len()-8] // minus the end-of-stream marker
		have := make([]byte, len(schemaMsg))
		if _, err := f.ReadAt(have, 0); err != nil || !bytes.Equal(have, schemaMsg) {
			return fail("it does not start with this stream's schema")
		}
		so.ipc = codec.NewWriter(&skipWriter{w: f, skip: len(schemaMsg)}, s, mem)
	}
	return so, nil
}

// skipWriter drops the first skip bytes written to it.
type skipWriter struct {
	w    io.Writer
	skip int
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, len(p))
		s.skip -= k
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// Size is the file's length: call it after Sync and record it with the epoch, for Resume.
func (s *File) Size() (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Write appends the rows of rec (borrowed).
func (s *File) Write(rec arrow.RecordBatch) error {
	if s.ipc != nil {
		return s.ipc.Write(rec)
	}
	return s.txt.Process(context.Background(), rec, nil)
}

// Sync flushes what was written and fsyncs the file; operators call it at every barrier.
func (s *File) Sync() error {
	if s.txt != nil {
		if err := s.txt.Close(); err != nil {
			return err
		}
	}
	return s.f.Sync()
}

// Close ends the file: an Arrow IPC stream gets its end=final control and end-of-stream
// marker, JSON lines are flushed.
func (s *File) Close() error {
	var err error
	if s.ipc != nil {
		if err = s.ipc.WriteControl(codec.EndControl(codec.Final)); err == nil {
			err = s.ipc.Close()
		}
	}
	if s.txt != nil {
		if cerr := s.txt.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
