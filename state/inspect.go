package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/storage"
)

// EpochInfo describes one retained epoch of a stage directory, for state-dump.
type EpochInfo struct {
	Epoch     uint64          `json:"epoch"`
	Committed bool            `json:"committed"`
	Time      time.Time       `json:"time"`               // when its newest file (offsets, state, commit marker) was written
	Bytes     int64           `json:"bytes"`              // state + offsets files of the epoch (not the commit marker)
	Offsets   json.RawMessage `json:"offsets,omitempty"`  // source end position (offsets WAL)
	Entries   *int64          `json:"entries,omitempty"`  // keys in state after the epoch
	Snapshot  bool            `json:"snapshot,omitempty"` // a full snapshot was written
	Extra     json.RawMessage `json:"extra,omitempty"`    // operator scalars (watermark …)
	Error     string          `json:"error,omitempty"`    // a corrupt file: path and reason
}

// Summary is what state-dump shows for a stage directory. It is read without the lock and
// never writes; files of incomplete epochs (no manifest) are not read.
type Summary struct {
	Path      string      `json:"path"`
	Meta      *Metadata   `json:"metadata,omitempty"`
	Committed uint64      `json:"committed_epoch"`
	Epochs    []EpochInfo `json:"epochs"`
	Errors    []string    `json:"errors,omitempty"`
}

// IsStageDir reports whether the location path looks like a stage checkpoint directory.
func IsStageDir(path string) bool {
	st, err := StoreAt(path)
	return err == nil && isStageDir(st)
}

func isStageDir(st storage.Store) bool {
	_, err := st.Stat(bg, MetadataFile)
	return err == nil
}

// Stages lists the stage directories directly under a $STREAMKIT_CHECKPOINT root (a location).
func Stages(root string) ([]string, error) {
	st, err := StoreAt(root)
	if err != nil {
		return nil, err
	}
	if isLocal(st) {
		if _, err := os.Stat(st.LocalDir()); err != nil {
			return nil, err
		}
	}
	ents, err := st.ReadDir(bg, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir && isStageDir(st.Sub(e.Name)) {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Inspect summarizes the stage directory at location path. A corrupt file is reported in the
// epoch's Error (and Summary.Errors) with its path; the other epochs are still summarized.
//
// Inspect is safe on a live directory: it takes no lock and writes nothing; it lists each
// subdirectory once and reads only files that exist whole (every checkpoint file is written
// atomically, and an operator's epoch counts only once its manifest, written last, exists).
// A file that disappears while it is read was garbage-collected by the running stage: its
// epoch (or that part of it) is left out, not reported as an error. Committed is the newest
// commit marker of the same listing that marks the epochs Committed, so the two agree.
func Inspect(path string) (*Summary, error) {
	st, err := StoreAt(path)
	if err != nil {
		return nil, err
	}
	if isLocal(st) {
		if _, err := os.Stat(st.LocalDir()); err != nil {
			return nil, err
		}
	} else if !isStageDir(st) {
		return nil, fmt.Errorf("%s: %w (no %s)", st.Location(), os.ErrNotExist, MetadataFile)
	}
	s := &Summary{Path: path}
	var meta Metadata
	if err := ReadJSONAt(st, MetadataFile, &meta); err == nil {
		s.Meta = &meta
	} else if !errors.Is(err, os.ErrNotExist) {
		s.Errors = append(s.Errors, err.Error())
	}
	all := map[uint64]*EpochInfo{}
	get := func(n uint64) *EpochInfo {
		if all[n] == nil {
			all[n] = &EpochInfo{Epoch: n}
		}
		return all[n]
	}
	fail := func(e *EpochInfo, err error) {
		e.Error = err.Error()
		s.Errors = append(s.Errors, err.Error())
	}
	// One listing per subdirectory gives the epochs and each file's size and time.
	list := func(sub string) ([]uint64, map[string]storage.Info) {
		ents, err := st.ReadDir(bg, sub)
		if err != nil {
			s.Errors = append(s.Errors, err.Error())
			return nil, nil
		}
		infos := make(map[string]storage.Info, len(ents))
		for _, e := range ents {
			infos[e.Name] = e
		}
		eps, _ := epochsOf(ents)
		return eps, infos
	}
	newer := func(e *EpochInfo, fi storage.Info) {
		if fi.ModTime.After(e.Time) {
			e.Time = fi.ModTime.UTC()
		}
	}
	commits, cinfo := list(CommitsDir)
	if len(commits) > 0 {
		// The newest marker must verify (docs/protocol.md §7.5); older ones are not read.
		c := commits[len(commits)-1]
		var rec CommitRecord
		switch err := ReadJSONAt(st, commitName(c), &rec); {
		case err != nil:
			fail(get(c), err)
		case rec.Epoch != c:
			fail(get(c), &CorruptError{Path: where(st, commitName(c)), Reason: fmt.Sprintf("records epoch %d", rec.Epoch)})
		default:
			s.Committed = c
		}
	}
	for _, n := range commits {
		e := get(n)
		e.Committed = true
		newer(e, cinfo[EpochName(n)+".json"])
	}
	offs, oinfo := list(OffsetsDir)
	for _, n := range offs {
		name := offsetsName(n)
		var raw rawJSON
		b, err := st.ReadFile(bg, name)
		if err == nil {
			err = DecodeJSON(where(st, name), b, &raw)
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // collected since the listing
		}
		e := get(n)
		e.Bytes += int64(len(b))
		newer(e, oinfo[EpochName(n)+".json"])
		if err != nil {
			fail(e, err)
			continue
		}
		e.Offsets = json.RawMessage(raw)
	}
	sts, sinfo := list(StateDir)
	for _, n := range sts {
		m, err := ReadManifestAt(st, n)
		if errors.Is(err, os.ErrNotExist) {
			continue // collected since the listing
		}
		e := get(n)
		if err != nil {
			fail(e, err)
			continue
		}
		// Sizes and times of the manifest and its files. A file that is gone while its
		// manifest is gone too was collected since the listing (GC deletes the manifest
		// first, then the files): the epoch's state is left out. One that is gone while the
		// manifest is still there is damage, reported with its path.
		var bytes int64
		t, missing := e.Time, ""
		for _, f := range []string{EpochName(n) + ".json", stateFile(m.Changelog), stateFile(m.Snapshot)} {
			if f == "" {
				continue
			}
			fi, ok := sinfo[f]
			if !ok {
				// Written after the listing? Ask once more before calling it missing.
				if fi, err = st.Stat(bg, StateDir+"/"+f); err != nil {
					missing = f
					break
				}
			}
			bytes += fi.Size
			if fi.ModTime.After(t) {
				t = fi.ModTime.UTC()
			}
		}
		if missing != "" {
			if _, err := st.Stat(bg, manifestName(n)); err == nil {
				fail(e, &CorruptError{Path: where(st, StateDir+"/"+missing), Reason: fmt.Sprintf("missing (listed by the manifest of epoch %d)", n)})
			}
			continue
		}
		entries := m.Entries
		e.Bytes += bytes
		e.Time = t
		e.Entries, e.Snapshot, e.Extra = &entries, m.Snapshot != nil, m.Extra
	}
	for _, e := range all {
		if e.Offsets == nil && e.Entries == nil && e.Error == "" && !e.Committed {
			continue // every file of it was collected while it was read
		}
		s.Epochs = append(s.Epochs, *e)
	}
	sort.Slice(s.Epochs, func(i, j int) bool { return s.Epochs[i].Epoch < s.Epochs[j].Epoch })
	return s, nil
}

// stateFile is the name of a manifest's file inside state/, "" for none.
func stateFile(fi *FileInfo) string {
	if fi == nil {
		return ""
	}
	return fi.File
}

// Table is keyed state reconstructed from state files: one row per live key, sorted by key.
type Table struct {
	// Rec has the state file schema (_op, _key, value columns); _op is always "upsert".
	Rec      arrow.RecordBatch
	Manifest Manifest
}

// Release frees the table.
func (t *Table) Release() {
	if t != nil && t.Rec != nil {
		t.Rec.Release()
	}
}

// Reconstruct rebuilds the keyed state of the stage directory at path as of epoch n (the
// newest snapshot ≤ n plus the changelogs after it) without knowing the operator: later
// upserts replace earlier rows of the same _key, deletes remove them. Every file is verified;
// errors name the corrupt or missing file. Read-only: it takes no lock.
func Reconstruct(mem memory.Allocator, path string, n uint64) (*Table, error) {
	st, err := openLoc("read state of", path)
	if err != nil {
		return nil, err
	}
	chain, eps, err := manifestChain(st, n)
	if err != nil {
		return nil, err
	}
	if len(chain) == 0 || chain[0].Epoch != n {
		return nil, fmt.Errorf("state of %s at epoch %d: %w (retained state epochs: %v)", path, n, ErrNoState, eps)
	}
	if chain[len(chain)-1].Snapshot == nil {
		return nil, fmt.Errorf("state of %s at epoch %d: %w: no snapshot at or before it", path, n, ErrNoState)
	}
	for i := 0; i+1 < len(chain); i++ {
		if chain[i].Epoch != chain[i+1].Epoch+1 {
			return nil, fmt.Errorf("state of %s at epoch %d: %w for epoch %d (a gap in the changelogs)", path, n, ErrNoState, chain[i+1].Epoch+1)
		}
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	files := []FileInfo{*chain[len(chain)-1].Snapshot}
	for i := len(chain) - 2; i >= 0; i-- {
		if chain[i].Changelog != nil {
			files = append(files, *chain[i].Changelog)
		}
	}
	var schema *arrow.Schema
	var fileOf []int // file index of each batch in recs
	for fno, fi := range files {
		r, err := OpenStateFileAt(mem, st, fi)
		if err != nil {
			return nil, err
		}
		if schema == nil {
			schema = r.Schema()
		} else if !schema.Equal(r.Schema()) {
			r.Close()
			return nil, &CorruptError{Path: where(st, StateDir+"/"+fi.File), Reason: "schema differs from the snapshot's"}
		}
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				r.Close()
				return nil, &CorruptError{Path: where(st, StateDir+"/"+fi.File), Reason: err.Error()}
			}
			recs = append(recs, rec) // RecordBatchAt returns a retained batch
			fileOf = append(fileOf, fno)
		}
		r.Close()
	}
	if schema == nil || schema.NumFields() < 2 || schema.Field(0).Name != OpColumn || schema.Field(1).Name != KeyColumn {
		return nil, fmt.Errorf("state of %s: files lack the %s/%s columns", path, OpColumn, KeyColumn)
	}
	// Every state file is sorted by key (Checkpoint sorts), so a k-way merge in key order,
	// the newest file winning ties, yields the live rows in order without a map or a sort.
	idx, total := mergeLive(mem, recs, fileOf)
	defer idx.Release()
	// Concatenate once, then take the live rows in key order.
	tbl := array.NewTableFromRecords(schema, recs)
	defer tbl.Release()
	cols := make([]arrow.Array, schema.NumFields())
	if total == 0 || idx.Len() == 0 {
		for i, f := range schema.Fields() {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
		}
		out := array.NewRecordBatch(schema, cols, 0)
		for _, c := range cols {
			c.Release()
		}
		return &Table{Rec: out, Manifest: chain[0]}, nil
	}
	ctx := compute.WithAllocator(context.Background(), mem)
	// A snapshot alone holds every row live and in order: no take needed.
	identity := len(files) == 1 && idx.Len() == total
	for i := range cols {
		chunks := tbl.Column(i).Data().Chunks()
		var whole arrow.Array
		if len(chunks) == 1 {
			whole = chunks[0]
			whole.Retain()
		} else {
			whole, err = array.Concatenate(chunks, mem)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				// The table is one batch: a string or binary column holds at most 2 GiB.
				return nil, fmt.Errorf("state of %s at epoch %d: column %s does not fit one Arrow array (at most 2 GiB of string or binary data): %w",
					path, n, schema.Field(i).Name, err)
			}
		}
		if identity {
			cols[i] = whole
			continue
		}
		cols[i], err = compute.TakeArray(ctx, whole, idx)
		whole.Release()
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
	}
	out := array.NewRecordBatch(schema, cols, int64(idx.Len()))
	for _, c := range cols {
		c.Release()
	}
	return &Table{Rec: out, Manifest: chain[0]}, nil
}

// mergeLive merges the state files' key-sorted runs (recs holds the files' batches in chain
// order, oldest file first; fileOf[i] is the file of batch i) and returns, in key order, the
// row index into the batches' concatenation of each live key's newest version (deletes drop
// the key), and the total row count.
func mergeLive(mem memory.Allocator, recs []arrow.RecordBatch, fileOf []int) (*array.Int64, int) {
	type run struct {
		batches []arrow.RecordBatch
		bases   []int
		b, row  int // current batch and row
		keys    *array.Binary
		ops     *array.String
	}
	var runs []*run
	total := 0
	for i, r := range recs {
		if i == 0 || fileOf[i] != fileOf[i-1] {
			runs = append(runs, &run{})
		}
		cur := runs[len(runs)-1]
		cur.batches = append(cur.batches, r)
		cur.bases = append(cur.bases, total)
		total += int(r.NumRows())
	}
	// settle moves a run to its next non-empty batch; false when exhausted.
	settle := func(r *run) bool {
		for r.b < len(r.batches) && r.row >= int(r.batches[r.b].NumRows()) {
			r.b++
			r.row = 0
			r.keys = nil
		}
		if r.b >= len(r.batches) {
			return false
		}
		if r.keys == nil {
			r.keys = r.batches[r.b].Column(1).(*array.Binary)
			r.ops = r.batches[r.b].Column(0).(*array.String)
		}
		return true
	}
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	ib.Reserve(total)
	if len(runs) == 1 {
		// A snapshot alone: every row is live, already in key order.
		for i := 0; i < total; i++ {
			ib.UnsafeAppend(int64(i))
		}
		return ib.NewInt64Array(), total
	}
	live := make([]bool, len(runs))
	for {
		var min []byte
		have := false
		for i, r := range runs {
			live[i] = settle(r)
			if live[i] {
				if k := r.keys.Value(r.row); !have || bytes.Compare(k, min) < 0 {
					min, have = k, true
				}
			}
		}
		if !have {
			break
		}
		newest, at := -1, 0
		for i, r := range runs {
			// A file holds a key at most once, so each run advances by at most one row.
			if live[i] && bytes.Equal(r.keys.Value(r.row), min) {
				if r.ops.Value(r.row) != OpDelete {
					newest, at = i, r.bases[r.b]+r.row
				} else {
					newest = -2 - i // deleted by the newest file so far
				}
				r.row++
			}
		}
		if newest >= 0 {
			ib.UnsafeAppend(int64(at))
		}
	}
	return ib.NewInt64Array(), total
}
