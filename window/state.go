package window

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Columns and metadata of state batches (Changelog, Snapshot, Restore).
const (
	StateOp    = "op"  // "upsert" or "delete"
	StateKey   = "key" // encoded key bytes (KeyCodec)
	StateStart = "window_start"
	StateEnd   = "window_end"
	StateSeq   = "seq"   // count windows: slice number within the key; else 0
	StateN     = "n"     // count windows: records seen for the key; else 0
	StateFired = "fired" // the window was emitted (on_time or late_update) before

	OpUpsert = "upsert"
	OpDelete = "delete"

	// MetaSpec carries the shape of the state (assigner, key paths, aggregates); Restore
	// refuses state written with a different one.
	MetaSpec = "streamkit.window.spec"
	// MetaWatermark carries the watermark tracker's state as JSON (WatermarkState).
	MetaWatermark = "streamkit.window.watermark"
	// MetaStats carries the cumulative counters as JSON.
	MetaStats = "streamkit.window.stats"
)

// Spec describes what shapes the state: assigner, lateness, key paths and aggregates. Two
// managers with equal specs can exchange state.
func (m *Manager) Spec() string {
	var calls []string
	for _, c := range m.aggs.Calls() {
		calls = append(calls, c.String())
	}
	return fmt.Sprintf("%s; lateness=%v; key=%s; aggs=%s", m.asg, m.cfg.AllowedLateness,
		strings.Join(m.codec.Paths(), ","), strings.Join(calls, ", "))
}

// StateSchema returns the schema of state batches: op, key, window_start, window_end, seq, n,
// fired, then the accumulator columns of Aggs.StateFields (all nullable). One row is one open
// (key, window) entry — for count windows one slice of gcd(size, slide) records. The identity
// of a row is (key, window_start, window_end) for time windows, (key, seq) for count windows
// and key for the global window.
func (m *Manager) StateSchema() *arrow.Schema {
	fields := []arrow.Field{
		{Name: StateOp, Type: arrow.BinaryTypes.String},
		{Name: StateKey, Type: arrow.BinaryTypes.Binary},
		{Name: StateStart, Type: timestampUS},
		{Name: StateEnd, Type: timestampUS},
		{Name: StateSeq, Type: arrow.PrimitiveTypes.Int64},
		{Name: StateN, Type: arrow.PrimitiveTypes.Int64},
		{Name: StateFired, Type: arrow.FixedWidthTypes.Boolean},
	}
	for _, f := range m.aggs.StateFields() {
		f.Nullable = true
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil)
}

const stateFixed = 7 // columns before the accumulators

type stateStats struct {
	Records, Late, BadTime, OnTime, LateUpdate, Early int64
}

func (m *Manager) stateMeta() arrow.Metadata {
	wm, _ := json.Marshal(m.wm.State())
	st, _ := json.Marshal(stateStats{m.stats.Records, m.stats.Late, m.stats.BadTime, m.stats.OnTime, m.stats.LateUpdate, m.stats.Early})
	return arrow.NewMetadata([]string{MetaSpec, MetaWatermark, MetaStats}, []string{m.Spec(), string(wm), string(st)})
}

type stateWriter struct {
	m     *Manager
	bld   *array.RecordBuilder
	op    *array.StringBuilder
	key   *array.BinaryBuilder
	start *array.TimestampBuilder
	end   *array.TimestampBuilder
	seq   *array.Int64Builder
	n     *array.Int64Builder
	fired *array.BooleanBuilder
	accs  []array.Builder
	rows  int
}

func (m *Manager) newStateWriter() *stateWriter {
	s := m.StateSchema()
	s = arrow.NewSchema(s.Fields(), func() *arrow.Metadata { md := m.stateMeta(); return &md }())
	b := array.NewRecordBuilder(m.mem, s)
	w := &stateWriter{m: m, bld: b,
		op: b.Field(0).(*array.StringBuilder), key: b.Field(1).(*array.BinaryBuilder),
		start: b.Field(2).(*array.TimestampBuilder), end: b.Field(3).(*array.TimestampBuilder),
		seq: b.Field(4).(*array.Int64Builder), n: b.Field(5).(*array.Int64Builder),
		fired: b.Field(6).(*array.BooleanBuilder)}
	for i := stateFixed; i < s.NumFields(); i++ {
		w.accs = append(w.accs, b.Field(i))
	}
	return w
}

func (w *stateWriter) upsert(s int32) {
	m := w.m
	e := &m.keys[m.sKey[s]]
	w.op.Append(OpUpsert)
	w.key.AppendString(e.key)
	w.start.Append(arrow.Timestamp(m.sStart[s]))
	w.end.Append(arrow.Timestamp(m.sEnd[s]))
	w.seq.Append(m.sSeq[s])
	w.n.Append(e.n)
	w.fired.Append(m.sFlags[s]&fFired != 0)
	m.aggs.AppendState(s, w.accs)
	m.sFlags[s] = m.sFlags[s]&^fDirty | fPersisted
	w.rows++
}

func (w *stateWriter) delete(d deletedEntry) {
	w.op.Append(OpDelete)
	w.key.AppendString(d.key)
	w.start.Append(arrow.Timestamp(d.start))
	w.end.Append(arrow.Timestamp(d.end))
	w.seq.Append(d.seq)
	w.n.Append(0)
	w.fired.Append(false)
	for _, b := range w.accs {
		b.AppendNull()
	}
	w.rows++
}

func (w *stateWriter) batch() arrow.RecordBatch {
	w.rows = 0
	return w.bld.NewRecordBatch()
}

// Changelog returns the change of the state since the previous Changelog (or Restore): first
// a delete row for every entry that left the durable state (fired and purged, merged into
// another session, count slice evicted), then an upsert row with the full accumulators of
// every entry that changed. Applying it with Restore on top of the previous state yields the
// current state (DESIGN.md §3 state/<n>.changelog.arrow). The batch (StateSchema plus
// metadata: spec, watermark, counters) may have zero rows; the caller releases it.
func (m *Manager) Changelog() arrow.RecordBatch {
	w := m.newStateWriter()
	defer w.bld.Release()
	for _, d := range m.deletes {
		w.delete(d)
	}
	for _, s := range m.dirty {
		if f := m.sFlags[s]; f&fAlive != 0 && f&fDirty != 0 {
			w.upsert(s)
		}
	}
	m.deletes, m.dirty = m.deletes[:0], m.dirty[:0]
	return w.batch()
}

// Snapshot calls fn with the full state as batches of at most Config.BatchRows upsert rows
// (at least one batch, possibly empty, so the metadata is always written). fn must release
// each batch. Entries count as durable afterwards: dropping them later writes deletes.
func (m *Manager) Snapshot(fn func(arrow.RecordBatch) error) error {
	w := m.newStateWriter()
	defer w.bld.Release()
	sent := false
	for kid := range m.keys {
		for _, r := range m.keys[kid].wins {
			w.upsert(r.slot)
			if w.rows >= m.out.max {
				if err := fn(w.batch()); err != nil {
					return err
				}
				sent = true
			}
		}
	}
	if w.rows > 0 || !sent {
		return fn(w.batch())
	}
	return nil
}

// Restore applies a state batch written by Snapshot or Changelog (of a Manager with the same
// Spec): upserts replace or create entries, deletes drop them; the watermark and counters are
// taken from its metadata. Apply the newest snapshot first, then the changelogs after it in
// epoch order. Restored entries count as durable. rec is borrowed. Errors name the mismatch.
func (m *Manager) Restore(rec arrow.RecordBatch) error {
	want := m.StateSchema()
	got := rec.Schema()
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("restore window state: %d columns, want %d (%s)", got.NumFields(), want.NumFields(), want)
	}
	for i, f := range want.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("restore window state: column %d is %s %s, want %s %s", i, g.Name, g.Type, f.Name, f.Type)
		}
	}
	md := got.Metadata()
	if sp, ok := md.GetValue(MetaSpec); ok && sp != m.Spec() {
		return fmt.Errorf("restore window state: written for %q, now %q; restart with the same options or a fresh checkpoint", sp, m.Spec())
	}
	if v, ok := md.GetValue(MetaWatermark); ok {
		var st WatermarkState
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return fmt.Errorf("restore window state: %s: %w", MetaWatermark, err)
		}
		m.wm.Restore(st, m.now())
	}
	if v, ok := md.GetValue(MetaStats); ok {
		var st stateStats
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return fmt.Errorf("restore window state: %s: %w", MetaStats, err)
		}
		m.stats.Records, m.stats.Late, m.stats.BadTime = st.Records, st.Late, st.BadTime
		m.stats.OnTime, m.stats.LateUpdate, m.stats.Early = st.OnTime, st.LateUpdate, st.Early
	}
	cols := rec.Columns()
	op := cols[0].(*array.String)
	key := cols[1].(*array.Binary)
	start := cols[2].(*array.Timestamp)
	end := cols[3].(*array.Timestamp)
	seq := cols[4].(*array.Int64)
	n := cols[5].(*array.Int64)
	fired := cols[6].(*array.Boolean)
	accs := cols[stateFixed:]
	for i := 0; i < int(rec.NumRows()); i++ {
		kid := m.intern(key.Value(i))
		e := &m.keys[kid]
		st, en, sq := int64(start.Value(i)), int64(end.Value(i)), seq.Value(i)
		pos, found := m.findEntry(e, st, en, sq)
		switch op.Value(i) {
		case OpDelete:
			if found {
				s := e.wins[pos].slot
				m.sFlags[s] &^= fPersisted
				e.wins = append(e.wins[:pos], e.wins[pos+1:]...)
				m.free(s)
			}
			m.releaseKey(kid)
			continue
		case OpUpsert:
		default:
			return fmt.Errorf("restore window state: row %d: op %q is neither upsert nor delete", i, op.Value(i))
		}
		var s int32
		if found {
			s = e.wins[pos].slot
			m.aggs.Reset(s)
		} else {
			s = m.alloc(kid, st, en)
			ref := winRef{start: st, slot: s}
			if m.kind == Count {
				ref.start = sq
			}
			e.wins = append(e.wins, winRef{})
			copy(e.wins[pos+1:], e.wins[pos:])
			e.wins[pos] = ref
		}
		m.sStart[s], m.sEnd[s], m.sSeq[s] = st, en, sq
		m.sFlags[s] = fAlive | fPersisted
		if fired.Value(i) {
			m.sFlags[s] |= fFired
		}
		if m.kind == Count && n.Value(i) > e.n {
			e.n = n.Value(i)
		}
		m.aggs.LoadState(s, accs, i)
	}
	m.dirty, m.deletes, m.changed = m.dirty[:0], m.deletes[:0], m.changed[:0]
	m.stale = true
	return nil
}

// findEntry finds the entry of e with the given identity; otherwise pos is where it goes.
func (m *Manager) findEntry(e *keyEntry, start, end, seq int64) (pos int, found bool) {
	switch m.kind {
	case Global:
		return 0, len(e.wins) > 0
	case Count:
		start = seq
	}
	for i, w := range e.wins {
		if w.start == start && (m.kind == Count || m.sEnd[w.slot] == end) {
			return i, true
		}
		if w.start > start {
			return i, false
		}
	}
	return len(e.wins), false
}

// rebuildTimers re-creates the fire and cleanup timers of every open time window after a
// restore.
func (m *Manager) rebuildTimers() {
	if !m.stale {
		return
	}
	m.stale = false
	m.fireQ.init()
	m.purgeQ.init()
	if !m.asg.TimeBased() {
		return
	}
	for kid := range m.keys {
		for _, w := range m.keys[kid].wins {
			s := w.slot
			if m.sFlags[s]&fFired == 0 {
				m.fireQ.push(m.sEnd[s], s, m.sGen[s])
			} else {
				m.purgeQ.push(addSat(m.sEnd[s], m.lateness), s, m.sGen[s])
			}
		}
	}
}
