package delta

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
)

// nextEpoch is the epoch the next rows belong to, when it can be known before their barrier:
// one after the last barrier, or after the restored epoch at the start of a checkpointed run.
func (w *StreamWriter) nextEpoch() (uint64, bool) {
	if w.sawBarrier {
		return w.lastBarrier + 1, true
	}
	if w.env.Dir != nil {
		return w.env.Committed + 1, true
	}
	return 0, false
}

// mayBeReplay reports whether the rows arriving now may belong to an epoch the table already
// holds; such rows are held in memory until their barrier decides.
func (w *StreamWriter) mayBeReplay() bool {
	if !w.haveTxn {
		return false
	}
	e, known := w.nextEpoch()
	return !known || e <= uint64(w.txn)
}

// write appends rec to the epoch's data files, after any held rows.
func (w *StreamWriter) write(rec arrow.RecordBatch) error {
	if w.ew == nil {
		target := w.cfg.TargetFileSize
		if target == 0 && w.cfg.PropertySize != nil {
			if n, err := w.cfg.PropertySize(w.meta.Configuration["delta.targetFileSize"]); err == nil {
				target = n
			}
		}
		meta := w.meta
		// Each lane collects DefaultRowGroupSize (8 MiB) of Arrow data per row group.
		opts := WriterOptions{TargetFileSize: target, Compression: w.cfg.Compression,
			TruncateTimestamps: w.cfg.TruncateTimestamps, Allocator: w.env.Mem, Now: w.env.Now,
			Context: w.ctx}
		// After an epoch large enough to be spread, the next one is spread from its first
		// batch: waiting for the threshold again would leave the other lanes idle for the
		// first threshold's worth of every epoch.
		threshold := w.laneThreshold
		if w.lastEpochBytes > 2*threshold {
			threshold = 0
		}
		w.ew = NewWriterPool(w.cfg.Writers, threshold, func() (*DataWriter, error) {
			return NewDataWriter(w.table.Store(), meta, opts)
		})
	}
	if err := w.flushHeld(); err != nil {
		return err
	}
	if rec != nil {
		if err := w.ew.Write(rec); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}

func (w *StreamWriter) flushHeld() error {
	held := w.held
	w.held, w.heldBytes = nil, 0
	defer func() {
		for _, h := range held {
			h.Release()
		}
	}()
	for _, h := range held {
		if err := w.ew.Write(h); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	return nil
}

// discardEpoch drops the current epoch's rows: held batches are released and data files
// already written are deleted (they were never committed).
func (w *StreamWriter) discardEpoch() error {
	for _, h := range w.held {
		h.Release()
	}
	w.held, w.heldBytes, w.rows = nil, 0, 0
	if w.ew == nil {
		return nil
	}
	files, err := w.ew.Abort()
	w.ew = nil
	if err != nil {
		return fmt.Errorf("write-delta: delete uncommitted data files: %w", err)
	}
	if files > 0 {
		w.env.Log.Debug("deleted the data files of a discarded epoch", "files", files)
	}
	return nil
}

// endEpoch commits or skips the current epoch as epoch n, in the background when async and
// canCommitAsync allow.
func (w *StreamWriter) endEpoch(ctx context.Context, n uint64, async bool) error {
	if n > math.MaxInt64 {
		return fmt.Errorf("write-delta: epoch %d does not fit a Delta txn version", n)
	}
	// The previous epoch's commit decides whether this one is a replay (w.txn).
	if err := w.settle(ctx, true); err != nil {
		return err
	}
	if w.haveTxn && int64(n) <= w.txn {
		if w.takeover && n > w.ownEpoch {
			return stage.Usagef("write-delta: --flow-takeover: epoch %d of this run is not above the txn version %d that table %s holds for flow %q: "+
				"its rows would be skipped, not written. Take over only with a pipeline whose epochs continue past %d, or write under another --flow",
				n, w.txn, w.cfg.Table, w.flow, w.txn)
		}
		rows := w.rows
		if err := w.discardEpoch(); err != nil {
			return err
		}
		w.skipped++
		w.settled = n
		w.env.Log.Info("epoch already committed to the table: skipped", "epoch", n, "flow", w.flow, "txn_version", w.txn, "rows", rows)
		return nil
	}
	if w.rows == 0 && w.ew == nil && len(w.held) == 0 && w.snap != nil && w.pendMeta == nil && !w.takeover && w.prog == nil {
		// An epoch without rows (an idle source's barrier) makes no Delta commit: the table's
		// txn stays at the last epoch with rows, which a replay compares with as before.
		if err := w.noteEmptyEpoch(); err != nil {
			return err
		}
		w.settled = n
		w.env.Log.Debug("epoch without rows: no Delta commit", "epoch", n)
		return nil
	}
	if w.ew != nil || len(w.held) > 0 {
		if err := w.write(nil); err != nil { // held rows go into the epoch's files
			return err
		}
		w.lastEpochBytes = w.ew.Bytes()
	}
	if err := w.expectFresh(ctx, w.prog); err != nil {
		return err
	}
	if async && w.canCommitAsync() {
		w.commitAsync(ctx, n)
		return nil
	}
	var adds []delta.Add
	if w.ew != nil {
		var err error
		if adds, err = w.ew.Close(); err != nil {
			return fmt.Errorf("write-delta: %w", err)
		}
	}
	rows := w.rows
	err := w.commit(ctx, n, adds, rows, w.prog)
	w.prog = nil
	if w.ew != nil {
		if err != nil {
			w.ew.Abort()
		}
		w.ew = nil
	}
	w.rows = 0
	if errors.Is(err, errSkipAfterJoin) {
		w.settled = n
		return nil
	}
	return err
}
