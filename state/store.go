package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/storage"
)

// Columns every state file starts with; the value columns of the Codec follow.
const (
	// OpColumn is "upsert" or "delete" in changelogs, always "upsert" in snapshots.
	OpColumn = "_op"
	// KeyColumn holds the encoded key bytes (the store's map key).
	KeyColumn = "_key"
)

// Ops in the OpColumn.
const (
	OpUpsert = "upsert"
	OpDelete = "delete"
)

// DefaultSnapshotEvery is how many epochs pass between full snapshots (K in DESIGN.md §3).
const DefaultSnapshotEvery = 10

// stateBatchRows bounds the rows per record batch in state files.
const stateBatchRows = 64 * 1024

// Codec maps an operator's state value V to Arrow columns, so state files are plain Arrow IPC
// that pyarrow, DuckDB and `streamkit state-dump` can read.
type Codec[V any] interface {
	// Fields are the value columns; they must all be nullable (deletes carry nulls).
	Fields() []arrow.Field
	// Append appends v to the builders of the value columns (bs has len(Fields()) entries).
	Append(bs []array.Builder, v V)
	// Decode reads the value of row i from the value columns.
	Decode(cols []arrow.Array, i int) (V, error)
}

// FileInfo describes one Arrow IPC state file in a manifest.
type FileInfo struct {
	File   string `json:"file"`   // name relative to state/
	Size   int64  `json:"size"`   // bytes
	CRC32C string `json:"crc32c"` // 8 hex digits over the whole file
	Rows   int64  `json:"rows"`
}

// Manifest is state/<epoch>.json, written last: an epoch's state exists only when its manifest
// does and verifies.
type Manifest struct {
	Epoch     uint64          `json:"epoch"`
	Changelog *FileInfo       `json:"changelog,omitempty"`
	Snapshot  *FileInfo       `json:"snapshot,omitempty"`
	Entries   int64           `json:"entries"`         // keys held after the epoch
	Extra     json.RawMessage `json:"extra,omitempty"` // operator scalars (watermark, counters)
}

// Store is an in-memory keyed state store with per-epoch changelogs and periodic snapshots.
// Keys are encoded key bytes; V is the operator's value type. Not safe for concurrent use.
//
// The keys live in a compact hash table (an append-only byte arena with an open-addressing
// index, see table.go), off the Go heap on Linux: about 49 bytes of memory per key for a
// 16-byte key and an int64 value, nothing for the garbage collector to scan. The state files
// it writes are independent of this layout (docs/protocol.md §7.4).
type Store[V any] struct {
	codec         Codec[V]
	t             table[V]
	schema        *arrow.Schema
	SnapshotEvery uint64 // full snapshot when epoch % SnapshotEvery == 0; default 10
	// BatchBytes cuts a record batch of a state file once its keys and values hold about
	// this many bytes (besides the 64Ki-row limit); default codec.DefaultBatchBytes (64 MiB).
	BatchBytes   int
	haveSnapshot bool
	tags         []uint32 // PutIfAbsentAll's scratch space
}

// NewStore returns an empty store for values encoded by c.
func NewStore[V any](c Codec[V]) *Store[V] {
	fields := append([]arrow.Field{
		{Name: OpColumn, Type: arrow.BinaryTypes.String},
		{Name: KeyColumn, Type: arrow.BinaryTypes.Binary},
	}, c.Fields()...)
	s := &Store[V]{codec: c, t: newTable[V](newOffheap()), schema: arrow.NewSchema(fields, nil), SnapshotEvery: DefaultSnapshotEvery}
	runtime.AddCleanup(s, func(o *offheap) { o.freeAll() }, s.t.mem)
	return s
}

// Schema is the schema of the store's state files: _op, _key, then the value columns.
func (s *Store[V]) Schema() *arrow.Schema { return s.schema }

// Get returns the value of key k.
func (s *Store[V]) Get(k string) (V, bool) { return s.GetBytes(bytesOf(k)) }

// GetBytes is Get for a key held in a byte slice (not retained).
func (s *Store[V]) GetBytes(k []byte) (V, bool) {
	if e := s.t.get(k); e != nil {
		return e.v, true
	}
	var zero V
	return zero, false
}

// Put sets the value of key k; it is written to the next changelog.
func (s *Store[V]) Put(k string, v V) { s.t.put(bytesOf(k), v, true) }

// PutBytes is Put for a key held in a byte slice (copied into the store).
func (s *Store[V]) PutBytes(k []byte, v V) { s.t.put(k, v, true) }

// PutIfAbsent sets key k to v unless k is present, and reports whether it did: one hash and
// probe for dedup's "seen before?" (k is copied into the store).
func (s *Store[V]) PutIfAbsent(k []byte, v V) bool { return s.t.put(k, v, false) }

// PutIfAbsentAll is PutIfAbsent(keys[i], val(i)) for every i in order, calling
// done(i, inserted) after each; val and done may depend on the calls before (they run in the
// same order as with a loop of PutIfAbsent). It is faster for a batch of keys: the index
// lookups of keys a few positions ahead are started early, so their memory accesses overlap.
// The keys are copied into the store.
func (s *Store[V]) PutIfAbsentAll(keys [][]byte, val func(i int) V, done func(i int, inserted bool)) {
	s.tags = s.t.putAbsentAll(keys, s.tags, val, done)
}

// Delete removes key k; the next changelog records the delete.
func (s *Store[V]) Delete(k string) { s.t.del(bytesOf(k)) }

// DeleteFunc deletes every key for which del returns true and returns how many it deleted
// (cheaper than Range and Delete: no copies, no lookups). k shares the store's memory and is
// valid only during the call. The next changelog records the deletes.
func (s *Store[V]) DeleteFunc(del func(k string, v V) bool) int {
	n := 0
	s.t.rangeLive(func(i uint32, e *entry[V]) bool {
		if del(stringOf(s.t.key(e.ref)), e.v) && s.t.kill(i, e) {
			n++
		}
		return true
	})
	return n
}

// Len is the number of keys held.
func (s *Store[V]) Len() int { return s.t.live }

// Bytes is the memory the store holds for its keys and values (index, key arena, entries),
// for progress reports; O(number of 1 MiB arena chunks).
func (s *Store[V]) Bytes() int64 { return s.t.bytes() }

// Range calls f for every key in unspecified order until f returns false. k is a copy (it may
// be kept). f may Delete keys; keys Put during Range may or may not be visited.
func (s *Store[V]) Range(f func(k string, v V) bool) {
	s.t.rangeLive(func(_ uint32, e *entry[V]) bool { return f(string(s.t.key(e.ref)), e.v) })
}

// Dirty is the number of keys changed since the last checkpoint.
func (s *Store[V]) Dirty() int { return len(s.t.dirty) + int(s.t.nent-s.t.mark) }

// Discard forgets the changes since the last checkpoint without writing them: the next
// changelog starts empty and deleted keys release their memory. An operator without a
// checkpoint directory calls it at every barrier instead of Checkpoint, so that change
// tracking does not grow without bound.
func (s *Store[V]) Discard() { s.t.settle() }

// Checkpoint makes the state of epoch n durable in d: state/<n>.changelog.arrow with the keys
// changed since the last checkpoint (sorted by key), a full state/<n>.snapshot.arrow every
// SnapshotEvery epochs (and at the first checkpoint), then the manifest state/<n>.json
// carrying extra (any JSON-marshalable operator scalars, may be nil).
func (s *Store[V]) Checkpoint(mem memory.Allocator, d *Dir, n uint64, extra any) error {
	if err := d.Held(); err != nil {
		return err
	}
	man := Manifest{Epoch: n, Entries: int64(s.t.live)}
	if extra != nil {
		b, err := json.Marshal(extra)
		if err != nil {
			return fmt.Errorf("checkpoint epoch %d: %w", n, err)
		}
		man.Extra = b
	}
	// The entry lists are off the Go heap, as the table (see table.sorted). A key added in
	// this epoch and deleted again (dedup expiring a key at the barrier that brought it) was
	// in no earlier state and is in none later: the changelog leaves it out.
	keys := s.t.indexBuf(s.Dirty())
	s.t.pending(func(i uint32, e *entry[V]) {
		if i < s.t.mark || e.ref&refDeleted == 0 {
			keys = append(keys, i)
		}
	})
	fi, err := s.writeFile(mem, d, EpochName(n)+".changelog.arrow", s.t.sorted(keys))
	freeSlice(s.t.mem, keys)
	if err != nil {
		return err
	}
	man.Changelog = &fi
	every := s.SnapshotEvery
	if every == 0 {
		every = DefaultSnapshotEvery
	}
	if !s.haveSnapshot || n%every == 0 {
		all := s.t.indexBuf(s.t.live)
		s.t.rangeLive(func(i uint32, _ *entry[V]) bool { all = append(all, i); return true })
		fi, err := s.writeFile(mem, d, EpochName(n)+".snapshot.arrow", s.t.sorted(all))
		freeSlice(s.t.mem, all)
		if err != nil {
			return err
		}
		man.Snapshot = &fi
		s.haveSnapshot = true
	}
	if err := WriteManifest(d, man); err != nil {
		return err
	}
	s.t.settle()
	return nil
}

// stringOf returns b as a string without copying; b must outlive the string unmodified.
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (s *Store[V]) writeFile(mem memory.Allocator, d *Dir, name string, keys []uint32) (FileInfo, error) {
	fi, err := WriteStateFile(mem, d, name, s.schema, func(write func(arrow.RecordBatch) error) error {
		return s.encode(mem, write, keys)
	})
	fi.Rows = int64(len(keys))
	return fi, err
}

// WriteStateFile writes the Arrow IPC file state/<name> of d of schema atomically with the
// batches that produce passes to write, and returns its FileInfo (size, CRC32C and row count)
// for a manifest: on a local disk a temp file, fsync, rename (the directory fsync comes with
// the manifest); on a bucket one streamed object, visible only once complete. Operators that
// keep their own in-memory state (window) use it with WriteManifest; Store uses it for its
// changelogs and snapshots. Rows in a state file must be sorted by the _key column and unique
// per file (Reconstruct merges sorted files).
func WriteStateFile(mem memory.Allocator, d *Dir, name string, schema *arrow.Schema, produce func(write func(arrow.RecordBatch) error) error) (FileInfo, error) {
	fi := FileInfo{File: name}
	at := where(d.st, StateDir+"/"+name)
	w, err := createStateFile(d.st, name)
	if err != nil {
		return fi, fmt.Errorf("write state %s: %w", at, err)
	}
	defer w.Abort()
	crc := crc32.New(castagnoli)
	cw := &countWriter{w: io.MultiWriter(w, crc)}
	fw, err := ipc.NewFileWriter(cw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err == nil {
		err = produce(func(rec arrow.RecordBatch) error {
			fi.Rows += rec.NumRows()
			return fw.Write(rec)
		})
		if cerr := fw.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return fi, fmt.Errorf("write state %s: %w", at, err)
	}
	fi.Size, fi.CRC32C = cw.n, fmt.Sprintf("%08x", crc.Sum32())
	return fi, nil
}

// createStateFile starts the write of state/<name>: a temporary file renamed over the name by
// Close on a local disk (fsynced, the directory fsync left to the manifest), the store's
// streamed object write on a bucket (an upload replaces the object whole).
func createStateFile(st storage.Store, name string) (storage.Writer, error) {
	if !isLocal(st) {
		return st.Create(bg, StateDir+"/"+name)
	}
	dir := filepath.Join(st.LocalDir(), StateDir)
	f, err := os.CreateTemp(dir, tmpPrefix+name+"-*")
	if err != nil {
		return nil, err
	}
	return &renameWriter{f: f, final: filepath.Join(dir, name)}, nil
}

// renameWriter is a local temporary file that Close fsyncs and renames to final.
type renameWriter struct {
	f     *os.File
	final string
	done  bool
}

func (w *renameWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *renameWriter) Close() error {
	w.done = true
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.f.Name(), w.final)
	}
	if err != nil {
		os.Remove(w.f.Name())
	}
	return err
}

func (w *renameWriter) Abort() {
	if !w.done {
		w.f.Close()
		os.Remove(w.f.Name())
	}
	w.done = true
}

// WriteManifest writes state/<epoch>.json of d last, making the epoch's state files visible
// (an epoch's state exists only when its manifest does). On a bucket it is put-if-absent: a
// manifest of the epoch already there (a zombie's) is an error, never replaced.
func WriteManifest(d *Dir, m Manifest) error {
	if err := d.Held(); err != nil {
		return err
	}
	b, err := EncodeJSON(m)
	if err != nil {
		return fmt.Errorf("encode manifest of epoch %d: %w", m.Epoch, err)
	}
	if err := putEpochFile(d.st, manifestName(m.Epoch), b); err != nil {
		return fmt.Errorf("write state of epoch %d: %w", m.Epoch, err)
	}
	return nil
}

// manifestName is the name of epoch n's state manifest, relative to the directory.
func manifestName(n uint64) string { return StateDir + "/" + EpochName(n) + ".json" }

// encode writes the entries keys (sorted by key) as state rows: tombstones as deletes (only
// pending entries, so only in changelogs), live entries as upserts, in batches of at most
// stateBatchRows rows cut once a batch holds BatchBytes (keys and values: a binary column
// addresses at most 2 GiB per array). The _op and _key columns are built directly into reused
// buffers (no per-row builder calls); the value columns go through the Codec's builders.
func (s *Store[V]) encode(mem memory.Allocator, write func(arrow.RecordBatch) error, keys []uint32) error {
	vals := make([]array.Builder, 0, len(s.schema.Fields())-2)
	for _, f := range s.schema.Fields()[2:] {
		vb := array.NewBuilder(mem, f.Type)
		defer vb.Release()
		vals = append(vals, vb)
	}
	size := codec.NewSizer(vals)
	limit := s.BatchBytes
	if limit <= 0 {
		limit = codec.DefaultBatchBytes
	}
	n := min(len(keys), stateBatchRows)
	var (
		opData  = make([]byte, 0, n*len(OpUpsert))
		opOffs  = make([]int32, 0, n+1)
		keyData = make([]byte, 0, min(n*32, limit))
		keyOffs = make([]int32, 0, n+1)
	)
	for lo := 0; lo < len(keys) || lo == 0; {
		batch := keys[lo:min(lo+stateBatchRows, len(keys))]
		opData, opOffs = opData[:0], append(opOffs[:0], 0)
		keyData, keyOffs = keyData[:0], append(keyOffs[:0], 0)
		for _, vb := range vals {
			vb.Reserve(len(batch))
		}
		rows := 0
		for g, ei := range batch {
			if g%prefetchGroup == 0 {
				s.t.touchKeys(batch[g:min(g+prefetchGroup, len(batch))])
			}
			e := s.t.ent(ei)
			keyData = append(keyData, s.t.key(e.ref)...)
			if len(keyData) > math.MaxInt32 { // one key of 2 GiB
				return fmt.Errorf("state file batch: a key of %d bytes exceeds %d", len(keyData), math.MaxInt32)
			}
			keyOffs = append(keyOffs, int32(len(keyData)))
			if e.ref&refDeleted == 0 {
				opData = append(opData, OpUpsert...)
				s.codec.Append(vals, e.v)
			} else {
				opData = append(opData, OpDelete...)
				for _, vb := range vals {
					vb.AppendNull()
				}
			}
			opOffs = append(opOffs, int32(len(opData)))
			rows++
			if len(keyData)+size.Bytes(rows) >= limit {
				break
			}
		}
		if err := s.writeBatch(write, rows, opOffs, opData, keyOffs, keyData, vals); err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		lo += rows
	}
	return nil
}

// writeBatch wraps the _op and _key buffers and the value builders' arrays into a record
// batch of n rows and passes it to write (which must not retain the buffers: they are reused).
func (s *Store[V]) writeBatch(write func(arrow.RecordBatch) error, n int, opOffs []int32, opData []byte, keyOffs []int32, keyData []byte, vals []array.Builder) error {
	cols := make([]arrow.Array, 0, 2+len(vals))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, c := range []struct {
		t    arrow.DataType
		offs []int32
		data []byte
	}{{arrow.BinaryTypes.String, opOffs, opData}, {arrow.BinaryTypes.Binary, keyOffs, keyData}} {
		d := array.NewData(c.t, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offs)), memory.NewBufferBytes(c.data)}, nil, 0, 0)
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	for _, vb := range vals {
		cols = append(cols, vb.NewArray())
	}
	rec := array.NewRecordBatch(s.schema, cols, int64(n))
	defer rec.Release()
	return write(rec)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var _ hash.Hash32 = crc32.New(castagnoli)

// ReadManifest loads and verifies state/<n>.json of the checkpoint directory at location path.
func ReadManifest(path string, n uint64) (Manifest, error) {
	st, err := openLoc("read state of", path)
	if err != nil {
		return Manifest{}, err
	}
	return ReadManifestAt(st, n)
}

// ReadManifestAt is ReadManifest for the checkpoint directory st.
func ReadManifestAt(st storage.Store, n uint64) (Manifest, error) {
	var m Manifest
	err := ReadJSONAt(st, manifestName(n), &m)
	return m, err
}

// StateFile is an open state file that verified against its manifest entry: an Arrow IPC
// file reader over the file, which reads each record batch when it is asked for (so restoring
// state of any size holds one batch of the file at a time, not the whole file). Close
// releases the reader and the file.
type StateFile struct {
	*ipc.FileReader
	f storage.File
}

// Close closes the reader and the file.
func (s *StateFile) Close() error {
	err := s.FileReader.Close()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// wholeFileMax is the size up to which OpenStateFile reads a state file into memory at once
// (fewer system calls for the many small files of a busy checkpoint, one request on a bucket);
// larger files are read a batch at a time.
const wholeFileMax = 4 << 20

// OpenStateFile opens a state file listed in a manifest of the checkpoint directory at
// location path; see OpenStateFileAt.
func OpenStateFile(mem memory.Allocator, path string, fi FileInfo) (*StateFile, error) {
	st, err := openLoc("read state of", path)
	if err != nil {
		return nil, err
	}
	return OpenStateFileAt(mem, st, fi)
}

// OpenStateFileAt opens a state file listed in a manifest of the checkpoint directory st,
// verifies size and checksum, and returns an Arrow IPC file reader over it; the caller closes
// it. A file larger than 4 MiB is verified in a pass of 1 MiB reads and then read a record
// batch at a time (ranged reads on a bucket), so restoring state of any size holds one batch
// of it in memory, not the whole file. A mismatch yields *CorruptError naming the file.
func OpenStateFileAt(mem memory.Allocator, st storage.Store, fi FileInfo) (*StateFile, error) {
	name := StateDir + "/" + fi.File
	p := where(st, name)
	f, err := st.Open(bg, name)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", p, err)
	}
	fail := func(reason string) (*StateFile, error) {
		f.Close()
		return nil, &CorruptError{Path: p, Reason: reason}
	}
	var src ipc.ReadAtSeeker = f
	crc := crc32.New(castagnoli)
	var n int64
	if fi.Size <= wholeFileMax {
		b, rerr := io.ReadAll(io.LimitReader(f, wholeFileMax+1))
		n, err, src = int64(len(b)), rerr, bytes.NewReader(b)
		crc.Write(b)
	} else {
		n, err = io.CopyBuffer(crc, f, make([]byte, 1<<20))
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read state %s: %w", p, err)
	}
	if n != fi.Size {
		return fail(fmt.Sprintf("size %d, manifest says %d (truncated?)", n, fi.Size))
	}
	if got := fmt.Sprintf("%08x", crc.Sum32()); got != fi.CRC32C {
		return fail(fmt.Sprintf("checksum mismatch (manifest %s, computed %s)", fi.CRC32C, got))
	}
	// The file verified, so any block within it is genuine: lift arrow-go's default 256 MiB
	// limit per batch body, which refused the single large batches of state files written
	// before they were cut by bytes.
	r, err := ipc.NewFileReader(src, ipc.WithAllocator(mem), ipc.WithBodySizeLimit(fi.Size))
	if err != nil {
		return fail(err.Error())
	}
	return &StateFile{FileReader: r, f: f}, nil
}

// ErrNoState is returned by Restore when a committed epoch has no state in the directory.
var ErrNoState = errors.New("no state")

// Restore replaces the store's content with the state as of epoch n read from the checkpoint
// directory at location path (the newest snapshot ≤ n plus the changelogs after it), and
// returns the manifest of epoch n (its Extra holds the operator scalars). n == 0 restores the
// empty state. Every file is verified; a missing epoch in the chain or a corrupt file is an
// error naming it.
func (s *Store[V]) Restore(mem memory.Allocator, path string, n uint64) (Manifest, error) {
	s.t.release()
	s.t = newTable[V](s.t.mem)
	s.haveSnapshot = false
	if n == 0 {
		return Manifest{}, nil
	}
	st, err := openLoc("restore", path)
	if err != nil {
		return Manifest{}, err
	}
	chain, _, err := manifestChain(st, n)
	if err != nil {
		return Manifest{}, err
	}
	if len(chain) == 0 || chain[0].Epoch != n {
		return Manifest{}, fmt.Errorf("restore %s epoch %d: %w for the committed epoch (state files deleted?)", path, n, ErrNoState)
	}
	base := chain[len(chain)-1]
	if base.Snapshot == nil {
		return Manifest{}, fmt.Errorf("restore %s epoch %d: %w: no snapshot at or before it", path, n, ErrNoState)
	}
	if err := s.apply(mem, st, *base.Snapshot); err != nil {
		return Manifest{}, err
	}
	for i := len(chain) - 2; i >= 0; i-- {
		if chain[i].Epoch != chain[i+1].Epoch+1 {
			return Manifest{}, fmt.Errorf("restore %s: %w for epoch %d", path, ErrNoState, chain[i+1].Epoch+1)
		}
		if chain[i].Changelog != nil {
			if err := s.apply(mem, st, *chain[i].Changelog); err != nil {
				return Manifest{}, err
			}
		}
	}
	s.t.settle()
	s.haveSnapshot = true
	return chain[0], nil
}

// manifestChain reads the state manifests of the directory st from the newest epoch ≤ n
// back to the newest snapshot at or before it, newest first: the files that rebuild the state
// of epoch n are the snapshot of the last one and the changelogs of the others. It also
// returns every state epoch stored. The caller checks that the chain starts at n and ends at
// a snapshot.
func manifestChain(st storage.Store, n uint64) (chain []Manifest, eps []uint64, err error) {
	eps, err = EpochsAt(st, StateDir)
	if err != nil {
		return nil, nil, err
	}
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i] > n {
			continue
		}
		m, err := ReadManifestAt(st, eps[i])
		if err != nil {
			return nil, nil, err
		}
		chain = append(chain, m)
		if m.Snapshot != nil {
			break
		}
	}
	return chain, eps, nil
}

func (s *Store[V]) apply(mem memory.Allocator, st storage.Store, fi FileInfo) error {
	r, err := OpenStateFileAt(mem, st, fi)
	if err != nil {
		return err
	}
	defer r.Close()
	p := where(st, StateDir+"/"+fi.File)
	if !r.Schema().Equal(s.schema) {
		return &CorruptError{Path: p, Reason: "schema differs from this operator's state schema"}
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return &CorruptError{Path: p, Reason: err.Error()}
		}
		ops := rec.Column(0).(*array.String)
		keys := rec.Column(1).(*array.Binary)
		vals := rec.Columns()[2:]
		for row := 0; row < int(rec.NumRows()); row++ {
			k := keys.Value(row)
			if ops.Value(row) == OpDelete {
				s.t.del(k)
				continue
			}
			v, err := s.codec.Decode(vals, row)
			if err != nil {
				rec.Release()
				return &CorruptError{Path: p, Reason: fmt.Sprintf("row %d: %v", row, err)}
			}
			s.t.put(k, v, true)
		}
		rec.Release()
	}
	return nil
}

// DiscardAfter removes state epochs after n from the checkpoint directory at location path
// (written by a run that crashed before the sink committed them); recovery rewrites them.
func DiscardAfter(path string, n uint64) error {
	st, err := openLoc("discard state of", path)
	if err != nil {
		return err
	}
	eps, err := EpochsAt(st, StateDir)
	if err != nil {
		return err
	}
	for _, e := range eps {
		if e > n {
			removeStateEpoch(st, e)
		}
	}
	return nil
}

// removeStateEpoch removes the manifest first, so a crash mid-way leaves no manifest pointing
// at missing files.
func removeStateEpoch(st storage.Store, n uint64) {
	st.Remove(bg, manifestName(n))
	st.Remove(bg, StateDir+"/"+EpochName(n)+".changelog.arrow")
	st.Remove(bg, StateDir+"/"+EpochName(n)+".snapshot.arrow")
}

// snapshotEpochs lists the state epochs of st that have a snapshot file.
func snapshotEpochs(st storage.Store) ([]uint64, error) {
	ents, err := st.ReadDir(bg, StateDir)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name] = true
	}
	eps, _ := epochsOf(ents)
	var out []uint64
	for _, e := range eps {
		if have[EpochName(e)+".snapshot.arrow"] {
			out = append(out, e)
		}
	}
	return out, nil
}
