package window

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DedupConfig configures a Dedup. Zero values are the documented defaults.
type DedupConfig struct {
	// Key lists the columns (dot paths) whose values identify a record (required).
	Key []string
	// Time is the event-time column; empty selects processing time (Now()).
	Time string
	// TimeOptions read the event-time column.
	TimeOptions TimeOptions
	// TTL is how long a key is remembered after its first occurrence, in event time (until
	// watermark ≥ first event time + TTL) or processing time (required > 0).
	TTL time.Duration
	// Watermark derives the watermark from event times; upstream watermarks always count.
	Watermark WatermarkOptions
	// Now is the injected processing-time clock; default time.Now.
	Now func() time.Time
	// Mem allocates state batches; default memory.DefaultAllocator.
	Mem memory.Allocator
	// Changelog tracks changes for Changelog (set it when the stage checkpoints).
	Changelog bool
}

// DedupStats are a Dedup's counters.
type DedupStats struct {
	Records    int64 // rows given to Process
	Kept       int64 // first occurrences, forwarded
	Duplicates int64 // dropped as duplicates
	Late       int64 // event time + TTL ≤ watermark: state may be gone, so undecidable (side output)
	BadTime    int64 // null or unparseable event time (side output)
	Keys       int   // keys remembered
}

// Dedup drops duplicate records by key, keeping the first occurrence, with state bounded by a
// TTL in event time (like Spark's dropDuplicatesWithinWatermark: a key is forgotten once the
// watermark passes its first event time + TTL) or in processing time (Flink state TTL). Rows
// are judged one by one against the watermark before them, so results do not depend on batch
// boundaries. A row whose event time + TTL is already ≤ the watermark is late: its key may
// have been forgotten, so it goes to the side output instead of being guessed at. Not safe
// for concurrent use.
type Dedup struct {
	cfg   DedupConfig
	codec *KeyCodec
	tx    *TimeExtractor
	wm    *Watermarks
	ttl   int64
	gran  int64 // expiry timers are bucketed to this granularity (exact expiry is checked)
	now   func() time.Time
	mem   memory.Allocator

	ids  map[string]int32
	keys []dedupEntry
	free []int32
	q    timerQueue

	enc       EncodedKeys
	ts        []int64
	ok        []bool
	keep      []int32
	late, bad []int32

	dirty   []int32
	deletes []string
	stats   DedupStats
}

type dedupEntry struct {
	key     string
	expires int64
	gen     uint32
	flags   uint8 // fAlive, fDirty, fPersisted
}

// NewDedup validates cfg against the input schema. Errors wrap ErrConfig or ErrPath.
func NewDedup(in *arrow.Schema, cfg DedupConfig) (*Dedup, error) {
	if len(cfg.Key) == 0 {
		return nil, fmt.Errorf("%w: dedup needs --key", ErrConfig)
	}
	if cfg.TTL <= 0 {
		return nil, fmt.Errorf("%w: dedup needs --ttl > 0", ErrConfig)
	}
	d := &Dedup{cfg: cfg, ttl: durUS(cfg.TTL), now: cfg.Now, mem: cfg.Mem, ids: map[string]int32{}}
	if d.now == nil {
		d.now = time.Now
	}
	if d.mem == nil {
		d.mem = memory.DefaultAllocator
	}
	d.gran = max(d.ttl/16, 1000)
	var err error
	if d.codec, err = NewKeyCodec(in, cfg.Key); err != nil {
		return nil, err
	}
	if cfg.Time != "" {
		if d.tx, err = NewTimeExtractor(in, cfg.Time, cfg.TimeOptions); err != nil {
			return nil, err
		}
	}
	d.wm = NewWatermarks(cfg.Watermark)
	d.q.init()
	return d, nil
}

// Stats returns the counters.
func (d *Dedup) Stats() DedupStats {
	s := d.stats
	s.Keys = len(d.ids)
	return s
}

// Watermark returns the current watermark (µs; MinTime before any).
func (d *Dedup) Watermark() int64 { return d.wm.Current() }

// Watermarks returns the tracker, e.g. to register partitions.
func (d *Dedup) Watermarks() *Watermarks { return d.wm }

// Process judges every row of rec and returns the rows to forward (first occurrences, in
// order; the slice is reused by the next call) and the rows for the side output. rec is
// borrowed; build the output with TakeRows.
func (d *Dedup) Process(rec arrow.RecordBatch) ([]int32, Rejected, error) {
	n := int(rec.NumRows())
	d.keep, d.late, d.bad = d.keep[:0], d.late[:0], d.bad[:0]
	if n == 0 {
		return d.keep, Rejected{}, nil
	}
	now := d.now()
	if d.tx == nil {
		d.wm.Upstream(Micros(now))
		d.expire(d.wm.Current())
		d.ts, d.ok = grow(d.ts, n), grow(d.ok, n)
		for i := range d.ts {
			d.ts[i], d.ok[i] = Micros(now), true
		}
	} else {
		var err error
		if d.ts, d.ok, err = d.tx.Extract(rec, d.ts, d.ok); err != nil {
			return nil, Rejected{}, err
		}
		d.wm.Active(0, now)
	}
	d.codec.Encode(rec, &d.enc)
	d.stats.Records += int64(n)
	for i := 0; i < n; i++ {
		if !d.ok[i] {
			d.bad = append(d.bad, int32(i))
			d.stats.BadTime++
			continue
		}
		ts, wm := d.ts[i], d.wm.Current()
		if addSat(ts, d.ttl) <= wm {
			d.late = append(d.late, int32(i))
			d.stats.Late++
			d.wm.Observe(0, ts)
			continue
		}
		k := d.enc.Key(i)
		if id, ok := d.ids[unsafeString(k)]; ok && d.keys[id].expires > wm {
			d.stats.Duplicates++
		} else {
			if !ok {
				id = d.add(string(k))
			}
			e := &d.keys[id]
			e.expires = ts + d.ttl
			d.touch(id)
			d.q.push(d.bucket(e.expires), id, e.gen)
			d.keep = append(d.keep, int32(i))
			d.stats.Kept++
		}
		d.wm.Observe(0, ts)
	}
	d.expire(d.wm.Current())
	return d.keep, Rejected{Late: d.late, BadTime: d.bad}, nil
}

// OnWatermark merges an upstream watermark (µs) and forgets expired keys. Ignored in
// processing time.
func (d *Dedup) OnWatermark(wm int64) {
	if d.tx == nil {
		return
	}
	d.wm.Upstream(wm)
	d.expire(d.wm.Current())
}

// OnProcessingTime reads the clock: idleness of partitions, and expiry in processing time.
func (d *Dedup) OnProcessingTime() {
	now := d.now()
	if d.tx == nil {
		d.wm.Upstream(Micros(now))
	} else {
		d.wm.Tick(now)
	}
	d.expire(d.wm.Current())
}

func (d *Dedup) bucket(t int64) int64 {
	if t > MaxTime-d.gran {
		return MaxTime
	}
	return t - floorMod(t, d.gran) + d.gran
}

func (d *Dedup) add(k string) int32 {
	var id int32
	if n := len(d.free); n > 0 {
		id = d.free[n-1]
		d.free = d.free[:n-1]
		d.keys[id] = dedupEntry{key: k, gen: d.keys[id].gen, flags: fAlive}
	} else {
		id = int32(len(d.keys))
		d.keys = append(d.keys, dedupEntry{key: k, flags: fAlive})
	}
	d.ids[k] = id
	return id
}

func (d *Dedup) touch(id int32) {
	if !d.cfg.Changelog {
		return
	}
	if e := &d.keys[id]; e.flags&fDirty == 0 {
		e.flags |= fDirty
		d.dirty = append(d.dirty, id)
	}
}

func (d *Dedup) remove(id int32) {
	e := &d.keys[id]
	if e.flags&fPersisted != 0 && d.cfg.Changelog {
		d.deletes = append(d.deletes, e.key)
	}
	delete(d.ids, e.key)
	*e = dedupEntry{gen: e.gen + 1}
	d.free = append(d.free, id)
}

// expire forgets keys whose expiry ≤ wm.
func (d *Dedup) expire(wm int64) {
	d.q.popUntil(wm, func(_ int64, refs []timerRef) {
		for _, r := range refs {
			e := &d.keys[r.slot]
			if e.gen != r.gen || e.flags&fAlive == 0 {
				continue
			}
			if e.expires <= wm {
				d.remove(r.slot)
			} else if b := d.bucket(e.expires); b > wm {
				d.q.push(b, r.slot, r.gen) // re-added after expiry with a later time
			}
		}
	})
}

// Final drops all state (the final end of input).
func (d *Dedup) Final() {
	for id := range d.keys {
		if d.keys[id].flags&fAlive != 0 {
			d.remove(int32(id))
		}
	}
	d.q.init()
}

// DedupStateSchema is the schema of dedup state batches: op ("upsert"/"delete"), key (encoded
// key bytes) and expires (timestamp[us, UTC]; null on deletes).
var DedupStateSchema = arrow.NewSchema([]arrow.Field{
	{Name: StateOp, Type: arrow.BinaryTypes.String},
	{Name: StateKey, Type: arrow.BinaryTypes.Binary},
	{Name: "expires", Type: timestampUS, Nullable: true},
}, nil)

// Spec describes what shapes the state (key paths, TTL, time column).
func (d *Dedup) Spec() string {
	return fmt.Sprintf("dedup key=%s ttl=%v time=%s", strings.Join(d.codec.Paths(), ","), d.cfg.TTL, d.cfg.Time)
}

func (d *Dedup) stateBuilder() *array.RecordBuilder {
	wm, _ := json.Marshal(d.wm.State())
	st, _ := json.Marshal(d.stats)
	md := arrow.NewMetadata([]string{MetaSpec, MetaWatermark, MetaStats}, []string{d.Spec(), string(wm), string(st)})
	return array.NewRecordBuilder(d.mem, arrow.NewSchema(DedupStateSchema.Fields(), &md))
}

func (d *Dedup) appendUpsert(b *array.RecordBuilder, id int32) {
	e := &d.keys[id]
	b.Field(0).(*array.StringBuilder).Append(OpUpsert)
	b.Field(1).(*array.BinaryBuilder).AppendString(e.key)
	b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(e.expires))
	e.flags = e.flags&^fDirty | fPersisted
}

// Changelog returns the deletes and upserts since the previous Changelog or Restore (see
// Manager.Changelog). Needs DedupConfig.Changelog (ErrNoChangelog otherwise).
func (d *Dedup) Changelog() (arrow.RecordBatch, error) {
	if !d.cfg.Changelog {
		return nil, ErrNoChangelog
	}
	b := d.stateBuilder()
	defer b.Release()
	for _, k := range d.deletes {
		b.Field(0).(*array.StringBuilder).Append(OpDelete)
		b.Field(1).(*array.BinaryBuilder).AppendString(k)
		b.Field(2).AppendNull()
	}
	for _, id := range d.dirty {
		if d.keys[id].flags&(fAlive|fDirty) == fAlive|fDirty {
			d.appendUpsert(b, id)
		}
	}
	d.deletes, d.dirty = d.deletes[:0], d.dirty[:0]
	return b.NewRecordBatch(), nil
}

// Snapshot calls fn with the full state in batches of at most 65536 rows (at least one).
func (d *Dedup) Snapshot(fn func(arrow.RecordBatch) error) error {
	b := d.stateBuilder()
	defer b.Release()
	rows, sent := 0, false
	for id := range d.keys {
		if d.keys[id].flags&fAlive == 0 {
			continue
		}
		d.appendUpsert(b, int32(id))
		if rows++; rows == 1<<16 {
			if err := fn(b.NewRecordBatch()); err != nil {
				return err
			}
			rows, sent = 0, true
		}
	}
	if rows > 0 || !sent {
		return fn(b.NewRecordBatch())
	}
	return nil
}

// Restore applies a snapshot or changelog batch (see Manager.Restore).
func (d *Dedup) Restore(rec arrow.RecordBatch) error {
	s := rec.Schema()
	ok := s.NumFields() == DedupStateSchema.NumFields()
	for i := 0; ok && i < s.NumFields(); i++ {
		f, w := s.Field(i), DedupStateSchema.Field(i)
		ok = f.Name == w.Name && arrow.TypeEqual(f.Type, w.Type)
	}
	if !ok {
		return fmt.Errorf("restore dedup state: schema %s, want %s", s, DedupStateSchema)
	}
	md := s.Metadata()
	if sp, ok := md.GetValue(MetaSpec); ok && sp != d.Spec() {
		return fmt.Errorf("restore dedup state: written for %q, now %q; restart with the same options or a fresh checkpoint", sp, d.Spec())
	}
	if v, ok := md.GetValue(MetaWatermark); ok {
		var st WatermarkState
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			return fmt.Errorf("restore dedup state: %s: %w", MetaWatermark, err)
		}
		d.wm.Restore(st, d.now())
	}
	if v, ok := md.GetValue(MetaStats); ok {
		if err := json.Unmarshal([]byte(v), &d.stats); err != nil {
			return fmt.Errorf("restore dedup state: %s: %w", MetaStats, err)
		}
	}
	op := rec.Column(0).(*array.String)
	key := rec.Column(1).(*array.Binary)
	exp := rec.Column(2).(*array.Timestamp)
	for i := 0; i < int(rec.NumRows()); i++ {
		id, found := d.ids[string(key.Value(i))]
		switch op.Value(i) {
		case OpDelete:
			if found {
				d.keys[id].flags &^= fPersisted
				d.remove(id)
			}
		case OpUpsert:
			if !found {
				id = d.add(string(key.Value(i)))
			}
			e := &d.keys[id]
			e.expires, e.flags = int64(exp.Value(i)), fAlive|fPersisted
			d.q.push(d.bucket(e.expires), id, e.gen)
		default:
			return fmt.Errorf("restore dedup state: row %d: op %q is neither upsert nor delete", i, op.Value(i))
		}
	}
	d.dirty, d.deletes = d.dirty[:0], d.deletes[:0]
	return nil
}
