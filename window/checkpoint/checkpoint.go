// Package checkpoint stores a window.Manager's state in a stage checkpoint directory with the
// same files as state.Store (docs/protocol.md §7.4): per barrier n, state/<n>.changelog.arrow
// with the entries changed since the previous checkpoint (sorted by _key), a full
// state/<n>.snapshot.arrow at the first checkpoint and every SnapshotEvery epochs, then the
// manifest state/<n>.json carrying window.Extra (watermark, counters, spec). state-dump and
// state.Reconstruct read these files like any other operator's.
package checkpoint

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/window"
)

// Store checkpoints one Manager (built with Config.Changelog = true). Not safe for concurrent
// use.
type Store struct {
	// M is the manager whose state is stored.
	M *window.Manager
	// SnapshotEvery: a full snapshot when epoch % SnapshotEvery == 0; default
	// state.DefaultSnapshotEvery (10).
	SnapshotEvery uint64
	haveSnapshot  bool
}

// Checkpoint makes the state of epoch n durable in d: the changelog, a snapshot when due,
// then the manifest (written last, atomically: the epoch exists only once it does). Errors
// name the file.
func (s *Store) Checkpoint(mem memory.Allocator, d *state.Dir, n uint64) error {
	extra, err := s.M.MarshalExtra()
	if err != nil {
		return fmt.Errorf("checkpoint epoch %d: %w", n, err)
	}
	man := state.Manifest{Epoch: n, Extra: extra, Entries: int64(s.M.Stats().Windows)}
	fi, err := writeFile(mem, d, state.EpochName(n)+".changelog.arrow", s.M.StateSchema(), s.M.Changelog)
	if err != nil {
		return err
	}
	man.Changelog = &fi
	every := s.SnapshotEvery
	if every == 0 {
		every = state.DefaultSnapshotEvery
	}
	if !s.haveSnapshot || n%every == 0 {
		fi, err := writeFile(mem, d, state.EpochName(n)+".snapshot.arrow", s.M.StateSchema(), s.M.Snapshot)
		if err != nil {
			return err
		}
		man.Snapshot = &fi
		s.haveSnapshot = true
	}
	return state.WriteManifest(d, man)
}

// writeFile writes the batches produced by gen (which hands over each batch) as the state
// file state/<name> of d.
func writeFile(mem memory.Allocator, d *state.Dir, name string, schema *arrow.Schema, gen func(func(arrow.RecordBatch) error) error) (state.FileInfo, error) {
	return state.WriteStateFile(mem, d, name, schema, func(write func(arrow.RecordBatch) error) error {
		return gen(func(rec arrow.RecordBatch) error {
			defer rec.Release()
			return write(rec)
		})
	})
}

// Restore loads the state as of epoch n from the checkpoint directory at location path into a fresh
// Manager: the newest snapshot ≤ n, the changelogs after it, then the Extra of epoch n.
// n == 0 restores nothing. Every file is verified (size, CRC32C); a gap in the chain, a
// corrupt file or state of other options is an error naming it (state.ErrNoState,
// *state.CorruptError, window.ErrSpec).
func (s *Store) Restore(mem memory.Allocator, path string, n uint64) error {
	if n == 0 {
		return nil
	}
	eps, err := state.Epochs(path, state.StateDir)
	if err != nil {
		return err
	}
	var chain []state.Manifest
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i] > n {
			continue
		}
		m, err := state.ReadManifest(path, eps[i])
		if err != nil {
			return err
		}
		chain = append(chain, m)
		if m.Snapshot != nil {
			break
		}
	}
	if len(chain) == 0 || chain[0].Epoch != n {
		return fmt.Errorf("restore %s epoch %d: %w for the committed epoch (state files deleted?)", path, n, state.ErrNoState)
	}
	base := chain[len(chain)-1]
	if base.Snapshot == nil {
		return fmt.Errorf("restore %s epoch %d: %w: no snapshot at or before it", path, n, state.ErrNoState)
	}
	var x window.Extra
	if err := json.Unmarshal(chain[0].Extra, &x); err != nil {
		return &state.CorruptError{Path: state.Join(path, state.StateDir, state.EpochName(n)+".json"), Reason: "extra: " + err.Error()}
	}
	if err := s.M.RestoreExtra(x); err != nil { // spec first: refuse before reading files
		return err
	}
	if err := s.apply(mem, path, *base.Snapshot); err != nil {
		return err
	}
	for i := len(chain) - 2; i >= 0; i-- {
		if chain[i].Epoch != chain[i+1].Epoch+1 {
			return fmt.Errorf("restore %s: %w for epoch %d", path, state.ErrNoState, chain[i+1].Epoch+1)
		}
		if chain[i].Changelog != nil {
			if err := s.apply(mem, path, *chain[i].Changelog); err != nil {
				return err
			}
		}
	}
	s.haveSnapshot = true
	return nil
}

func (s *Store) apply(mem memory.Allocator, path string, fi state.FileInfo) error {
	r, err := state.OpenStateFile(mem, path, fi)
	if err != nil {
		return err
	}
	defer r.Close()
	p := state.Join(path, state.StateDir, fi.File)
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return &state.CorruptError{Path: p, Reason: err.Error()}
		}
		err = s.M.Restore(rec)
		rec.Release()
		if err != nil {
			return &state.CorruptError{Path: p, Reason: err.Error()}
		}
	}
	return nil
}
