package delta

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// FlowFile is the file in write-delta's checkpoint directory that records the flow id (and the
// table) on first use, as a checksummed JSON envelope (docs/protocol.md §7.1).
const FlowFile = "write-delta.json"

// FlowFileRecord is the content of FlowFile.
type FlowFileRecord struct {
	Flow    string    `json:"flow"`
	Table   string    `json:"table"`
	Created time.Time `json:"created"`
	// ID identifies the checkpoint directory (a UUID made on first use): the table's flow
	// lock records which checkpoint owns the flow.
	ID string `json:"id,omitempty"`
	// TableID is the table's metaData.id once the flow committed to it: a table replaced
	// under the same path is detected.
	TableID string `json:"table_id,omitempty"`
	// TxnBeforeEmpty is set while the newest epochs committed here carried no rows and so
	// made no Delta commit: the flow's txn version in the table when the first of them was
	// skipped (-1: the flow had none). The next Delta commit clears it. A restart then
	// expects the table's txn at this version, not at the newest committed epoch.
	TxnBeforeEmpty *int64 `json:"txn_before_empty,omitempty"`
}

// resolveFlow sets w.flow: the FlowFile of the checkpoint directory, else --flow, else a new
// UUID (stored in the checkpoint directory when there is one). In a child of keyby --shards
// ($STREAMKIT_SHARD = i), --flow NAME becomes NAME-shard-i, so every shard commits its own txn
// (a generated flow differs per shard anyway: each shard has its own checkpoint directory).
func (w *StreamWriter) resolveFlow(env *stage.Env) error {
	if shard := env.Shard.Name(); shard != "" && w.cfg.Flow != "" {
		// A child of keyby --shards N: each shard is its own flow (an append flow of the table).
		w.cfg.Flow += "-shard-" + shard
	}
	if env.Dir == nil {
		w.flow = w.cfg.Flow
		if w.flow == "" {
			w.flow = uuid.NewString()
			env.Log.Warn("no checkpoint directory: this run commits under a new flow id, so a restart cannot be exactly-once (use --checkpoint or $"+stage.EnvCheckpoint+")",
				"flow", w.flow)
		}
		return nil
	}
	var rec FlowFileRecord
	err := state.ReadJSONAt(env.Dir.Store(), FlowFile, &rec)
	switch {
	case err == nil:
		if w.cfg.Flow != "" && w.cfg.Flow != rec.Flow {
			return stage.Usagef("write-delta: checkpoint %s belongs to flow %q, not --flow %q; use the original flow id or a new checkpoint directory",
				env.Dir.Path, rec.Flow, w.cfg.Flow)
		}
		if rec.Table != w.cfg.Table {
			return stage.Usagef("write-delta: checkpoint %s belongs to table %s, not %s; use a new checkpoint directory",
				env.Dir.Path, rec.Table, w.cfg.Table)
		}
		w.flow, w.rec = rec.Flow, rec
		if rec.ID == "" { // written by an earlier streamkit: give the checkpoint its identity
			w.rec.ID = uuid.NewString()
			return state.WriteJSONAt(env.Dir.Store(), FlowFile, w.rec)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		c, err := env.Dir.Committed()
		if err != nil {
			return err
		}
		if c > 0 && w.cfg.Flow == "" {
			return fmt.Errorf("write-delta: checkpoint %s has committed epochs but no %s: pass the original flow id with --flow", env.Dir.Path, FlowFile)
		}
		w.flow = w.cfg.Flow
		if w.flow == "" {
			w.flow = uuid.NewString()
		}
		w.rec = FlowFileRecord{Flow: w.flow, Table: w.cfg.Table, Created: time.Now().UTC(), ID: uuid.NewString()}
		w.fresh = true
		return state.WriteJSONAt(env.Dir.Store(), FlowFile, w.rec)
	default:
		return err
	}
}

// noteEmptyEpoch records, before the commit marker of the first of a run of epochs without
// rows, the txn version the table keeps for the flow meanwhile (FlowFileRecord.TxnBeforeEmpty).
func (w *StreamWriter) noteEmptyEpoch() error {
	if w.env.Dir == nil || w.rec.TxnBeforeEmpty != nil {
		return nil
	}
	v := int64(-1)
	if w.haveTxn {
		v = w.txn
	}
	w.rec.TxnBeforeEmpty = &v
	return w.writeFlowFile()
}

// writeFlowFile rewrites FlowFile from w.rec.
func (w *StreamWriter) writeFlowFile() error {
	if err := state.WriteJSONAt(w.env.Dir.Store(), FlowFile, w.rec); err != nil {
		return fmt.Errorf("write-delta: record the flow in %s: %w", w.env.Dir.Path, err)
	}
	return nil
}

// tableHoldsCommitted reports whether the table's txn for the flow covers what the checkpoint
// records as committed: the newest committed epoch, or, after epochs without rows, the txn
// version before them (a commit after them leaves the txn higher, never lower).
func (w *StreamWriter) tableHoldsCommitted() bool {
	if p := w.rec.TxnBeforeEmpty; p != nil {
		return *p < 0 && w.snap != nil || w.haveTxn && w.txn >= *p
	}
	return w.haveTxn && uint64(w.txn) >= w.ownEpoch
}

// One writer per flow. Open takes the flow's lock in the table (LockFlow:
// <table>/_streamkit/flows/<flow>.lock, an flock held until Close or process exit), so a second
// write-delta (or backfill) of the same flow fails at once naming the holder. The lock file also
// records which checkpoint directory owns the flow (its FlowFile id): a second checkpoint
// directory — or a run without one — using the same flow would skip the owner's epochs (or
// have its own skipped), so it is refused unless --flow-takeover moves the flow to it (the run taking over then refuses
// epochs up to the table's txn version instead of skipping them). The
// table's metaData.id is kept in both the lock file and the checkpoint: a table replaced under
// the same path is not mistaken for the one the checkpoint wrote.

// checkOwner refuses a run whose checkpoint does not own the flow (see above) and binds the
// flow to this run's checkpoint when it is free.
func (w *StreamWriter) checkOwner(env *stage.Env) error {
	root := w.cfg.Table
	tableID := ""
	if w.snap != nil {
		tableID = w.snap.Metadata().ID
	}
	if w.rec.TableID != "" && tableID != "" && w.rec.TableID != tableID {
		return fmt.Errorf("write-delta: checkpoint %s wrote to table %s with id %s, but the table there now has id %s: "+
			"the table was replaced; use a new checkpoint directory (and restart the pipeline's sources) to write the new table",
			env.Dir.Path, root, w.rec.TableID, tableID)
	}
	prev := w.lock.Prev
	owner := prev.Owner
	if owner != nil && prev.TableID != "" && prev.TableID != tableID {
		owner = nil // bound for a table that is gone
	}
	mine := w.rec.ID
	if owner != nil && env.Dir != nil && w.fresh && owner.Checkpoint == env.Dir.Path {
		// The owning directory lost its FlowFile and the flow was given again with --flow
		// (resolveFlow requires it when the directory has committed epochs): same checkpoint.
		if c, err := env.Dir.Committed(); err == nil && c > 0 {
			owner = &delta.FlowOwner{Checkpoint: env.Dir.Path, CheckpointID: mine, Since: time.Now().UTC()}
			if err := w.lock.Bind("", owner); err != nil {
				return fmt.Errorf("write-delta: %w", err)
			}
		}
	}
	here := "a run without a checkpoint directory"
	if env.Dir != nil {
		here = "checkpoint " + env.Dir.Path
	}
	committed := "no epoch yet"
	if w.haveTxn {
		committed = fmt.Sprintf("epochs up to %d", w.txn)
	}
	switch {
	case owner != nil && owner.CheckpointID != mine && !w.cfg.FlowTakeover:
		return stage.Usagef("write-delta: flow %q of table %s belongs to checkpoint %s (bound %s; the table holds %s for it), not to %s: "+
			"two checkpoints of one flow skip each other's epochs. Use the original checkpoint, another --flow, "+
			"or --flow-takeover to move the flow to %s (its epochs must then continue past the table's txn version)",
			w.flow, root, owner.Checkpoint, owner.Since.UTC().Format(time.RFC3339), committed, here, here)
	case owner == nil && w.fresh && w.haveTxn && !w.cfg.FlowTakeover:
		return stage.Usagef("write-delta: table %s already holds %s for flow %q, committed by another checkpoint or run, but %s is new: "+
			"its epochs would be skipped up to %d. Use the flow's original checkpoint, another --flow, or --flow-takeover to continue the flow from this checkpoint",
			root, committed, w.flow, here, w.txn)
	case owner == nil && env.Dir == nil && w.haveTxn && !w.cfg.FlowTakeover:
		return stage.Usagef("write-delta: flow %q already committed epoch %d to table %s; without --checkpoint the epochs restart at 1 "+
			"and up to %d would be skipped (their rows lost). Give the flow's checkpoint with --checkpoint, or another --flow name",
			w.flow, w.txn, root, w.txn)
	}
	// Taking over a flow that holds epochs: this run's epochs up to the table's txn version
	// are not replays of its own commits, so endEpoch refuses them instead of skipping.
	w.takeover = w.cfg.FlowTakeover && w.haveTxn &&
		((owner != nil && owner.CheckpointID != mine) || (owner == nil && (w.fresh || env.Dir == nil)))
	if owner != nil && owner.CheckpointID != mine {
		env.Log.Warn("--flow-takeover: the flow moves to this run", "flow", w.flow, "from_checkpoint", owner.Checkpoint, "to", here)
	}
	var bind *delta.FlowOwner
	if mine != "" && (owner == nil || owner.CheckpointID != mine) {
		bind = &delta.FlowOwner{Checkpoint: env.Dir.Path, CheckpointID: mine, Since: time.Now().UTC()}
	} else if mine == "" && owner != nil {
		bind = &delta.FlowOwner{} // taken over by a run without checkpoint: the flow is unowned
	}
	if bind != nil || prev.TableID != tableID {
		if err := w.lock.Bind(tableID, bind); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}

// bindTable records the table's metaData.id in the checkpoint's FlowFile and in the flow's lock
// file after the first commit of a run that created the table or ran before the id was kept.
func (w *StreamWriter) bindTable(tableID string) error {
	if w.env.Dir != nil && w.rec.ID != "" && w.rec.TableID != tableID {
		w.rec.TableID = tableID
		if err := w.writeFlowFile(); err != nil {
			return err
		}
	}
	if w.lock != nil && w.lock.Record().TableID != tableID {
		if err := w.lock.Bind(tableID, nil); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}
