package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
)

// LogDir is the subdirectory of the stage's checkpoint directory that holds the files log
// and the stream schema (see the package doc).
const LogDir = "files"

// SchemaFile is the stream schema of the checkpoint, in LogDir.
const SchemaFile = "schema.json"

// compactAfter is how many plan records the files log keeps before they are compacted into
// one (a compaction rewrites every entry, so it is amortised over this many listings).
const compactAfter = 64

// Entry identifies one file version that was planned for reading: the unit of the files log
// and of each epoch's file list in the offsets WAL.
type Entry struct {
	// Path is the absolute path ("-" for stdin), or for an object of a bucket its URL: the
	// pattern's bucket and prefix as given (scheme lower-cased) + "/" + the object's name
	// below it, unescaped ("s3://bucket/landing/2024/a b.json").
	Path string `json:"path"`
	// Size in bytes and modification time (ns since the Unix epoch) when it was listed.
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime_ns"`
	// FP is the fingerprint: hex SHA-256 (first 16 bytes) of the file's first FingerprintBytes;
	// for a bucket object listed with an ETag, "etag:" + the ETag (a content hash that costs
	// no read).
	FP string `json:"fp"`
	// ETag is a bucket object's version tag as its listing gave it ("" on a local disk, and
	// where the store lists none): a rewrite with the same size and time still differs here.
	ETag string `json:"etag,omitempty"`
	// Skip, when set, records a version that is known but not read: "rewritten" (changed
	// after it was read, --on-rewrite skip), "touched" (only its time changed), "format" (no
	// format for its extension) or "unread" (changed between its listing and its reading; its
	// next stable version is planned as a new file). Later listings compare against it, so
	// each is reported once.
	Skip string `json:"skip,omitempty"`
}

func (e *Entry) sameVersion(o *Entry) bool {
	return e.Path == o.Path && e.Size == o.Size && e.MTime == o.MTime && e.FP == o.FP && e.ETag == o.ETag && e.Skip == o.Skip
}

// planRecord is one files/<seq>.json: the entries a listing planned, with the index of the
// first. A compacted record has First = 0 and holds every entry up to its end.
type planRecord struct {
	Seq     uint64   `json:"seq"`
	First   int      `json:"first"`
	Entries []*Entry `json:"entries"`
}

// fileLog is the files log of a checkpoint directory (nil store: in memory only).
type fileLog struct {
	// store is <checkpoint>/files: a local directory or a bucket prefix, nil without a
	// checkpoint.
	store   storage.Store
	seq     uint64 // newest record
	records int    // records on disk since the last compaction
	// held is nil while this process holds the checkpoint (state.Dir.Held): a process that
	// lost a bucket checkpoint's lease writes no more records.
	held func() error
}

func recordName(seq uint64) string { return state.EpochName(seq) + ".json" }

// where names the log's directory in messages: its absolute path, or its redacted URL.
func (l *fileLog) where() string {
	if l.store == nil {
		return ""
	}
	return l.store.Location()
}

// path names one file of the log in messages (filepath.Join on a local disk, as state does).
func (l *fileLog) path(name string) string {
	if d := l.store.LocalDir(); d != "" {
		return filepath.Join(d, name)
	}
	return l.store.Location() + "/" + name
}

// writeRecord writes one file of the log in state's checksummed envelope: replacing it on a
// local disk, whose flock allows one writer, as state writes its epoch files; with
// put-if-absent on a bucket, so that a process that lost the checkpoint's lease cannot
// overwrite a record of the new owner (every record has a new name, so ours is never there).
func (l *fileLog) writeRecord(name string, v any) error {
	if l.store.LocalDir() != "" {
		return state.WriteJSONAt(l.store, name, v)
	}
	b, err := state.EncodeJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", l.path(name), err)
	}
	if err := l.store.PutIfAbsent(context.Background(), name, b); err != nil {
		return fmt.Errorf("write %s: %w (has another process taken over this checkpoint?)", l.path(name), err)
	}
	return nil
}

// load reads every plan record in order and returns the entries.
func (l *fileLog) load() ([]*Entry, error) {
	if l.store == nil {
		return nil, nil
	}
	seqs, err := state.EpochsAt(l.store, "") // records are named like epochs: <seq>.json
	if err != nil {
		return nil, fmt.Errorf("files log: %w", err)
	}
	var entries []*Entry
	for _, n := range seqs {
		var rec planRecord
		if err := state.ReadJSONAt(l.store, recordName(n), &rec); err != nil {
			return nil, fmt.Errorf("files log: %w", err)
		}
		if rec.First < 0 || rec.First > len(entries) {
			return nil, &state.CorruptError{Path: l.path(recordName(n)), Reason: fmt.Sprintf("record starts at entry %d, the log before it has %d", rec.First, len(entries))}
		}
		entries = append(entries[:rec.First], rec.Entries...)
		l.seq = n
		if rec.First == 0 {
			l.records = 0
		}
		l.records++
	}
	return entries, nil
}

// append writes a plan record for entries[first:] (atomically), compacting the log when it
// has grown to compactAfter records.
func (l *fileLog) append(entries []*Entry, first int) error {
	if l.store == nil {
		return nil
	}
	if l.held != nil {
		if err := l.held(); err != nil {
			return fmt.Errorf("files log: %w", err)
		}
	}
	l.seq++
	rec := planRecord{Seq: l.seq, First: first, Entries: entries[first:]}
	compact := l.records+1 >= compactAfter
	if compact {
		rec.First, rec.Entries = 0, entries
	}
	if err := l.writeRecord(recordName(l.seq), rec); err != nil {
		return fmt.Errorf("files log: %w", err)
	}
	l.records++
	if compact {
		// Older records are covered by this one; a crash before they are gone is harmless
		// (load applies records in order and this one replaces everything before it).
		seqs, _ := state.EpochsAt(l.store, "")
		for _, n := range seqs {
			if n < l.seq {
				l.store.Remove(context.Background(), recordName(n))
			}
		}
		if d := l.store.LocalDir(); d != "" {
			if err := state.SyncDir(d); err != nil {
				return fmt.Errorf("files log: %w", err)
			}
		}
		l.records = 1
	}
	return nil
}

// storedSchema is files/schema.json: the stream schema fixed by the first run.
type storedSchema struct {
	// DDL is for people (state-dump, jq); IPC (base64 of an Arrow IPC stream holding only the
	// schema) is what is loaded, exactly.
	DDL string `json:"ddl"`
	IPC string `json:"ipc"`
}

func (l *fileLog) loadSchema() (*arrow.Schema, error) {
	if l.store == nil {
		return nil, nil
	}
	var st storedSchema
	p := l.path(SchemaFile)
	if err := state.ReadJSONAt(l.store, SchemaFile, &st); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(st.IPC)
	if err != nil {
		return nil, &state.CorruptError{Path: p, Reason: "ipc: " + err.Error()}
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, &state.CorruptError{Path: p, Reason: "ipc: " + err.Error()}
	}
	defer r.Release()
	return r.Schema(), nil
}

func (l *fileLog) saveSchema(s *arrow.Schema) error {
	if l.store == nil {
		return nil
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Close(); err != nil {
		return err
	}
	return l.writeRecord(SchemaFile, storedSchema{DDL: schema.DDL(s), IPC: base64.StdEncoding.EncodeToString(buf.Bytes())})
}
