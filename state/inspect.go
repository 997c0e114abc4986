package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"context"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// EpochInfo describes one retained epoch of a stage directory, for state-dump.
type EpochInfo struct {
	Epoch     uint64          `json:"epoch"`
	Committed bool            `json:"committed"`
	Time      time.Time       `json:"time"`               // when its newest file was written
	Bytes     int64           `json:"bytes"`              // state + offsets files of the epoch
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

// IsStageDir reports whether path looks like a stage checkpoint directory.
func IsStageDir(path string) bool {
	_, err := os.Stat(filepath.Join(path, MetadataFile))
	return err == nil
}

// Stages lists the stage directories directly under a $STREAMKIT_CHECKPOINT root.
func Stages(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && IsStageDir(filepath.Join(root, e.Name())) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func fileInfo(p string) (int64, time.Time) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, time.Time{}
	}
	return fi.Size(), fi.ModTime().UTC()
}

// Inspect summarizes the stage directory at path. A corrupt file is reported in the epoch's
// Error (and Summary.Errors) with its path; the other epochs are still summarized.
func Inspect(path string) (*Summary, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	s := &Summary{Path: path}
	var meta Metadata
	if err := ReadJSON(filepath.Join(path, MetadataFile), &meta); err == nil {
		s.Meta = &meta
	} else if !errors.Is(err, os.ErrNotExist) {
		s.Errors = append(s.Errors, err.Error())
	}
	c, err := Committed(path)
	if err != nil {
		s.Errors = append(s.Errors, err.Error())
	}
	s.Committed = c
	all := map[uint64]*EpochInfo{}
	get := func(n uint64) *EpochInfo {
		if all[n] == nil {
			all[n] = &EpochInfo{Epoch: n}
		}
		return all[n]
	}
	note := func(e *EpochInfo, p string) {
		size, mt := fileInfo(p)
		e.Bytes += size
		if mt.After(e.Time) {
			e.Time = mt
		}
	}
	commits, _ := Epochs(path, CommitsDir)
	for _, n := range commits {
		get(n).Committed = true
	}
	offs, _ := Epochs(path, OffsetsDir)
	for _, n := range offs {
		e := get(n)
		p := filepath.Join(path, OffsetsDir, EpochName(n)+".json")
		note(e, p)
		pos, err := ReadOffsets(path, n)
		if err != nil {
			e.Error = err.Error()
			s.Errors = append(s.Errors, err.Error())
			continue
		}
		e.Offsets = json.RawMessage(pos)
	}
	sts, _ := Epochs(path, StateDir)
	for _, n := range sts {
		e := get(n)
		note(e, filepath.Join(path, StateDir, EpochName(n)+".json"))
		m, err := ReadManifest(path, n)
		if err != nil {
			e.Error = err.Error()
			s.Errors = append(s.Errors, err.Error())
			continue
		}
		for _, fi := range []*FileInfo{m.Changelog, m.Snapshot} {
			if fi != nil {
				note(e, filepath.Join(path, StateDir, fi.File))
			}
		}
		entries := m.Entries
		e.Entries, e.Snapshot, e.Extra = &entries, m.Snapshot != nil, m.Extra
	}
	for _, e := range all {
		s.Epochs = append(s.Epochs, *e)
	}
	sort.Slice(s.Epochs, func(i, j int) bool { return s.Epochs[i].Epoch < s.Epochs[j].Epoch })
	return s, nil
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
	eps, err := Epochs(path, StateDir)
	if err != nil {
		return nil, err
	}
	var chain []Manifest
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i] > n {
			continue
		}
		m, err := ReadManifest(path, eps[i])
		if err != nil {
			return nil, err
		}
		chain = append(chain, m)
		if m.Snapshot != nil {
			break
		}
	}
	if len(chain) == 0 || chain[0].Epoch != n {
		return nil, fmt.Errorf("state of %s at epoch %d: %w (retained state epochs: %v)", path, n, ErrNoState, eps)
	}
	if chain[len(chain)-1].Snapshot == nil {
		return nil, fmt.Errorf("state of %s at epoch %d: %w: no snapshot at or before it", path, n, ErrNoState)
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
	for _, fi := range files {
		r, err := OpenStateFile(mem, path, fi)
		if err != nil {
			return nil, err
		}
		if schema == nil {
			schema = r.Schema()
		} else if !schema.Equal(r.Schema()) {
			r.Close()
			return nil, &CorruptError{Path: filepath.Join(path, StateDir, fi.File), Reason: "schema differs from the snapshot's"}
		}
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				r.Close()
				return nil, &CorruptError{Path: filepath.Join(path, StateDir, fi.File), Reason: err.Error()}
			}
			recs = append(recs, rec) // RecordBatchAt returns a retained batch
		}
		r.Close()
	}
	if schema == nil || schema.NumFields() < 2 || schema.Field(0).Name != OpColumn || schema.Field(1).Name != KeyColumn {
		return nil, fmt.Errorf("state of %s: files lack the %s/%s columns", path, OpColumn, KeyColumn)
	}
	// Last write wins per key.
	type ref struct{ b, r int }
	live := map[string]ref{}
	for b, rec := range recs {
		ops := rec.Column(0).(*array.String)
		keys := rec.Column(1).(*array.Binary)
		for r := 0; r < int(rec.NumRows()); r++ {
			k := string(keys.Value(r))
			if ops.Value(r) == OpDelete {
				delete(live, k)
			} else {
				live[k] = ref{b, r}
			}
		}
	}
	keys := make([]string, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Concatenate once, then take the live rows in key order.
	tbl := array.NewTableFromRecords(schema, recs)
	defer tbl.Release()
	offsets := make([]int, len(recs))
	total := 0
	for i, r := range recs {
		offsets[i] = total
		total += int(r.NumRows())
	}
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	for _, k := range keys {
		rf := live[k]
		ib.Append(int64(offsets[rf.b] + rf.r))
	}
	idx := ib.NewInt64Array()
	defer idx.Release()
	cols := make([]arrow.Array, schema.NumFields())
	if total == 0 {
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
	for i := range cols {
		chunks := tbl.Column(i).Data().Chunks()
		var whole arrow.Array
		if len(chunks) == 1 {
			whole = chunks[0]
			whole.Retain()
		} else {
			whole, err = array.Concatenate(chunks, mem)
			if err != nil {
				return nil, err
			}
		}
		cols[i], err = compute.TakeArray(ctx, whole, idx)
		whole.Release()
		if err != nil {
			return nil, err
		}
	}
	out := array.NewRecordBatch(schema, cols, int64(len(keys)))
	for _, c := range cols {
		c.Release()
	}
	return &Table{Rec: out, Manifest: chain[0]}, nil
}
