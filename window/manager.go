package window

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// EmitMode selects which firings produce output (--emit).
type EmitMode uint8

const (
	// EmitFinal emits a window when the watermark passes its end (on_time), and again for every
	// record within the allowed lateness (late_update). The default.
	EmitFinal EmitMode = iota
	// EmitUpdate additionally emits, every Config.Every of processing time, the not yet fired
	// windows that changed since their last emission (early), like Flink's
	// ContinuousProcessingTimeTrigger but without repeating unchanged windows.
	EmitUpdate
)

// Values of the emit output column.
const (
	EmitEarly      = "early"       // early firing of an incomplete window (EmitUpdate)
	EmitOnTime     = "on_time"     // the watermark passed the window end; first complete result
	EmitLateUpdate = "late_update" // a fired window changed (late record, merged session): full new result
)

// Names of the fixed output columns.
const (
	ColWindowStart = "window_start"
	ColWindowEnd   = "window_end"
	ColEmit        = "emit"
)

// Config configures a Manager. Zero values are the documented defaults.
type Config struct {
	// Assigner assigns records to windows (required).
	Assigner *Assigner
	// Key lists the key columns as dot paths; empty: one global key.
	Key []string
	// Time is the event-time column (dot path). Empty selects processing time: every record
	// gets Now() as its time and the watermark is Now() (a processing-time session window is a
	// heartbeat monitor).
	Time string
	// TimeOptions read the event-time column (unit of integers, zone of zone-less values).
	TimeOptions TimeOptions
	// Aggs are the aggregates (see ParseAggs); empty means just "count".
	Aggs []AggCall
	// AllowedLateness keeps fired windows until watermark ≥ end + lateness; records for them
	// emit late_update rows (Flink allowedLateness). Default 0. Event time only.
	AllowedLateness time.Duration
	// Watermark configures the watermark derived from event times. Upstream watermarks are
	// always merged in (OnWatermark).
	Watermark WatermarkOptions
	// Emit selects early firings; Every is their processing-time period (required > 0 with
	// EmitUpdate). Not supported for count windows.
	Emit  EmitMode      // default EmitFinal
	Every time.Duration // early-firing period (processing time), EmitUpdate only
	// Now is the injected processing-time clock; default time.Now.
	Now func() time.Time
	// Mem allocates output and state batches; default memory.DefaultAllocator.
	Mem memory.Allocator
	// BatchRows caps the rows of an output batch; default 65536.
	BatchRows int
	// BatchBytes cuts an output or state batch once its columns hold about this many bytes
	// (codec.BuilderBytes), whatever its rows; default codec.DefaultBatchBytes (64 MiB).
	// A string column addresses at most 2 GiB per array, so windows holding large values
	// need it; it also bounds the memory of the batch being built.
	BatchBytes int
	// Partition lists the columns (dot paths) that identify the source partition of a row,
	// e.g. read-kafka's "topic,partition". The generated watermark is then the minimum over
	// partitions of max event time − Delay (DESIGN.md §4; Flink's per-split watermarks), so a
	// backlog read unevenly across partitions does not make the others' rows late; with
	// IdleTimeout a silent partition stops holding it back. Empty: one partition. Partitions
	// count from their first row; state restores keep them. A data batch that names its source
	// partition (codec.KeyPartition, as read-kafka's do) belongs to that partition instead,
	// whatever columns it has or keeps: these columns serve untagged input (foreign producers).
	Partition []string
	// Partitions are the source partitions the source declared (codec.SchemaPartitions, by
	// the names of codec.KeyPartition): each holds the generated watermark back from the start,
	// before its first row, until it delivers or goes idle (Flink's per-split watermarks), so
	// rows of a partition that is read later are not late.
	Partitions []string
	// OnePartition puts every row into one watermark partition: batch metadata and Partitions
	// are ignored (--partition-col none; Partition must then be empty).
	OnePartition bool
	// Changelog tracks changed and dropped entries for Changelog (set it when the stage
	// checkpoints; it costs a little time per record and memory per changed entry until the
	// next Changelog). Snapshot works either way.
	Changelog bool
}

// Stats are a Manager's counters and gauges.
type Stats struct {
	Records    int64 // rows given to Process
	Late       int64 // rows later than the allowed lateness (returned for the side output)
	BadTime    int64 // rows without a usable event time (null, unparseable; also returned)
	OnTime     int64 // on_time rows emitted
	LateUpdate int64 // late_update rows emitted
	Early      int64 // early rows emitted
	Keys       int   // keys with open windows
	Windows    int   // open (key, window) entries, count-window slices included
	// StateBytes estimates the Go heap held by the state: slot arrays (sized by the most
	// entries ever open), key table and timers; count_distinct sets are not included.
	StateBytes int64
}

// ErrConfig reports an invalid Manager configuration.
var ErrConfig = errors.New("invalid window configuration")

// slot flags
const (
	fAlive     uint8 = 1 << iota
	fFired           // emitted on_time or late_update: later emissions are late_update
	fDirty           // changed since the last changelog
	fChanged         // changed since the last emission (early firing)
	fPersisted       // present in durable state (a snapshot or changelog was written)
	fTimer           // a fire timer is pending (at or before the window end)
)

type winRef struct {
	start int64 // window start; slice number for count windows
	slot  int32
}

type keyEntry struct {
	key  string
	wins []winRef // sorted by start
	n    int64    // count windows: records seen
}

type deletedEntry struct {
	key        string
	start, end int64
	seq        int64
}

type countFire struct {
	key      int32
	off, len int32 // slots in Manager.fireSlots
}

// Manager is the keyed window state with its triggers: it assigns the records of each batch
// to windows per key, folds them into accumulators, fires windows as the watermark (or
// processing time) advances, and keeps a changelog of its state. Methods are called from one
// goroutine in stream order; output accumulates until TakeOutput. See the package doc for the
// Flink rules it follows.
//
// Output rows (Schema): window_start, window_end (timestamp[us, UTC]), the key columns, the
// aggregates, emit (on_time, late_update, early). For count and global windows the bounds are
// the smallest event time and the largest + 1µs.
type Manager struct {
	cfg      Config
	asg      *Assigner
	kind     Kind
	codec    *KeyCodec
	tx       *TimeExtractor
	parts    *codec.KeyEncoder // nil: no partition columns
	partIDs  map[string]int    // partition (encoded columns, or tagPrefix+name) → watermark partition index
	kafka    [2]int            // field indices of Partition = topic (utf8), partition (int32); -1: not that shape
	partOf   []int             // per row of the current batch
	partBuf  []byte
	aggs     *Aggs
	wm       *Watermarks
	lateness int64
	early    bool
	now      func() time.Time
	mem      memory.Allocator
	out      *output

	keyIDs   map[string]int32
	keyBytes int64
	keys     []keyEntry
	freeKeys []int32

	sKey      []int32
	sStart    []int64
	sEnd      []int64
	sSeq      []int64 // creation sequence (firing order); count windows: slice number
	sGen      []uint32
	sFlags    []uint8
	freeSlots []int32
	alive     int
	created   int64 // next creation sequence number
	// lateOutput is the late side output's position (Extra.LateOutput), opaque here.
	lateOutput json.RawMessage

	fireQ, purgeQ timerQueue

	// count windows
	gran, maxChunks int64
	fires           []countFire
	fireSlots       []int32
	retire          []int32

	// per-batch scratch
	enc      EncodedKeys
	ts       []int64
	ok       []bool
	rows     []int32
	slots    []int32
	seg      int
	wins     []Window
	late     []int32
	bad      []int32
	due      []int32
	lateFire []int32

	aggErr    error // the first integer sum overflow (Err)
	stale     bool  // timers must be rebuilt after Restore
	dirty     []int32
	deletes   []deletedEntry
	changed   []int32
	nextEarly int64

	stats Stats
}

// New validates cfg against the input schema in and returns a Manager. Errors wrap ErrConfig,
// ErrPath or ErrAggSpec and name the offending option.
func New(in *arrow.Schema, cfg Config) (*Manager, error) {
	if cfg.Assigner == nil {
		return nil, fmt.Errorf("%w: no window assigner", ErrConfig)
	}
	m := &Manager{cfg: cfg, asg: cfg.Assigner, kind: cfg.Assigner.Kind(), now: cfg.Now, mem: cfg.Mem,
		lateness: durUS(cfg.AllowedLateness), keyIDs: map[string]int32{}}
	if m.now == nil {
		m.now = time.Now
	}
	if m.mem == nil {
		m.mem = memory.DefaultAllocator
	}
	if m.lateness < 0 {
		return nil, fmt.Errorf("%w: allowed lateness %v is negative", ErrConfig, cfg.AllowedLateness)
	}
	if cfg.Emit == EmitUpdate {
		if cfg.Every <= 0 {
			return nil, fmt.Errorf("%w: --emit update needs --every > 0", ErrConfig)
		}
		if m.kind == Count {
			return nil, fmt.Errorf("%w: early firing (--emit update) is not supported for count windows", ErrConfig)
		}
		m.early = true
	}
	var err error
	if m.codec, err = NewKeyCodec(in, cfg.Key); err != nil {
		return nil, err
	}
	if cfg.Time != "" {
		if m.tx, err = NewTimeExtractor(in, cfg.Time, cfg.TimeOptions); err != nil {
			return nil, err
		}
	} else if m.lateness > 0 {
		return nil, fmt.Errorf("%w: allowed lateness needs an event-time column", ErrConfig)
	}
	calls := cfg.Aggs
	if len(calls) == 0 {
		calls = []AggCall{{Func: FuncCount, Name: "count"}}
	}
	if m.aggs, err = NewAggs(in, calls); err != nil {
		return nil, err
	}
	m.aggs.OnOverflow(m.overflowed)
	m.wm = NewWatermarks(cfg.Watermark)
	if m.tx != nil {
		m.kafka = [2]int{-1, -1}
		if len(cfg.Partition) > 0 {
			if m.parts, err = codec.NewKeyEncoder(in, cfg.Partition); err != nil {
				return nil, fmt.Errorf("%w: partition column: %v", ErrConfig, err)
			}
			m.kafka = kafkaColumns(in, cfg.Partition)
		}
		m.partIDs = map[string]int{}
		m.registerDeclared()
	}
	if m.kind == Count {
		m.gran = gcd(m.asg.countSize, m.asg.countStp)
		m.maxChunks = m.asg.countSize / m.gran
	}
	if m.out, err = newOutput(m.mem, m.codec.Fields(), m.aggs.Fields(), cfg.BatchRows, m.batchBytes()); err != nil {
		return nil, err
	}
	m.fireQ.init()
	m.purgeQ.init()
	return m, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Schema returns the output schema.
func (m *Manager) Schema() *arrow.Schema { return m.out.schema }

// KeyCodec returns the codec of the key columns.
func (m *Manager) KeyCodec() *KeyCodec { return m.codec }

// Watermark returns the current watermark (µs; MinTime before any). In processing time it is
// the last clock reading.
func (m *Manager) Watermark() int64 { return m.wm.Current() }

// Watermarks returns the tracker, e.g. to register partitions.
func (m *Manager) Watermarks() *Watermarks { return m.wm }

// Stats returns the counters and gauges.
func (m *Manager) Stats() Stats {
	s := m.stats
	s.Keys, s.Windows = len(m.keyIDs), m.alive
	s.StateBytes = int64(len(m.sKey))*int64(33+m.aggs.SlotBytes()) + int64(m.alive)*24 +
		int64(len(m.keys))*56 + int64(len(m.keyIDs))*40 + m.keyBytes
	return s
}

// TakeOutput returns the output rows produced since the last call, as batches of at most
// Config.BatchRows rows (none when nothing fired). The caller releases them.
func (m *Manager) TakeOutput() []arrow.RecordBatch { return m.out.take() }

// Release frees the output builders; pending output is lost.
func (m *Manager) Release() { m.out.release() }

func (m *Manager) procTime() bool { return m.tx == nil }

// batchBytes is Config.BatchBytes or its default.
func (m *Manager) batchBytes() int {
	if m.cfg.BatchBytes > 0 {
		return m.cfg.BatchBytes
	}
	return codec.DefaultBatchBytes
}

// tagPrefix starts the partIDs key of a partition named by batch metadata (KeyPartition); an
// encoded column key starts with a small type tag, so the two never collide.
const tagPrefix = "\xff"

// partID returns the watermark partition of key, registering a new one at now.
func (m *Manager) partID(key string, now time.Time) int {
	p, ok := m.partIDs[key]
	if !ok {
		p = len(m.partIDs)
		m.partIDs[key] = p
		m.wm.Register(p, now)
	}
	return p
}

// kafkaColumns returns the field indices of read-kafka's topic and partition columns when
// paths names exactly them, else -1s.
func kafkaColumns(in *arrow.Schema, paths []string) [2]int {
	no := [2]int{-1, -1}
	if len(paths) != 2 || paths[0] != "topic" || paths[1] != "partition" {
		return no
	}
	t, p := in.FieldIndices("topic"), in.FieldIndices("partition")
	if len(t) != 1 || len(p) != 1 || in.Field(t[0]).Type.ID() != arrow.STRING || in.Field(p[0]).Type.ID() != arrow.INT32 {
		return no
	}
	return [2]int{t[0], p[0]}
}

// kafkaName returns the partition name (codec.KeyPartition: topic/partition) of an encoded
// topic,partition column key, so that read-kafka's rows, tagged or identified by their
// columns, and the partitions of checkpoints that keyed them by column, are one partition.
func kafkaName(key []byte) (string, bool) {
	v, err := codec.DecodeKey(key)
	if err != nil || len(v) != 2 {
		return "", false
	}
	t, ok1 := v[0].(string)
	p, ok2 := v[1].(int64)
	if !ok1 || !ok2 {
		return "", false
	}
	return t + "/" + strconv.FormatInt(p, 10), true
}

// registerDeclared registers the declared partitions (Config.Partitions) with the watermark
// tracker: after a restore too, which keeps only the partitions that had rows.
func (m *Manager) registerDeclared() {
	if m.cfg.OnePartition {
		return
	}
	now := m.now()
	for _, name := range m.cfg.Partitions {
		m.wm.Register(m.partID(tagPrefix+name, now), now)
	}
}

// assignPartitions maps each row of rec to its watermark partition (partOf) and marks the
// partitions present in the batch active at now.
func (m *Manager) assignPartitions(rec arrow.RecordBatch, now time.Time) {
	n := int(rec.NumRows())
	m.partOf = grow(m.partOf, n)
	// A batch that names its source partition belongs to it; an untagged one without
	// partition columns to one unnamed partition (the only one of an input that names none).
	name, tagged := codec.BatchPartition(rec)
	if m.cfg.OnePartition {
		name, tagged = "", false
	}
	if tagged || m.parts == nil {
		p := m.partID(tagPrefix+name, now)
		for i := range m.partOf {
			m.partOf[i] = p
		}
		m.wm.Active(p, now)
		return
	}
	cols := m.parts.Columns(rec)
	var topics *array.String
	var nums *array.Int32
	if m.kafka[0] >= 0 {
		topics, _ = rec.Column(m.kafka[0]).(*array.String)
		nums, _ = rec.Column(m.kafka[1]).(*array.Int32)
	}
	last := -1
	for i := 0; i < n; i++ {
		if topics != nil && nums != nil && topics.IsValid(i) && nums.IsValid(i) {
			// Named as read-kafka tags its batches.
			m.partBuf = append(append(append(m.partBuf[:0], tagPrefix...), topics.Value(i)...), '/')
			m.partBuf = strconv.AppendInt(m.partBuf, int64(nums.Value(i)), 10)
		} else {
			m.partBuf = codec.AppendRow(m.partBuf[:0], cols, i)
		}
		p := m.partID(string(m.partBuf), now)
		m.partOf[i] = p
		if p != last {
			m.wm.Active(p, now)
			last = p
		}
	}
}

// Rejected lists the rows of a batch that go to the side output (--late-output), as row
// indices in ascending order. The slices are reused by the next Process call.
type Rejected struct {
	// Late rows: every window of the row is past end + allowed lateness (Stats.Late).
	Late []int32
	// BadTime rows: the event time is null or unparseable (Stats.BadTime).
	BadTime []int32
}

// Len returns the number of rejected rows.
func (r Rejected) Len() int { return len(r.Late) + len(r.BadTime) }

// Process folds the rows of rec into their windows and fires what the advancing watermark
// completes (output via TakeOutput). It returns the rows that go to the side output (see
// TakeRows). rec is borrowed. The only errors come from event-time extraction (ErrZoneless).
func (m *Manager) Process(rec arrow.RecordBatch) (Rejected, error) {
	n := int(rec.NumRows())
	m.late, m.bad = m.late[:0], m.bad[:0]
	if n == 0 {
		return Rejected{}, nil
	}
	m.rebuildTimers()
	now := m.now()
	nowUS := Micros(now)
	if m.procTime() {
		m.advance(nowUS)
		m.ts = grow(m.ts, n)
		m.ok = grow(m.ok, n)
		for i := range m.ts {
			m.ts[i], m.ok[i] = nowUS, true
		}
		m.partOf = grow(m.partOf, n)
		clear(m.partOf)
	} else {
		var err error
		if m.ts, m.ok, err = m.tx.Extract(rec, m.ts, m.ok); err != nil {
			return Rejected{}, err
		}
		m.assignPartitions(rec, now)
	}
	m.codec.Encode(rec, &m.enc)
	m.aggs.Bind(rec)
	m.stats.Records += int64(n)
	m.rows, m.slots, m.seg = m.rows[:0], m.slots[:0], 0
	switch m.kind {
	case Tumbling, Sliding:
		m.processAligned(n)
	case Session:
		m.processSessions(n)
	case Count:
		m.processCount(n)
	case Global:
		m.processGlobal(n)
	}
	m.flush()
	if m.kind != Count && m.kind != Global {
		m.fireDue(m.wm.Current())
	}
	m.maybeEarly(nowUS)
	m.aggs.Bind(nil)
	return Rejected{Late: m.late, BadTime: m.bad}, nil
}

// OnWatermark merges an upstream watermark (µs) and fires what it completes. Ignored in
// processing time.
func (m *Manager) OnWatermark(wm int64) {
	if m.procTime() {
		return
	}
	m.rebuildTimers()
	m.wm.Upstream(wm)
	if m.kind != Count && m.kind != Global {
		m.fireDue(m.wm.Current())
	}
}

// OnProcessingTime reads the clock and runs what depends on processing time: partition
// idleness (which may advance the watermark), processing-time windows (heartbeat sessions)
// and early firings. The stage loop calls it periodically, e.g. every linger interval.
func (m *Manager) OnProcessingTime() {
	m.rebuildTimers()
	now := m.now()
	nowUS := Micros(now)
	if m.procTime() {
		m.advance(nowUS)
	} else {
		m.wm.Tick(now)
		if m.kind != Count && m.kind != Global {
			m.fireDue(m.wm.Current())
		}
	}
	m.maybeEarly(nowUS)
}

// Final fires everything at the final end of input (Flink's MAX_WATERMARK): every window not
// yet fired is emitted (on_time, or late_update if it was fired before) and global windows
// their result. Count windows, which Flink never fires at the end, emit the window their next
// firing would have covered, cut at the end of input (for tumbling count windows: the records
// since the last firing), if records arrived since the last firing. Then all state is dropped
// (the next Changelog deletes it).
func (m *Manager) Final() {
	m.rebuildTimers()
	switch m.kind {
	case Count:
		var kids []int32
		for kid := range m.keys {
			if e := &m.keys[kid]; len(e.wins) > 0 && e.n%m.asg.countStp != 0 {
				kids = append(kids, int32(kid))
			}
		}
		slices.SortFunc(kids, func(a, b int32) int { return cmp.Compare(m.keys[a].key, m.keys[b].key) })
		for _, kid := range kids {
			// the window the next firing would cover, cut at the end of input
			e := &m.keys[kid]
			next := e.n + m.asg.countStp - e.n%m.asg.countStp
			lo := (next - m.asg.countSize) / m.gran
			wins := e.wins
			for len(wins) > 0 && wins[0].start < lo {
				wins = wins[1:]
			}
			m.emitCount(kid, wins)
		}
	case Global:
		for _, r := range m.openSlots() {
			m.emit(r.slot, EmitOnTime)
		}
	default:
		m.wm.Upstream(MaxTime)
		m.fireDue(MaxTime)
	}
	for kid := range m.keys {
		for _, w := range m.keys[kid].wins {
			m.free(w.slot)
		}
		m.keys[kid].wins = m.keys[kid].wins[:0]
		m.releaseKey(int32(kid))
	}
	m.fireQ.init()
	m.purgeQ.init()
}

// advance moves the processing-time watermark to now and fires what it completes.
func (m *Manager) advance(now int64) {
	m.wm.Upstream(now)
	if m.kind != Count && m.kind != Global {
		m.fireDue(m.wm.Current())
	}
}

// ---- keys and slots ----

func (m *Manager) intern(k []byte) int32 {
	if id, ok := m.keyIDs[unsafeString(k)]; ok {
		return id
	}
	s := string(k)
	m.keyBytes += int64(len(s))
	var id int32
	if n := len(m.freeKeys); n > 0 {
		id = m.freeKeys[n-1]
		m.freeKeys = m.freeKeys[:n-1]
		m.keys[id] = keyEntry{key: s, wins: m.keys[id].wins[:0]}
	} else {
		id = int32(len(m.keys))
		m.keys = append(m.keys, keyEntry{key: s})
	}
	m.keyIDs[s] = id
	return id
}

// releaseKey forgets key id when it has no open windows.
func (m *Manager) releaseKey(id int32) {
	e := &m.keys[id]
	if len(e.wins) != 0 {
		return
	}
	if cur, ok := m.keyIDs[e.key]; !ok || cur != id {
		return
	}
	delete(m.keyIDs, e.key)
	m.keyBytes -= int64(len(e.key))
	e.key, e.n = "", 0
	m.freeKeys = append(m.freeKeys, id)
}

func (m *Manager) alloc(key int32, start, end int64) int32 {
	var s int32
	if n := len(m.freeSlots); n > 0 {
		s = m.freeSlots[n-1]
		m.freeSlots = m.freeSlots[:n-1]
	} else {
		s = int32(len(m.sKey))
		m.sKey = append(m.sKey, 0)
		m.sStart = append(m.sStart, 0)
		m.sEnd = append(m.sEnd, 0)
		m.sSeq = append(m.sSeq, 0)
		m.sGen = append(m.sGen, 0)
		m.sFlags = append(m.sFlags, 0)
		if len(m.sKey) > m.aggs.slots {
			m.aggs.Grow(max(2*m.aggs.slots, 1024))
		}
	}
	m.sKey[s], m.sStart[s], m.sEnd[s], m.sSeq[s], m.sFlags[s] = key, start, end, m.created, fAlive
	m.created++
	m.alive++
	return s
}

// free releases slot s (the caller removes it from its key's windows).
func (m *Manager) free(s int32) {
	f := m.sFlags[s]
	if f&fAlive == 0 {
		return
	}
	if f&fPersisted != 0 && m.cfg.Changelog {
		m.deletes = append(m.deletes, deletedEntry{key: m.keys[m.sKey[s]].key, start: m.sStart[s], end: m.sEnd[s], seq: m.sSeq[s]})
	}
	m.aggs.Reset(s)
	m.sFlags[s] = 0
	m.sGen[s]++
	m.freeSlots = append(m.freeSlots, s)
	m.alive--
}

// markDirty queues slot s for the next changelog.
func (m *Manager) markDirty(s int32) {
	if f := m.sFlags[s]; f&fDirty == 0 && m.cfg.Changelog {
		m.dirty = append(m.dirty, s)
		m.sFlags[s] = f | fDirty
	}
}

// touch marks slot s changed (changelog, early firing).
func (m *Manager) touch(s int32) {
	f := m.sFlags[s]
	if f&fDirty == 0 && m.cfg.Changelog {
		m.dirty = append(m.dirty, s)
		f |= fDirty
	}
	if m.early && f&fChanged == 0 {
		m.changed = append(m.changed, s)
		f |= fChanged
	}
	m.sFlags[s] = f
}

// setBounds changes the bounds of a session slot; its old identity is deleted from durable
// state.
func (m *Manager) setBounds(s int32, start, end int64) {
	if m.sFlags[s]&fPersisted != 0 && m.cfg.Changelog {
		m.deletes = append(m.deletes, deletedEntry{key: m.keys[m.sKey[s]].key, start: m.sStart[s], end: m.sEnd[s]})
		m.sFlags[s] &^= fPersisted
	}
	m.sStart[s], m.sEnd[s] = start, end
}

func (m *Manager) removeWin(kid int32, s int32) {
	e := &m.keys[kid]
	for i, w := range e.wins {
		if w.slot == s {
			e.wins = slices.Delete(e.wins, i, i+1)
			break
		}
	}
}

// pair queues row i for slot s.
func (m *Manager) pair(i int, s int32) {
	m.rows = append(m.rows, int32(i))
	m.slots = append(m.slots, s)
	m.touch(s)
}

// flush applies the queued (row, slot) pairs to the accumulators.
func (m *Manager) flush() {
	if m.seg < len(m.slots) {
		m.aggs.Update(m.rows[m.seg:], m.slots[m.seg:], m.ts)
		m.seg = len(m.slots)
	}
}

// ---- event-time processing ----

// schedule registers the timers of a time window slot after it was created or changed.
func (m *Manager) schedule(s int32, wm int64) {
	switch {
	case m.sEnd[s] <= wm:
		m.lateFire = append(m.lateFire, s)
	case m.sFlags[s]&fTimer == 0:
		m.pushFire(s)
	}
}

// nextTimer is the earliest pending fire or cleanup time: rows are processed in segments
// between timers, so windows fire and are purged exactly when the watermark passes them,
// record by record.
func (m *Manager) nextTimer() int64 { return min(m.fireQ.min(), m.purgeQ.min()) }

func (m *Manager) processAligned(n int) {
	wm := m.wm.Current()
	next := m.nextTimer()
	for i := 0; i < n; i++ {
		if !m.ok[i] {
			m.badTime(i)
			continue
		}
		if wm >= next {
			m.flush()
			m.fireDue(wm)
		}
		ts := m.ts[i]
		kid := m.intern(m.enc.Key(i))
		m.wins = m.asg.Assign(ts, m.wins[:0])
		accepted := false
		e := &m.keys[kid]
		// the assigned windows and the key's open windows are both sorted by start: walk them
		// together from the first assigned start
		p, _ := slices.BinarySearchFunc(e.wins, m.wins[0].Start, func(r winRef, t int64) int { return cmp.Compare(r.start, t) })
		for _, w := range m.wins {
			if addSat(w.End, m.lateness) <= wm {
				continue
			}
			for p < len(e.wins) && e.wins[p].start < w.Start {
				p++
			}
			var s int32
			if p < len(e.wins) && e.wins[p].start == w.Start {
				s = e.wins[p].slot
			} else {
				s = m.alloc(kid, w.Start, w.End)
				e.wins = slices.Insert(e.wins, p, winRef{start: w.Start, slot: s})
				if w.End > wm {
					m.pushFire(s)
				}
			}
			p++
			m.pair(i, s)
			accepted = true
			if w.End <= wm {
				m.lateFire = append(m.lateFire, s)
			}
		}
		if !accepted {
			m.lateRow(i, kid)
		}
		m.wm.Observe(m.partOf[i], ts)
		wm = m.wm.Current()
		if len(m.lateFire) > 0 {
			m.flushLate()
		}
		next = m.nextTimer()
	}
}

// pushFire sets the fire timer of slot s at its end.
func (m *Manager) pushFire(s int32) {
	m.fireQ.push(m.sEnd[s], s, m.sGen[s])
	m.sFlags[s] |= fTimer
}

func (m *Manager) badTime(i int) {
	m.bad = append(m.bad, int32(i))
	m.stats.BadTime++
}

func (m *Manager) lateRow(i int, kid int32) {
	m.late = append(m.late, int32(i))
	m.stats.Late++
	m.releaseKey(kid)
}

// flushLate emits the late firings queued by the current row (Flink fires a window again for
// every late element within the allowed lateness).
func (m *Manager) flushLate() {
	m.flush()
	for _, s := range m.lateFire {
		if m.sFlags[s]&fAlive != 0 {
			m.emit(s, EmitLateUpdate)
			m.afterFire(s, m.wm.Current())
		}
	}
	m.lateFire = m.lateFire[:0]
}

// afterFire marks s fired and purges it now (no lateness) or schedules its cleanup.
func (m *Manager) afterFire(s int32, wm int64) {
	m.sFlags[s] = m.sFlags[s]&^fChanged | fFired
	m.markDirty(s) // the fired flag is state
	cleanup := addSat(m.sEnd[s], m.lateness)
	if cleanup <= wm {
		m.purge(s)
		return
	}
	m.purgeQ.push(cleanup, s, m.sGen[s])
}

func (m *Manager) purge(s int32) {
	kid := m.sKey[s]
	m.removeWin(kid, s)
	m.free(s)
	m.releaseKey(kid)
}

// fireDue fires every window whose end ≤ wm, in order of end, then creation (a canonical
// order, whatever the timer history), and purges those past end + lateness.
func (m *Manager) fireDue(wm int64) {
	m.due = m.due[:0]
	m.fireQ.popUntil(wm, func(t int64, refs []timerRef) {
		for _, r := range refs {
			s := r.slot
			if m.sGen[s] != r.gen || m.sFlags[s]&(fAlive|fTimer) != fAlive|fTimer {
				continue // stale: the slot was freed, or fired since
			}
			if end := m.sEnd[s]; end > wm {
				m.fireQ.push(end, s, r.gen) // a session that grew: timers move lazily
				continue
			}
			m.sFlags[s] &^= fTimer
			m.due = append(m.due, s)
		}
	})
	byEndSeq := func(a, b int32) int {
		if c := cmp.Compare(m.sEnd[a], m.sEnd[b]); c != 0 {
			return c
		}
		return cmp.Compare(m.sSeq[a], m.sSeq[b])
	}
	if !slices.IsSortedFunc(m.due, byEndSeq) {
		slices.SortFunc(m.due, byEndSeq)
	}
	for _, s := range m.due {
		kind := EmitOnTime
		if m.sFlags[s]&fFired != 0 {
			kind = EmitLateUpdate
		}
		m.emit(s, kind)
		m.afterFire(s, wm)
	}
	m.purgeQ.popUntil(wm, func(t int64, refs []timerRef) {
		for _, r := range refs {
			s := r.slot
			if m.sGen[s] != r.gen || m.sFlags[s]&fAlive == 0 || addSat(m.sEnd[s], m.lateness) != t {
				continue
			}
			m.purge(s)
		}
	})
}

// openSlots returns the slot of every open window, of every key, in creation order (sortRefs).
func (m *Manager) openSlots() []timerRef {
	var refs []timerRef
	for kid := range m.keys {
		for _, w := range m.keys[kid].wins {
			refs = append(refs, timerRef{slot: w.slot})
		}
	}
	m.sortRefs(refs)
	return refs
}

// sortRefs orders timers by creation sequence, so windows that fire together are emitted in
// the same order whatever the history of the state (restores, lazy session timers).
func (m *Manager) sortRefs(refs []timerRef) {
	cmpRef := func(a, b timerRef) int { return cmp.Compare(m.sSeq[a.slot], m.sSeq[b.slot]) }
	if !slices.IsSortedFunc(refs, cmpRef) {
		slices.SortFunc(refs, cmpRef)
	}
}

// ---- sessions ----

func (m *Manager) processSessions(n int) {
	wm := m.wm.Current()
	next := m.nextTimer()
	gap := m.asg.gap
	for i := 0; i < n; i++ {
		if !m.ok[i] {
			m.badTime(i)
			continue
		}
		if wm >= next {
			m.flush()
			m.fireDue(wm)
		}
		ts := m.ts[i]
		kid := m.intern(m.enc.Key(i))
		e := &m.keys[kid]
		start, end := ts, ts+gap
		// sessions of a key are disjoint and sorted; find those that intersect [start, end]
		// (Flink TimeWindow.intersects: touching windows merge).
		lo := 0
		for lo < len(e.wins) && m.sEnd[e.wins[lo].slot] < start {
			lo++
		}
		hi := lo
		for hi < len(e.wins) && e.wins[hi].start <= end {
			hi++
		}
		mStart, mEnd := start, end
		if hi > lo {
			mStart = min(mStart, e.wins[lo].start)
			mEnd = max(mEnd, m.sEnd[e.wins[hi-1].slot])
		}
		if addSat(mEnd, m.lateness) <= wm {
			m.lateRow(i, kid)
			m.wm.Observe(m.partOf[i], ts)
			wm, next = m.wm.Current(), m.nextTimer()
			continue
		}
		var s int32
		switch {
		case hi == lo:
			s = m.alloc(kid, start, end)
			e.wins = slices.Insert(e.wins, lo, winRef{start: start, slot: s})
			m.schedule(s, wm)
		case hi == lo+1 && mStart == e.wins[lo].start && mEnd == m.sEnd[e.wins[lo].slot]:
			s = e.wins[lo].slot
			if mEnd <= wm {
				m.lateFire = append(m.lateFire, s)
			}
		default:
			if hi > lo+1 {
				m.flush() // merged accumulators must include the queued rows
			}
			s = e.wins[lo].slot
			for _, o := range e.wins[lo+1 : hi] {
				m.aggs.Merge(s, o.slot)
				m.sFlags[s] |= m.sFlags[o.slot] & fFired
				m.free(o.slot)
			}
			e.wins = slices.Delete(e.wins, lo+1, hi)
			e.wins[lo].start = mStart
			m.setBounds(s, mStart, mEnd)
			// an unfired session keeps its timer (at its old end, it moves when it pops); a
			// fired one needs a new firing
			m.schedule(s, wm)
		}
		m.pair(i, s)
		m.wm.Observe(m.partOf[i], ts)
		wm = m.wm.Current()
		if len(m.lateFire) > 0 {
			m.flushLate()
		}
		next = m.nextTimer()
	}
}

// ---- count and global windows ----

func (m *Manager) processCount(n int) {
	m.fires, m.fireSlots, m.retire = m.fires[:0], m.fireSlots[:0], m.retire[:0]
	size, slide := m.asg.countSize, m.asg.countStp
	for i := 0; i < n; i++ {
		if !m.ok[i] {
			m.badTime(i)
			continue
		}
		ts := m.ts[i]
		kid := m.intern(m.enc.Key(i))
		e := &m.keys[kid]
		if e.n%m.gran == 0 || len(e.wins) == 0 {
			s := m.alloc(kid, ts, ts+1)
			m.sSeq[s] = e.n / m.gran
			e.wins = append(e.wins, winRef{start: m.sSeq[s], slot: s})
			if int64(len(e.wins)) > m.maxChunks {
				m.retire = append(m.retire, e.wins[0].slot)
				e.wins = slices.Delete(e.wins, 0, 1)
			}
		}
		s := e.wins[len(e.wins)-1].slot
		m.sStart[s] = min(m.sStart[s], ts)
		m.sEnd[s] = max(m.sEnd[s], ts+1)
		m.pair(i, s)
		e.n++
		if e.n%slide == 0 {
			off := int32(len(m.fireSlots))
			for _, w := range e.wins {
				m.fireSlots = append(m.fireSlots, w.slot)
			}
			m.fires = append(m.fires, countFire{key: kid, off: off, len: int32(len(e.wins))})
			if slide == size {
				m.retire = append(m.retire, e.wins[0].slot)
				e.wins = e.wins[:0]
			}
		}
	}
	m.flush()
	for _, f := range m.fires {
		m.emitCountSlots(f.key, m.fireSlots[f.off:f.off+f.len])
	}
	for _, s := range m.retire {
		kid := m.sKey[s]
		m.free(s)
		m.releaseKey(kid)
	}
}

func (m *Manager) emitCount(kid int32, wins []winRef) {
	slots := make([]int32, len(wins))
	for i, w := range wins {
		slots[i] = w.slot
	}
	m.emitCountSlots(kid, slots)
}

// emitCountSlots emits the window made of the given slices (oldest first).
func (m *Manager) emitCountSlots(kid int32, slots []int32) {
	if len(slots) == 1 {
		m.emit(slots[0], EmitOnTime)
		return
	}
	tmp := m.alloc(kid, MaxTime, MinTime)
	for _, s := range slots {
		m.aggs.Merge(tmp, s)
		m.sStart[tmp] = min(m.sStart[tmp], m.sStart[s])
		m.sEnd[tmp] = max(m.sEnd[tmp], m.sEnd[s])
	}
	m.emit(tmp, EmitOnTime)
	m.free(tmp)
}

func (m *Manager) processGlobal(n int) {
	every := m.asg.countStp // count trigger (NewGlobalEvery); 0: none
	for i := 0; i < n; i++ {
		if !m.ok[i] {
			m.badTime(i)
			continue
		}
		ts := m.ts[i]
		kid := m.intern(m.enc.Key(i))
		e := &m.keys[kid]
		if len(e.wins) == 0 {
			e.wins = append(e.wins, winRef{slot: m.alloc(kid, ts, ts+1)})
		}
		s := e.wins[0].slot
		m.sStart[s] = min(m.sStart[s], ts)
		m.sEnd[s] = max(m.sEnd[s], ts+1)
		m.pair(i, s)
		if every > 0 {
			e.n++
			if e.n%every == 0 {
				// Fire at exactly this row, whatever the batch boundaries: aggregate the rows
				// paired so far (this one included), then emit.
				m.flush()
				m.emit(s, EmitEarly)
			}
		}
	}
}

// ---- early firing ----

func (m *Manager) maybeEarly(now int64) {
	if !m.early {
		return
	}
	every := durUS(m.cfg.Every)
	if m.nextEarly == 0 {
		m.nextEarly = now - codec.FloorMod(now, every) + every
		return
	}
	if now < m.nextEarly {
		return
	}
	m.nextEarly = now - codec.FloorMod(now, every) + every
	slices.SortFunc(m.changed, func(a, b int32) int { return cmp.Compare(m.sSeq[a], m.sSeq[b]) })
	for _, s := range m.changed {
		f := m.sFlags[s]
		if f&fAlive == 0 || f&fChanged == 0 {
			continue
		}
		m.sFlags[s] = f &^ fChanged
		if f&fFired != 0 {
			continue // fired windows emit late_update at once
		}
		m.emit(s, EmitEarly)
	}
	m.changed = m.changed[:0]
}

// emit appends the result row of slot s.
func (m *Manager) emit(s int32, kind string) {
	switch kind {
	case EmitOnTime:
		m.stats.OnTime++
	case EmitLateUpdate:
		m.stats.LateUpdate++
	case EmitEarly:
		m.stats.Early++
	}
	m.out.row(m, s, kind)
}
