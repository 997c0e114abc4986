package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/streamkit/streamkit/delta"
)

// pendingCommit is an epoch committing in the background: its lanes finish their files, then
// the Delta commit is attempted.
type pendingCommit struct {
	n        uint64
	ew       *WriterPool
	rows     int64
	creating bool           // the commit creates the table
	prog     *epochProgress // group mode: the epoch's per-partition txns
	start    time.Time
	done     chan struct{} // closed when adds, res, err and cause are set
	adds     []delta.Add
	res      *delta.CommitResult
	err      error // as reported
	cause    error // the commit's own error
}

// Durable switches the writer to background commits (stage.AsyncSink): Barrier(n) hands
// epoch n to a goroutine that closes its files and commits it while the next epoch's rows are
// encoded. Only appends (the first one may create the table) whose metadata this run does not
// change go to the background; --merge-schema changes, overwrite and a flow takeover's first
// commit stay synchronous (their retries read and change the writer's snapshot), and a
// creation that loses to another writer is completed synchronously by Settle. What
// overlaps is the tail of an epoch (its last row groups, fsync, the commit) with the start of
// the next; memory then holds up to two epochs' row-group buffers.
func (w *StreamWriter) Durable() <-chan struct{} {
	if w.durable == nil {
		w.durable = make(chan struct{}, 1)
	}
	w.async = true
	return w.durable
}

// Settle completes the background commit if it finished (or, with wait, once it finishes)
// and returns the newest epoch durable in the table that it did not return before (0: none),
// or the commit's error; the data files of a failed commit are deleted.
func (w *StreamWriter) Settle(ctx context.Context, wait bool) (uint64, error) {
	if err := w.settle(ctx, wait); err != nil {
		return 0, err
	}
	if w.settled > w.reported {
		w.reported = w.settled
		return w.reported, nil
	}
	return 0, nil
}

func (w *StreamWriter) settle(ctx context.Context, wait bool) error {
	p := w.pending
	if p == nil {
		return nil
	}
	if wait {
		<-p.done
	} else {
		select {
		case <-p.done:
		default:
			return nil
		}
	}
	w.pending = nil
	var ce *delta.ConflictError
	if p.creating && errors.As(p.cause, &ce) && ce.Kind == delta.ConflictMetadata {
		// Another writer created the table first: the synchronous path joins it (or skips
		// the epoch if that table already holds it for this flow) with the files written.
		err := w.commit(ctx, p.n, p.adds, p.rows, p.prog)
		if err != nil {
			p.ew.Abort()
		}
		if errors.Is(err, errSkipAfterJoin) {
			w.settled = p.n
			return nil
		}
		return err
	}
	if p.err != nil {
		p.ew.Abort()
		return p.err
	}
	return w.committedEpoch(ctx, p.n, p.res, p.rows, len(p.adds), p.start)
}

// canCommitAsync reports whether the current epoch may commit in the background: a plain
// append of files (creating the table if there is none yet), with nothing a retry must
// change. A creation that loses to another writer is retried synchronously by settle.
func (w *StreamWriter) canCommitAsync() bool {
	return w.async && w.ew != nil && (w.snap != nil || w.createMeta != nil) && w.pendMeta == nil &&
		w.cfg.Mode == ModeAppend && !w.takeover
}

// commitAsync hands the current epoch (its lanes, held rows already written) to a background
// commit as epoch n.
func (w *StreamWriter) commitAsync(ctx context.Context, n uint64) {
	p := &pendingCommit{n: n, ew: w.ew, rows: w.rows, creating: w.snap == nil, prog: w.prog, start: time.Now(), done: make(chan struct{})}
	w.ew, w.rows, w.pending, w.prog = nil, 0, p, nil
	req := w.commitRequest(n, p.rows, p.prog)
	go func() {
		defer func() {
			close(p.done)
			select {
			case w.durable <- struct{}{}:
			default:
			}
		}()
		if p.adds, p.err = p.ew.Close(); p.err != nil {
			p.err = fmt.Errorf("write-delta: epoch %d: %w", n, p.err)
			return
		}
		setAdds(&req, p.adds, p.rows, 0)
		if p.err = w.lockLost(); p.err != nil {
			return
		}
		if p.res, p.cause = w.table.Commit(ctx, req); p.cause != nil {
			p.err = w.commitError(p.cause, n)
		}
	}()
}

// commit writes epoch n as one Delta commit (with prog's per-partition txns in group mode),
// creating the table or evolving its metadata when needed, and retries conflicts that can be
// resolved without rewriting data.
func (w *StreamWriter) commit(ctx context.Context, n uint64, adds []delta.Add, rows int64, prog *epochProgress) error {
	start := time.Now()
	root := w.cfg.Table
	overwrite := w.cfg.Mode == ModeOverwrite && len(adds) > 0
	for attempt := 1; ; attempt++ {
		req := w.commitRequest(n, rows, prog)
		removed := 0
		if overwrite {
			req.Mode = delta.Overwrite
			if w.snap != nil {
				removed = w.snap.NumFiles()
			}
		}
		setAdds(&req, adds, rows, removed)
		creating := w.snap == nil
		if err := w.lockLost(); err != nil {
			return err
		}
		res, err := w.table.Commit(ctx, req)
		if err == nil {
			res.Attempts += attempt - 1
			return w.committedEpoch(ctx, n, res, rows, len(adds), start)
		}
		var ce *delta.ConflictError
		if errors.As(err, &ce) {
			switch {
			case creating && ce.Kind == delta.ConflictMetadata:
				// Another writer created the table first (e.g. several flows starting at once):
				// append to it if it has exactly the schema and partitioning our files were
				// written for.
				if jerr := w.joinCreatedTable(ctx); jerr != nil {
					return jerr
				}
				if w.haveTxn && int64(n) <= w.txn {
					w.skipped++
					w.env.Log.Info("epoch already committed to the table: skipped", "epoch", n, "flow", w.flow)
					return errSkipAfterJoin
				}
				continue
			case overwrite && (ce.Kind == delta.ConflictAppend || ce.Kind == delta.ConflictDelete) && attempt < 20:
				ns, uerr := w.snap.Update(ctx)
				if uerr != nil {
					return fmt.Errorf("write-delta: %w", uerr)
				}
				if ns.Metadata().SchemaString != w.meta.SchemaString || !slices.Equal(ns.PartitionColumns(), w.meta.PartitionColumns) {
					return fmt.Errorf("write-delta: table %s: its metadata changed concurrently (%v); restart write-delta: the epoch will be replayed", root, err)
				}
				w.snap = ns
				continue
			}
		}
		return w.commitError(err, n)
	}
}

// commitRequest is the commit of epoch n with rows rows, before its add actions and metrics
// (setAdds): with the table's protocol and metadata when it creates the table or changes them.
// In group mode (prog not nil) it carries the per-partition txns and their expected versions
// instead of the flow's txn.
func (w *StreamWriter) commitRequest(n uint64, rows int64, prog *epochProgress) delta.CommitRequest {
	outputMode := "Append"
	if w.cfg.Mode == ModeOverwrite {
		outputMode = "Complete"
	}
	req := delta.CommitRequest{
		Read:                w.snap,
		Txn:                 &delta.Txn{AppID: w.flow, Version: int64(n)},
		Operation:           "STREAMING UPDATE",
		OperationParameters: map[string]string{"outputMode": outputMode, "queryId": w.flow, "epochId": strconv.FormatUint(n, 10)},
	}
	if prog != nil {
		req.Txn, req.Txns, req.ExpectTxn = nil, prog.txns, prog.expect
	}
	if w.snap == nil {
		req.Protocol, req.Metadata = w.createProto, w.createMeta
	} else if w.pendMeta != nil {
		req.Protocol, req.Metadata = w.pendProto, w.pendMeta
	}
	return req
}

// setAdds puts the epoch's add actions into req with the operation metrics Spark records for a
// streaming update.
func setAdds(req *delta.CommitRequest, adds []delta.Add, rows int64, removed int) {
	var bytes int64
	for _, a := range adds {
		bytes += a.Size
	}
	req.Adds = adds
	req.OperationMetrics = map[string]string{
		"numAddedFiles":   strconv.Itoa(len(adds)),
		"numRemovedFiles": strconv.Itoa(removed),
		"numOutputRows":   strconv.FormatInt(rows, 10),
		"numOutputBytes":  strconv.FormatInt(bytes, 10),
	}
}

// commitError explains a failed commit of epoch n that is not retried.
func (w *StreamWriter) commitError(err error, n uint64) error {
	var ce *delta.ConflictError
	if errors.As(err, &ce) {
		if ce.Kind == delta.ConflictTransaction && ce.AppID != "" && w.grp.on {
			return w.zombieError(ce, n)
		}
		if ce.Kind == delta.ConflictTransaction {
			return fmt.Errorf("write-delta: table %s: %v: only one write-delta may run per flow (%s)", w.cfg.Table, err, w.flow)
		}
		if ce.Kind == delta.ConflictDomain {
			return fmt.Errorf("write-delta: table %s: epoch %d not committed: %w", w.cfg.Table, n, err)
		}
		return fmt.Errorf("write-delta: table %s: %w; another writer changed the table's metadata or protocol: restart write-delta to continue (epoch %d is replayed, nothing is lost)", w.cfg.Table, err, n)
	}
	return fmt.Errorf("write-delta: epoch %d: %w", n, err)
}

// committedEpoch records the successful commit res of epoch n (rows rows in files files,
// started at start).
func (w *StreamWriter) committedEpoch(ctx context.Context, n uint64, res *delta.CommitResult, rows int64, files int, start time.Time) error {
	if err := w.committedAt(ctx, res); err != nil {
		return err
	}
	if !w.grp.on { // a group's epochs are not the flow's txn (stream_group.go)
		w.txn, w.haveTxn, w.takeover = int64(n), true, false
	}
	w.settled = n
	if w.rec.TxnBeforeEmpty != nil {
		w.rec.TxnBeforeEmpty = nil
		if err := w.writeFlowFile(); err != nil {
			return err
		}
	}
	w.committed++
	w.rowsTotal += rows
	d := time.Since(start)
	w.commitTime += d
	w.env.Log.Debug("committed epoch", "epoch", n, "version", res.Version, "rows", rows, "files", files,
		"attempts", res.Attempts, "ms", d.Milliseconds())
	return nil
}

// errSkipAfterJoin is returned by commit when the table another writer created already holds
// the epoch for our flow; endEpoch treats it as a skip (the data files are deleted).
var errSkipAfterJoin = errors.New("epoch already committed")

// lockLost is the error that stops the writer once its flow lock is lost (on a bucket: its
// lease could not be renewed in time or was taken over), so that two writers never commit
// one flow; nil while the lock is held (always on a local disk, where it is a flock).
func (w *StreamWriter) lockLost() error {
	if err := w.lock.Check(); err != nil {
		return fmt.Errorf("write-delta: table %s: the lock of flow %q was lost (%v); not committing (restart write-delta: the epoch is replayed)", w.cfg.Table, w.flow, err)
	}
	return nil
}
