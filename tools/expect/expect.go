// Package expect is the `streamkit expect` tool: Lakeflow's data-quality expectations over a
// stream (issue #21). Each expectation is a name and a Spark SQL predicate (package expr)
// evaluated, vectorized, over every row; --expect keeps violating rows, --expect-or-drop drops
// them, --expect-or-fail fails the run before the epoch commits. Per epoch and in total, the
// passed and failed rows of each expectation are counted, kept in the stage's checkpoint
// exactly once (a keyed state by expectation name, restored after kill -9), shown in the
// progress line and by state-dump, with the names of Lakeflow's event log
// (flow_progress.data_quality: expectations[name, dataset, passed_records, failed_records],
// dropped_records).
//
// Semantics, following the Lakeflow expectations documentation
// (docs.databricks.com/aws/en/dlt/expectations: "When a record fails this condition, the
// expectation is triggered"; names "must be unique for a given dataset"):
//
//   - A row violates an expectation when its predicate is false. A NULL result is no
//     violation: it counts as passed, as a SQL CHECK constraint passes on UNKNOWN, and so
//     failed_records equals SQL's COUNT(*) FILTER (WHERE NOT predicate). Write
//     `x IS NOT NULL AND …` to fail rows with nulls.
//   - Every expectation is evaluated over every input row, also over rows another
//     expectation drops, so each reports its own counts over the same rows (as Lakeflow's
//     expect_all reports each constraint's metrics); passed + failed = the rows read.
//     dropped_records counts the rows dropped by at least one --expect-or-drop.
//   - --expect-or-fail stops at the first violating row of a batch (the earliest row; of two
//     expectations on one row, the first given), naming the expectation, the row's source
//     position and the values of the columns the predicate references. The stage ends without
//     forwarding the epoch's barrier or an end-of-stream marker, so the sink sees a truncated
//     stream and commits nothing of the epoch (docs/protocol.md §3).
package expect

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/rowpos"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/sink/sideoutput"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
)

// Config are expect's options.
type Config struct {
	// Expectations in command-line order; at least one, names unique.
	Expectations []Expectation
	// Dataset names the data set in the counters (Lakeflow's dataset); default the stage name.
	Dataset string
	// DroppedOutput is a file for the rows --expect-or-drop drops, with a last column
	// _failed_expectations (the names of the drop expectations each row failed);
	// sink/sideoutput: .arrow Arrow IPC stream, .ndjson JSON lines. Empty: they are only
	// counted.
	DroppedOutput string
}

// ColFailed is the column of the --dropped-output rows naming the expectations they failed.
const ColFailed = "_failed_expectations"

// Expect is the expect operator.
type Expect struct {
	cfg   Config
	env   *stage.Env
	progs []*expr.Program
	cnt   []counter // per expectation, in cfg order
	// dropped counts the rows dropped by at least one expectation: in total and this epoch.
	dropped, epochDropped atomic.Int64
	last                  atomic.Pointer[epochReport] // the last completed epoch's counts
	store                 *state.Store[value]
	next                  uint64 // the epoch the rows being processed belong to; 0 unknown
	rows                  *rowpos.Tracker

	fails   [][]bool // per expectation: the rows of the batch that violate it
	keep    []bool   // the rows no drop expectation drops
	side    *sideoutput.File
	sidePth string
	sideIn  *arrow.Schema // the side output's schema: the input's plus ColFailed
}

// counter is the live counts of one expectation, read by the progress reporter.
type counter struct {
	passed, failed           atomic.Int64 // since the first epoch (restored)
	epochPassed, epochFailed atomic.Int64 // in the epoch being processed
}

// New validates cfg: at least one expectation, unique names, a known --dropped-output
// extension. Errors are usage errors.
func New(cfg Config) (*Expect, error) {
	if err := checkNames(cfg.Expectations); err != nil {
		return nil, err
	}
	if cfg.DroppedOutput != "" {
		if err := sideoutput.Check("expect: --dropped-output", cfg.DroppedOutput); err != nil {
			return nil, err
		}
		if !hasAction(cfg.Expectations, Drop) {
			return nil, stage.Usagef("expect: --dropped-output keeps the rows --expect-or-drop drops, and no --expect-or-drop is given")
		}
	}
	return &Expect{cfg: cfg, cnt: make([]counter, len(cfg.Expectations)), store: state.NewStore[value](valueCodec{})}, nil
}

func hasAction(es []Expectation, a Action) bool {
	for _, e := range es {
		if e.Action == a {
			return true
		}
	}
	return false
}

// ResolveState returns the options that shape expect's state: the expectations (a restart
// with other names, conditions or actions is refused, as their counters would mix) and the
// dataset. "key" names the state's key column for state-dump.
func (x *Expect) ResolveState(*arrow.Schema) (map[string]string, error) {
	lines := make([]string, len(x.cfg.Expectations))
	for i, e := range x.cfg.Expectations {
		lines[i] = fmt.Sprintf("%s %s: %s", e.Action, e.Name, e.Predicate)
	}
	return map[string]string{"key": "name", "expectations": strings.Join(lines, "\n"), "dataset": x.cfg.Dataset}, nil
}

// Open type-checks every predicate against the input schema (a type error is a usage error,
// before the first row) and restores the counters of the committed epoch.
func (x *Expect) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	x.env = env
	x.progs = make([]*expr.Program, len(x.cfg.Expectations))
	x.fails = make([][]bool, len(x.cfg.Expectations))
	for i, e := range x.cfg.Expectations {
		p, err := expr.CompilePredicate(e.Predicate, in, expr.Options{Mem: env.Mem, Now: env.Now})
		if err != nil {
			return nil, stage.Usagef("expect: %s %s: %v", e.Action.Flag(), e.Name, err)
		}
		x.progs[i] = p
	}
	var ex extra
	x.next = rowpos.FirstEpoch(env.Committed, env.Dir != nil, codec.Info(in).Replayable)
	x.rows = rowpos.New(in, x.next)
	if env.Dir != nil {
		env.MarkStateful()
		if env.Committed > 0 {
			man, err := x.store.Restore(env.Mem, env.Dir.Path, env.Committed)
			if err != nil {
				return nil, err
			}
			if len(man.Extra) > 0 {
				if err := json.Unmarshal(man.Extra, &ex); err != nil {
					return nil, fmt.Errorf("expect: restore epoch %d: %w", env.Committed, err)
				}
			}
			for i, e := range x.cfg.Expectations {
				if v, ok := x.store.GetBytes(key(e.Name)); ok {
					x.cnt[i].passed.Store(v.Passed)
					x.cnt[i].failed.Store(v.Failed)
				}
			}
			x.dropped.Store(ex.DroppedRecords)
			if ex.Epoch != nil {
				x.last.Store(&epochReport{Epoch: env.Committed, DataQuality: *ex.Epoch})
			}
		}
	}
	if x.cfg.DroppedOutput != "" {
		if err := x.openSide(in, ex.Dropped); err != nil {
			return nil, err
		}
	}
	env.Stats.SetDataQuality(x)
	return in, nil
}

// openSide opens (or, restarting from a checkpoint, resumes) the --dropped-output file: at the
// mark recorded with the committed epoch, else at the size it had when this checkpoint first
// opened it (sideoutput.FirstMark), so that it holds each dropped row of the committed epochs
// exactly once.
func (x *Expect) openSide(in *arrow.Schema, mark *sideoutput.Mark) error {
	const flag = "expect: --dropped-output"
	p, err := filepath.Abs(sideoutput.Path(x.cfg.DroppedOutput, x.env.Shard.Name()))
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	x.sidePth = p
	fields := append(append([]arrow.Field(nil), in.Fields()...), arrow.Field{Name: ColFailed, Type: arrow.ListOf(arrow.BinaryTypes.String)})
	md := in.Metadata()
	x.sideIn = arrow.NewSchema(fields, &md)
	var ckpt storage.Store
	if x.env.Dir != nil {
		ckpt = x.env.Dir.Store()
	}
	x.side, err = sideoutput.Reopen(flag, p, x.sideIn, x.env.Mem, ckpt, sideoutput.StartFile, mark)
	return err
}

// Process evaluates every expectation over rec, counts, fails on an --expect-or-fail
// violation, and emits the rows no --expect-or-drop drops.
func (x *Expect) Process(ctx context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	pos := x.rows.Batch(rec)
	anyDrop := false
	x.keep = growBools(x.keep, n)
	for r := range x.keep {
		x.keep[r] = true
	}
	firstFail, failAt := -1, n
	for i, p := range x.progs {
		e := x.cfg.Expectations[i]
		mask, err := p.Eval(ctx, rec, pos)
		if err != nil {
			return fmt.Errorf("expect: expectation %s: %w", e.Name, err)
		}
		x.fails[i] = growBools(x.fails[i], n)
		failed := violations(mask, x.fails[i])
		mask.Release()
		x.cnt[i].epochFailed.Add(int64(failed))
		x.cnt[i].failed.Add(int64(failed))
		x.cnt[i].epochPassed.Add(int64(n - failed))
		x.cnt[i].passed.Add(int64(n - failed))
		if failed == 0 {
			continue
		}
		switch e.Action {
		case Drop:
			anyDrop = true
			for r, f := range x.fails[i] {
				if f {
					x.keep[r] = false
				}
			}
		case Fail:
			for r := 0; r < failAt; r++ {
				if x.fails[i][r] {
					firstFail, failAt = i, r
					break
				}
			}
		}
	}
	if firstFail >= 0 {
		return x.failure(ctx, rec, pos, firstFail, failAt)
	}
	if !anyDrop {
		rec.Retain()
		return emit(rec)
	}
	keep := boolArray(x.env, x.keep)
	defer keep.Release()
	kept := 0
	for _, k := range x.keep {
		if k {
			kept++
		}
	}
	drop := n - kept
	x.dropped.Add(int64(drop))
	x.epochDropped.Add(int64(drop))
	x.env.Stats.Reject(stage.ExpectDroppedRow, int64(drop))
	fctx := compute.WithAllocator(ctx, x.env.Mem)
	if x.side != nil {
		if err := x.writeDropped(fctx, rec); err != nil {
			return err
		}
	}
	if kept == 0 {
		return nil
	}
	out, err := expr.FilterBatch(fctx, rec, keep)
	if err != nil {
		return fmt.Errorf("expect: filter: %w", err)
	}
	return emit(codec.CarryMetadata(out, rec))
}

// violations sets fails[r] for the rows where mask (a boolean array, or an all-null one of a
// NULL predicate) is false and returns how many there are; null is no violation.
func violations(mask arrow.Array, fails []bool) int {
	b, ok := mask.(*array.Boolean)
	if !ok {
		clear(fails)
		return 0
	}
	n := 0
	if b.NullN() == 0 {
		for r := range fails {
			f := !b.Value(r)
			fails[r] = f
			if f {
				n++
			}
		}
		return n
	}
	for r := range fails {
		f := b.IsValid(r) && !b.Value(r)
		fails[r] = f
		if f {
			n++
		}
	}
	return n
}

// writeDropped writes the dropped rows of rec with the names of the drop expectations each
// failed to the --dropped-output file.
func (x *Expect) writeDropped(ctx context.Context, rec arrow.RecordBatch) error {
	dropMask := make([]bool, len(x.keep))
	for r, k := range x.keep {
		dropMask[r] = !k
	}
	m := boolArray(x.env, dropMask)
	defer m.Release()
	rows, err := expr.FilterBatch(ctx, rec, m)
	if err != nil {
		return fmt.Errorf("expect: filter: %w", err)
	}
	defer rows.Release()
	lb := array.NewListBuilder(x.env.Mem, arrow.BinaryTypes.String)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for r, k := range x.keep {
		if k {
			continue
		}
		lb.Append(true)
		for i, e := range x.cfg.Expectations {
			if e.Action == Drop && x.fails[i][r] {
				vb.Append(e.Name)
			}
		}
	}
	names := lb.NewArray()
	defer names.Release()
	cols := append(append([]arrow.Array(nil), rows.Columns()...), names)
	out := array.NewRecordBatch(x.sideIn, cols, rows.NumRows())
	defer out.Release()
	if err := x.side.Write(out); err != nil {
		return fmt.Errorf("expect: --dropped-output: %w", err)
	}
	return nil
}

// Watermark passes watermarks on (the stage forwards them).
func (x *Expect) Watermark(context.Context, time.Time, stage.Emit) error { return nil }

// Barrier closes the epoch's counts, syncs the --dropped-output file and checkpoints the
// counters of epoch n (with the file's size, so a restart resumes it exactly there).
func (x *Expect) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	rep := &epochReport{Epoch: n, DataQuality: x.report(true)}
	for i := range x.cnt {
		x.cnt[i].epochPassed.Store(0)
		x.cnt[i].epochFailed.Store(0)
	}
	x.epochDropped.Store(0)
	x.last.Store(rep)
	x.next = n + 1
	x.rows.Barrier(n)
	ex := extra{DroppedRecords: x.dropped.Load(), Epoch: &rep.DataQuality}
	if x.side != nil {
		m, err := x.side.Mark(x.sidePth)
		if err != nil {
			return fmt.Errorf("expect: --dropped-output: %w", err)
		}
		ex.Dropped = m
	}
	if x.env.Dir == nil {
		return nil
	}
	for i, e := range x.cfg.Expectations {
		x.store.PutBytes(key(e.Name), value{Action: string(e.Action), Dataset: x.cfg.Dataset,
			Passed: x.cnt[i].passed.Load(), Failed: x.cnt[i].failed.Load()})
	}
	return x.store.Checkpoint(x.env.Mem, x.env.Dir, n, ex)
}

// End logs the totals; nothing is buffered.
func (x *Expect) End(context.Context, codec.EndKind, stage.Emit) error {
	for i, e := range x.cfg.Expectations {
		x.env.Log.Info("expectation", "name", e.Name, "action", string(e.Action),
			"passed_records", x.cnt[i].passed.Load(), "failed_records", x.cnt[i].failed.Load())
	}
	if d := x.dropped.Load(); d > 0 && x.side == nil {
		x.env.Log.Info("rows dropped by --expect-or-drop are counted, not kept; --dropped-output FILE keeps them", "dropped_records", d)
	}
	return nil
}

// Close closes the --dropped-output file.
func (x *Expect) Close() error {
	if x.side != nil {
		return x.side.Close()
	}
	return nil
}

// key is the state key of an expectation: its name, encoded as a string key part.
func key(name string) []byte { return codec.AppendKeyString(nil, name) }

// growBools returns s with length n (contents unspecified), reusing its memory.
func growBools(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}

// boolArray builds a boolean array of v.
func boolArray(env *stage.Env, v []bool) arrow.Array {
	b := array.NewBooleanBuilder(env.Mem)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}
