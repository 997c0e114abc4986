package window

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/codec"
)

// Columns of state batches (Changelog, Snapshot, Restore). They follow the state file
// convention of docs/protocol.md §7.4 (state.Store): _op, _key, then value columns, all
// nullable; rows sorted by _key; at most StateBatchRows rows and about Config.BatchBytes bytes
// per batch.
const (
	StateOp    = "_op"          // "upsert" or "delete" (state.OpColumn)
	StateKey   = "_key"         // entry identity: encoded key + window identity (see StateSchema)
	StateStart = "window_start" // window start; count and global windows: smallest event time
	StateEnd   = "window_end"   // window end; count and global windows: largest event time + 1µs
	StateSeq   = "seq"          // creation order (firing order); count windows: slice number
	StateN     = "n"            // count windows: records seen for the key; else 0
	StateFired = "fired"        // the window was emitted (on_time or late_update) before

	OpUpsert = "upsert"
	OpDelete = "delete"

	// StateBatchRows bounds the rows of one state batch.
	StateBatchRows = 1 << 16
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

// StateSchema returns the schema of state batches: _op, _key, window_start, window_end, seq,
// n, fired, then the accumulator columns of Aggs.StateFields. One row is one open
// (key, window) entry — for count windows one slice of gcd(size, slide) records. _key is the
// entry's identity in codec's self-describing key encoding, so state-dump can render it: the
// key columns, then for time windows window_start and window_end (timestamp µs parts), for
// count windows the slice number (an int part), nothing more for the global window. Delete
// rows carry nulls in every value column.
func (m *Manager) StateSchema() *arrow.Schema {
	fields := []arrow.Field{
		{Name: StateOp, Type: arrow.BinaryTypes.String},
		{Name: StateKey, Type: arrow.BinaryTypes.Binary},
		{Name: StateStart, Type: timestampUS, Nullable: true},
		{Name: StateEnd, Type: timestampUS, Nullable: true},
		{Name: StateSeq, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: StateN, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: StateFired, Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}
	for _, f := range m.aggs.StateFields() {
		f.Nullable = true
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil)
}

const stateFixed = 7 // columns before the accumulators

// identityLen is the length of the window identity appended to an encoded key in _key.
func (m *Manager) identityLen() int {
	switch m.kind {
	case Count:
		return 9
	case Global:
		return 0
	}
	return 20
}

// appendIdentity appends the window identity of (start, end, seq) to an encoded key, as more
// parts of codec's key encoding: the slice number (int) for count windows, window_start and
// window_end (timestamps in µs) for time windows, nothing for the global window.
func (m *Manager) appendIdentity(dst []byte, start, end, seq int64) []byte {
	switch m.kind {
	case Count:
		return codec.AppendKeyInt(dst, seq)
	case Global:
		return dst
	}
	dst = codec.AppendKeyTimestamp(dst, arrow.Microsecond, start)
	return codec.AppendKeyTimestamp(dst, arrow.Microsecond, end)
}

// parseIdentity splits a _key into the encoded key and the window identity.
func (m *Manager) parseIdentity(k []byte) (key []byte, start, end, seq int64, err error) {
	n := m.identityLen()
	if len(k) < n {
		return nil, 0, 0, 0, fmt.Errorf("_key of %d bytes is too short for a window identity", len(k))
	}
	key, id := k[:len(k)-n], k[len(k)-n:]
	switch m.kind {
	case Count:
		p, _, err := codec.NextKeyPart(id)
		v, ok := p.Value().(int64)
		if err != nil || !ok {
			return nil, 0, 0, 0, fmt.Errorf("_key does not end with a slice number")
		}
		seq = v
	case Global:
	default:
		ps, rest, err1 := codec.NextKeyPart(id)
		pe, _, err2 := codec.NextKeyPart(rest)
		s, ok1 := ps.Value().(codec.KeyTimestamp)
		e, ok2 := pe.Value().(codec.KeyTimestamp)
		if err1 != nil || err2 != nil || !ok1 || !ok2 || s.Unit != arrow.Microsecond || e.Unit != arrow.Microsecond {
			return nil, 0, 0, 0, fmt.Errorf("_key does not end with window_start and window_end")
		}
		start, end = int64(s.Value), int64(e.Value)
	}
	return key, start, end, seq, nil
}

// Extra holds a Manager's scalar state: it goes with each checkpoint (the manifest's extra).
type Extra struct {
	Spec       string         `json:"spec"`        // Manager.Spec of the writer
	Watermark  WatermarkState `json:"watermark"`   // the watermark tracker
	Created    int64          `json:"created"`     // next creation sequence number
	Records    int64          `json:"records"`     // Stats.Records
	Late       int64          `json:"late"`        // Stats.Late
	BadTime    int64          `json:"bad_time"`    // Stats.BadTime
	OnTime     int64          `json:"on_time"`     // Stats.OnTime
	LateUpdate int64          `json:"late_update"` // Stats.LateUpdate
	Early      int64          `json:"early"`       // Stats.Early
	// Partitions lists the encoded watermark partitions (Config.Partition) in index order, so
	// a restore maps each partition to the same watermark slot.
	Partitions [][]byte `json:"partitions,omitempty"`
	// LateOutput is where the late side output stood at this epoch, as the tool that writes
	// it recorded it (Manager.SetLateOutput; opaque here), so a restart resumes the file there.
	LateOutput json.RawMessage `json:"late_output,omitempty"`
}

// Extra returns the scalar state to checkpoint with the state batches.
func (m *Manager) Extra() Extra {
	st := m.stats
	x := Extra{Spec: m.Spec(), Watermark: m.wm.State(), Created: m.created, Records: st.Records, Late: st.Late,
		BadTime: st.BadTime, OnTime: st.OnTime, LateUpdate: st.LateUpdate, Early: st.Early, LateOutput: m.lateOutput}
	if len(m.partIDs) > 0 {
		x.Partitions = make([][]byte, len(m.partIDs))
		for k, i := range m.partIDs {
			x.Partitions[i] = []byte(k)
		}
	}
	return x
}

// ErrSpec is returned by RestoreExtra for state written with another Spec.
var ErrSpec = errors.New("window state was written with other options")

// RestoreExtra restores the scalar state (watermark, counters); call it with the Extra of the
// newest restored epoch. It refuses an Extra of another Spec (ErrSpec, naming both).
func (m *Manager) RestoreExtra(x Extra) error {
	if x.Spec != "" && x.Spec != m.Spec() {
		return fmt.Errorf("%w: written for %q, now %q; restart with the same options or a fresh checkpoint", ErrSpec, x.Spec, m.Spec())
	}
	m.wm.Restore(x.Watermark, m.now())
	if m.partIDs != nil {
		clear(m.partIDs)
		for i, k := range x.Partitions {
			if name, ok := kafkaName(k); ok && m.kafka[0] >= 0 {
				k = []byte(tagPrefix + name) // keyed by topic,partition columns before partitions had names
			}
			m.partIDs[string(k)] = i
		}
		m.registerDeclared() // restored as the watermark tracker has them; new ones wait
	}
	m.created = max(m.created, x.Created)
	m.lateOutput = x.LateOutput
	m.stats.Records, m.stats.Late, m.stats.BadTime = x.Records, x.Late, x.BadTime
	m.stats.OnTime, m.stats.LateUpdate, m.stats.Early = x.OnTime, x.LateUpdate, x.Early
	return nil
}

// SetLateOutput records where the late side output stands (JSON of the writer's choosing),
// to be checkpointed with the next Extra.
func (m *Manager) SetLateOutput(mark json.RawMessage) { m.lateOutput = mark }

// LateOutput is the late side output's position restored by RestoreExtra (nil: none recorded).
func (m *Manager) LateOutput() json.RawMessage { return m.lateOutput }

// MarshalExtra is Extra as JSON.
func (m *Manager) MarshalExtra() (json.RawMessage, error) { return json.Marshal(m.Extra()) }

// UnmarshalExtra parses JSON written by MarshalExtra and calls RestoreExtra.
func (m *Manager) UnmarshalExtra(b []byte) error {
	var x Extra
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("restore window state: extra: %w", err)
	}
	return m.RestoreExtra(x)
}

// stateRow is one row to write: an alive slot (upsert) or a deleted entry.
type stateRow struct {
	key  string // _key
	slot int32  // -1: delete
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
	size  codec.Sizer
}

func (m *Manager) newStateWriter() *stateWriter {
	b := array.NewRecordBuilder(m.mem, m.StateSchema())
	w := &stateWriter{m: m, bld: b,
		op: b.Field(0).(*array.StringBuilder), key: b.Field(1).(*array.BinaryBuilder),
		start: b.Field(2).(*array.TimestampBuilder), end: b.Field(3).(*array.TimestampBuilder),
		seq: b.Field(4).(*array.Int64Builder), n: b.Field(5).(*array.Int64Builder),
		fired: b.Field(6).(*array.BooleanBuilder)}
	for i := stateFixed; i < b.Schema().NumFields(); i++ {
		w.accs = append(w.accs, b.Field(i))
	}
	w.size = codec.NewSizer(b.Fields())
	return w
}

func (w *stateWriter) row(r stateRow) {
	w.rows++
	w.key.AppendString(r.key)
	if r.slot < 0 {
		w.op.Append(OpDelete)
		for _, b := range w.bld.Fields()[2:] {
			b.AppendNull()
		}
		return
	}
	m, s := w.m, r.slot
	w.op.Append(OpUpsert)
	w.start.Append(arrow.Timestamp(m.sStart[s]))
	w.end.Append(arrow.Timestamp(m.sEnd[s]))
	w.seq.Append(m.sSeq[s])
	w.n.Append(m.keys[m.sKey[s]].n)
	w.fired.Append(m.sFlags[s]&fFired != 0)
	m.aggs.AppendState(s, w.accs)
	m.sFlags[s] = m.sFlags[s]&^fDirty | fPersisted
}

// writeRows sorts rows by _key (an upsert wins over a delete of the same entry) and emits
// them in batches of at most StateBatchRows rows, cut once a batch holds Config.BatchBytes
// (large values: a string column addresses at most 2 GiB per array); at least one (possibly
// empty) batch.
func (m *Manager) writeRows(rows []stateRow, fn func(arrow.RecordBatch) error) error {
	slices.SortStableFunc(rows, func(a, b stateRow) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(b.slot, a.slot) // upserts (slot ≥ 0) first
	})
	w := m.newStateWriter()
	defer w.bld.Release()
	sent := false
	for i, r := range rows {
		if i > 0 && rows[i-1].key == r.key {
			continue
		}
		w.row(r)
		if w.rows == StateBatchRows || w.size.Bytes(w.rows) >= m.batchBytes() {
			w.rows, sent = 0, true
			if err := fn(w.bld.NewRecordBatch()); err != nil {
				return err
			}
		}
	}
	if w.rows > 0 || !sent {
		return fn(w.bld.NewRecordBatch())
	}
	return nil
}

func (m *Manager) upsertRow(s int32) stateRow {
	k := m.appendIdentity([]byte(m.keys[m.sKey[s]].key), m.sStart[s], m.sEnd[s], m.sSeq[s])
	return stateRow{key: unsafeString(k), slot: s}
}

// ErrNoChangelog is returned by Changelog when Config.Changelog is off.
var ErrNoChangelog = errors.New("window state changes are not tracked (Config.Changelog is off)")

// Changelog calls fn with the change of the state since the previous Changelog (or Restore):
// a delete row for every entry that left the durable state (fired and purged, merged into
// another session, count slice evicted) and an upsert row with the full accumulators of every
// entry that changed, sorted by _key (DESIGN.md §3 state/<n>.changelog.arrow). Applying it
// with Restore on top of the previous state yields the current state. At least one batch
// (possibly empty) is passed; fn releases each. Needs Config.Changelog (ErrNoChangelog).
func (m *Manager) Changelog(fn func(arrow.RecordBatch) error) error {
	if !m.cfg.Changelog {
		return ErrNoChangelog
	}
	rows := make([]stateRow, 0, len(m.deletes)+len(m.dirty))
	for _, d := range m.deletes {
		k := m.appendIdentity([]byte(d.key), d.start, d.end, d.seq)
		rows = append(rows, stateRow{key: unsafeString(k), slot: -1})
	}
	for _, s := range m.dirty {
		if f := m.sFlags[s]; f&fAlive != 0 && f&fDirty != 0 {
			rows = append(rows, m.upsertRow(s))
			m.sFlags[s] &^= fDirty // written once even if listed twice
		}
	}
	m.deletes, m.dirty = m.deletes[:0], m.dirty[:0]
	return m.writeRows(rows, fn)
}

// Dirty returns how many entries changed or left since the last Changelog.
func (m *Manager) Dirty() int { return len(m.dirty) + len(m.deletes) }

// Snapshot calls fn with the full state as upsert rows sorted by _key, in batches of at most
// StateBatchRows rows (at least one, possibly empty); fn releases each. Entries count as
// durable afterwards: dropping them later writes deletes.
func (m *Manager) Snapshot(fn func(arrow.RecordBatch) error) error {
	rows := make([]stateRow, 0, m.alive)
	for kid := range m.keys {
		for _, r := range m.keys[kid].wins {
			rows = append(rows, m.upsertRow(r.slot))
		}
	}
	return m.writeRows(rows, fn)
}

// Restore applies a state batch written by Snapshot or Changelog (of a Manager with the same
// Spec): upserts replace or create entries, deletes drop them. Apply the newest snapshot
// first, then the changelogs after it in epoch order, then RestoreExtra. Restored entries
// count as durable. rec is borrowed. Errors name the mismatch.
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
	cols := rec.Columns()
	op := cols[0].(*array.String)
	keys := cols[1].(*array.Binary)
	start := cols[2].(*array.Timestamp)
	end := cols[3].(*array.Timestamp)
	seq := cols[4].(*array.Int64)
	n := cols[5].(*array.Int64)
	fired := cols[6].(*array.Boolean)
	accs := cols[stateFixed:]
	for i := 0; i < int(rec.NumRows()); i++ {
		key, st, en, sq, err := m.parseIdentity(keys.Value(i))
		if err != nil {
			return fmt.Errorf("restore window state: row %d: %w", i, err)
		}
		kid := m.intern(key)
		e := &m.keys[kid]
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
			return fmt.Errorf("restore window state: row %d: _op %q is neither upsert nor delete", i, op.Value(i))
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
			e.wins = slices.Insert(e.wins, pos, ref)
		}
		m.sStart[s], m.sEnd[s], m.sSeq[s] = int64(start.Value(i)), int64(end.Value(i)), seq.Value(i)
		m.sFlags[s] = fAlive | fPersisted
		if fired.Value(i) {
			m.sFlags[s] |= fFired
		}
		if m.kind != Count {
			m.created = max(m.created, m.sSeq[s]+1)
		} else if n.Value(i) > e.n {
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
	for _, r := range m.openSlots() {
		s := r.slot
		if m.sFlags[s]&fFired == 0 {
			m.pushFire(s)
		} else {
			m.purgeQ.push(addSat(m.sEnd[s], m.lateness), s, m.sGen[s])
		}
	}
}
