package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
)

// Consumer-group mode (docs/protocol.md §13). A stream whose schema carries
// codec.SchemaGroup comes from one member of a consumer group (read-kafka --consumer-group):
// its epochs are numbered per member run and never replayed; the progress of each source
// partition is a txn action {appId codec.TxnAppID(flow, partition), version = next − 1} in
// the commit of the partition's rows, conditional on the version the source read
// (delta.CommitRequest.ExpectTxn), so a zombie's commit is refused instead of duplicating
// rows. The flow comes from the stream; the writer keeps no checkpoint, takes no flow lock
// (the members share the flow; the per-partition compare-and-set orders them) and skips
// nothing by epoch number.

// groupSink is the consumer-group state of a StreamWriter.
type groupSink struct {
	on    bool
	info  codec.GroupInfo
	parts map[string]struct{} // source partitions of the current epoch's batches
}

// epochProgress is one epoch's per-partition txns and the versions they expect (nil outside
// group mode).
type epochProgress struct {
	txns   []delta.Txn
	expect map[string]int64
}

// openGroup reads the stream's SchemaGroup; in group mode it checks the table and the
// options against it and takes the flow. It reports whether the stream is a group's.
func (w *StreamWriter) openGroup(env *stage.Env, in *arrow.Schema) (bool, error) {
	g, ok, err := codec.Group(in)
	if err != nil || !ok {
		return false, err
	}
	switch {
	case env.Dir != nil:
		return true, stage.Usagef("write-delta: the input comes from consumer group %s, whose progress is kept in the table's txn actions: run write-delta without --checkpoint (and without $%s)",
			g.Group, stage.EnvCheckpoint)
	case g.Table != w.cfg.Table:
		return true, stage.Usagef("write-delta: the input's consumer group %s keeps its progress in table %s (read-kafka --progress-table), not in %s: give both the same table",
			g.Group, g.Table, w.cfg.Table)
	case w.cfg.Flow != "" && w.cfg.Flow != g.Flow:
		return true, stage.Usagef("write-delta: the input's consumer group %s writes flow %q, not --flow %q: leave --flow out (read-kafka --flow names it)",
			g.Group, g.Flow, w.cfg.Flow)
	case env.Shard.IsShard():
		return true, stage.Usagef("write-delta: the input comes from consumer group %s: write-delta cannot run as a shard of keyby --shards, "+
			"each shard would commit the whole epoch's partition progress with a part of its rows; run write-delta after keyby instead", g.Group)
	case w.cfg.Mode != ModeAppend:
		return true, stage.Usagef("write-delta: --mode %s cannot take a consumer group's input: its members each append their partitions", w.cfg.Mode)
	}
	w.grp = groupSink{on: true, info: g, parts: map[string]struct{}{}}
	w.flow = g.Flow
	env.Log.Info("writing for a consumer group", "group", g.Group, "flow", g.Flow, "table", w.cfg.Table)
	return true, nil
}

// notePartition records the source partition of a data batch in group mode; an untagged
// batch is an error (its rows would have no progress to commit with).
func (w *StreamWriter) notePartition(rec arrow.RecordBatch) error {
	name, ok := codec.BatchPartition(rec)
	if !ok {
		return errors.New("write-delta: a batch of a consumer group's stream names no source partition (streamkit.partition): its rows cannot be committed with their partition's progress")
	}
	if _, seen := w.grp.parts[name]; !seen {
		w.grp.parts[name] = struct{}{}
	}
	return nil
}

// groupProgress turns barrier n's streamkit.offsets into the epoch's txns; every partition
// whose rows the epoch holds must be listed.
func (w *StreamWriter) groupProgress(n uint64) (*epochProgress, error) {
	m, err := codec.ParseOffsets(w.env.BarrierOffsets)
	if err != nil {
		return nil, fmt.Errorf("write-delta: epoch %d: %w", n, err)
	}
	var missing []string
	for name := range w.grp.parts {
		if _, ok := m[name]; !ok {
			missing = append(missing, name)
		}
	}
	clear(w.grp.parts)
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("write-delta: epoch %d holds rows of source partitions %s, but its barrier carries no progress for them: not committed",
			n, strings.Join(missing, ", "))
	}
	if len(m) == 0 {
		return nil, nil
	}
	p := &epochProgress{expect: make(map[string]int64, len(m))}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e := m[name]
		app := codec.TxnAppID(w.flow, name)
		p.txns = append(p.txns, delta.Txn{AppID: app, Version: e.Next - 1})
		p.expect[app] = delta.NoTxn
		if e.Txn != nil {
			p.expect[app] = *e.Txn
		}
	}
	return p, nil
}

// zombieError explains a group commit the table refused: another member committed one of
// the epoch's partitions since this member read it.
func (w *StreamWriter) zombieError(ce *delta.ConflictError, n uint64) error {
	return fmt.Errorf("write-delta: table %s: epoch %d is not committed: %v. The partition moved to another member of consumer group %s, "+
		"which committed it since this member read it (this one is a zombie: paused or cut off past its session timeout); "+
		"this member's rows of the epoch are dropped and it stops: restart it to rejoin the group",
		w.cfg.Table, n, ce.Detail, w.grp.info.Group)
}

// expectFresh brings the read snapshot up to date when it does not hold the txn versions that
// the source expects for the epoch's partitions (prog.expect): a partition that moved here was
// committed by its previous owner after this sink last read the table (a member that just
// joined, or one that has not committed since), and the compare-and-set must look at the table
// as the source read it at the assignment, not at an older version of it; otherwise every
// first commit after a move would be refused as a zombie's. A zombie's expectations are not met
// by the newer snapshot either, and its commit is refused as before (docs/protocol.md §13). A
// metadata change meanwhile is an error, as for a conflicting overwrite.
func (w *StreamWriter) expectFresh(ctx context.Context, prog *epochProgress) error {
	if prog == nil || w.snap == nil || expectMet(w.snap, prog.expect) {
		return nil
	}
	ns, err := w.snap.Update(ctx)
	if err != nil {
		return fmt.Errorf("write-delta: %w", err)
	}
	if ns.Metadata().SchemaString != w.meta.SchemaString || !slices.Equal(ns.PartitionColumns(), w.meta.PartitionColumns) {
		return fmt.Errorf("write-delta: table %s: its metadata changed concurrently; restart write-delta to rejoin the group", w.cfg.Table)
	}
	w.snap = ns
	return nil
}

// expectMet reports whether s holds exactly the txn versions of expect (delta.NoTxn: none).
func expectMet(s *delta.Snapshot, expect map[string]int64) bool {
	for app, want := range expect {
		have, ok := s.TxnVersion(app)
		if !ok {
			have = delta.NoTxn
		}
		if have != want {
			return false
		}
	}
	return true
}
