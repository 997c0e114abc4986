// Package dedup is the `streamkit dedup` tool: it keeps the first occurrence of each key and
// drops later duplicates, with state bounded by an event-time TTL (as Spark's
// dropDuplicatesWithinWatermark) or a processing-time TTL, checkpointed per epoch so a
// restart after kill -9 yields exactly the output of an uninterrupted run.
package dedup

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/sink/sideoutput"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
	"github.com/streamkit/streamkit/window"
)

// Config are dedup's options.
type Config struct {
	// Key lists the key columns (dot paths). Empty: the stream's declared key (keyby), else
	// every column.
	Key []string
	// EventTime is the event-time column used with TTL (timestamp, epoch integer with
	// TimeUnit, or RFC 3339 text; zone-less values read in Location).
	EventTime string
	TimeUnit  string
	Location  *time.Location
	// TTL forgets a key once the watermark passes its first event time + TTL (needs EventTime);
	// rows older than the watermark of the last barrier are then late and dropped (counted,
	// to DroppedOutput), as Spark's dropDuplicatesWithinWatermark drops them.
	TTL time.Duration
	// WatermarkDelay generates a watermark from event times: max event time − delay. Upstream
	// watermark control batches also advance it (the later of both).
	WatermarkDelay time.Duration
	// TTLProcessing forgets a key TTLProcessing after it was first seen by the wall clock.
	// Not reproducible on replay (wall-clock dependent).
	TTLProcessing time.Duration
	// DroppedOutput is a file for the dropped duplicates and, with TTL, the rows older than the
	// watermark (sink/sideoutput: .arrow Arrow IPC stream, .ndjson JSON lines); empty: they
	// are only counted.
	DroppedOutput string
}

// entry is a key's state: when it was first seen (µs since the epoch, UTC): its event time
// with TTL, the processing time with TTLProcessing, noTime otherwise (written as null).
type entry = int64

const noTime = math.MinInt64

type entryCodec struct{}

func (entryCodec) Fields() []arrow.Field {
	return []arrow.Field{{Name: "first_seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}
}
func (entryCodec) Append(bs []array.Builder, v entry) {
	if v == noTime {
		bs[0].AppendNull()
		return
	}
	bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(v))
}
func (entryCodec) Decode(cols []arrow.Array, i int) (entry, error) {
	if cols[0].IsNull(i) {
		return noTime, nil
	}
	return int64(cols[0].(*array.Timestamp).Value(i)), nil
}

// extra is what dedup keeps in each epoch manifest besides the keyed state.
type extra struct {
	Watermark int64 `json:"watermark_us"` // µs since the epoch; window.MinTime = none
	// Dropped is the --dropped-output file as of the epoch, so a restart cuts off what
	// uncommitted epochs appended to it.
	Dropped *sideoutput.Mark `json:"dropped_output,omitempty"`
}

// Dedup is the dedup operator.
type Dedup struct {
	cfg     Config
	env     *stage.Env
	store   *state.Store[entry]
	enc     *codec.KeyEncoder
	times   *window.TimeExtractor
	wm      *window.Watermarks
	keyBuf  []byte   // the encoded keys of a batch
	keyEnds []int    // where each row's key ends in keyBuf
	keys    [][]byte // each row's key in keyBuf
	ts      []int64
	tsOK    []bool
	mask    *array.BooleanBuilder
	lastOut int64
	dropped int64
	// epochWM is the watermark at the last barrier (or restored): with --ttl, rows older than
	// it are late. late, onTime and rows are Process's scratch for them.
	epochWM     int64
	late        []bool
	onTime      [][]byte
	rows        []int
	lateDropped int64
	// side is the --dropped-output file, nil without one; dropMask selects the dropped rows.
	side     *sideoutput.File
	sidePath string
	dropMask *array.BooleanBuilder
}

// New validates cfg. Errors are usage errors naming the flag.
func New(cfg Config) (*Dedup, error) {
	if cfg.TTL > 0 && cfg.EventTime == "" {
		return nil, stage.Usagef("dedup: --ttl needs --event-time (or use --ttl-processing)")
	}
	if cfg.TTL > 0 && cfg.TTLProcessing > 0 {
		return nil, stage.Usagef("dedup: give --ttl or --ttl-processing, not both")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--ttl", cfg.TTL}, {"--ttl-processing", cfg.TTLProcessing}, {"--watermark-delay", cfg.WatermarkDelay}} {
		if d.v < 0 {
			return nil, stage.Usagef("dedup: %s must be ≥ 0, got %v", d.flag, d.v)
		}
	}
	if cfg.DroppedOutput != "" {
		if err := sideoutput.Check("dedup: --dropped-output", cfg.DroppedOutput); err != nil {
			return nil, err
		}
	}
	return &Dedup{cfg: cfg, store: state.NewStore[entry](entryCodec{})}, nil
}

func (d *Dedup) keyPaths(in *arrow.Schema) []string {
	if len(d.cfg.Key) > 0 {
		return d.cfg.Key
	}
	return codec.Info(in).Key // nil: all columns
}

// ResolveState returns the options that shape dedup's state, with the key as resolved against
// the input schema.
func (d *Dedup) ResolveState(in *arrow.Schema) (map[string]string, error) {
	enc, err := codec.NewKeyEncoder(in, d.keyPaths(in))
	if err != nil {
		return nil, stage.Usagef("dedup: --key: %v", err)
	}
	opts := map[string]string{
		"key":            strings.Join(enc.Names(), ","),
		"event-time":     d.cfg.EventTime,
		"ttl":            d.cfg.TTL.String(),
		"ttl-processing": d.cfg.TTLProcessing.String(),
	}
	// How event times are read shapes the first-seen times in the state: another unit or zone
	// would expire every key at once (or never). A checkpoint written before they were
	// recorded has neither, and takes any (state.LaterOptions).
	opts["time-unit"] = d.cfg.TimeUnit
	opts["tz"] = ""
	if d.cfg.Location != nil {
		opts["tz"] = d.cfg.Location.String()
	}
	return opts, nil
}

// Open resolves the key and event-time columns and restores state as of the committed epoch.
func (d *Dedup) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	d.env = env
	env.MarkStateful()
	var err error
	if d.enc, err = codec.NewKeyEncoder(in, d.keyPaths(in)); err != nil {
		return nil, stage.Usagef("dedup: --key: %v", err)
	}
	if err := env.Shard.CheckKey("dedup: --key", d.keyPaths(in)); err != nil {
		return nil, err
	}
	if d.cfg.EventTime != "" {
		opt := window.TimeOptions{Location: d.cfg.Location}
		if d.cfg.TimeUnit != "" {
			if opt.Unit, err = window.ParseEpochUnit(d.cfg.TimeUnit); err != nil {
				return nil, stage.Usagef("dedup: --time-unit: %v", err)
			}
		}
		if d.times, err = window.NewTimeExtractor(in, d.cfg.EventTime, opt); err != nil {
			return nil, stage.Usagef("dedup: --event-time: %v", err)
		}
	}
	if d.times != nil && d.cfg.TTL > 0 && env.Shard.IsShard() && !env.Shard.Progress {
		env.Log.Warn("dedup runs as a shard of keyby --shards behind another command: keyby cannot send it the stream's event-time progress, so its watermark comes from its own rows only and keys may expire later than in one dedup; name dedup itself after -- for one dedup's rows")
	}
	d.wm = window.NewWatermarks(window.WatermarkOptions{Generate: d.times != nil, Delay: d.cfg.WatermarkDelay})
	d.wm.Register(0, env.Now())
	d.mask = array.NewBooleanBuilder(env.Mem)
	defer func() { d.epochWM = d.wm.Current() }()
	var x extra
	if env.Dir != nil && env.Committed > 0 {
		man, err := d.store.Restore(env.Mem, env.Dir.Path, env.Committed)
		if err != nil {
			return nil, err
		}
		if len(man.Extra) > 0 {
			if err := json.Unmarshal(man.Extra, &x); err != nil {
				return nil, fmt.Errorf("dedup: restore epoch %d: %w", env.Committed, err)
			}
		}
		if x.Watermark != window.MinTime && x.Watermark != 0 {
			d.wm.Upstream(x.Watermark)
		}
	}
	if d.cfg.DroppedOutput != "" {
		if d.sidePath, err = filepath.Abs(sideoutput.Path(d.cfg.DroppedOutput, env.Shard.Name())); err != nil {
			return nil, fmt.Errorf("dedup: --dropped-output: %w", err)
		}
		var ckpt storage.Store
		if env.Dir != nil {
			ckpt = env.Dir.Store()
		}
		if d.side, err = sideoutput.Reopen("dedup: --dropped-output", d.sidePath, in, env.Mem, ckpt, sideoutput.StartFile, x.Dropped); err != nil {
			return nil, err
		}
		d.dropMask = array.NewBooleanBuilder(env.Mem)
	}
	env.Stats.StateKeys.Store(int64(d.store.Len()))
	env.Stats.StateBytes.Store(d.store.Bytes())
	info := codec.Info(in)
	if d.cfg.EventTime != "" && info.EventTime == "" {
		info.EventTime = d.cfg.EventTime
	}
	return codec.WithShardEventTime(codec.WithInfo(in, info), d.shardEventTime()), nil
}

// shardEventTime is what dedup declares to keyby --shards in its output schema
// (codec.SchemaShardEventTime): its event-time column as a shard that generates its
// watermark from it, so keyby sends it the stream's progress (ObserveProgress); nothing
// outside shards or without --event-time.
func (d *Dedup) shardEventTime() codec.ShardEventTimeColumn {
	if d.times == nil || !d.env.Shard.IsShard() {
		return codec.ShardEventTimeColumn{}
	}
	e := codec.ShardEventTimeColumn{Column: d.cfg.EventTime, Unit: d.cfg.TimeUnit}
	if d.cfg.Location != nil {
		e.TZ = d.cfg.Location.String()
	}
	return e
}

// Process keeps the rows whose key was not seen before.
func (d *Dedup) Process(ctx context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if d.times != nil {
		var err error
		if d.ts, d.tsOK, err = d.times.Extract(rec, d.ts, d.tsOK); err != nil {
			return fmt.Errorf("dedup: --event-time %s: %w", d.cfg.EventTime, err)
		}
	}
	now := d.env.Now().UnixMicro()
	// Rows without a usable event time expire from the watermark as it stood before this
	// batch: the same in one process and in every shard of keyby --shards (which learn the
	// other shards' event times between batches, see ObserveProgress).
	startWM := d.wm.Current()
	cols := d.enc.Columns(rec)
	d.mask.Reserve(n)
	if d.side != nil {
		d.dropMask.Reserve(n)
	}
	// The keys of the whole batch, so that the store can overlap their lookups.
	d.keyBuf, d.keyEnds = codec.AppendRows(d.keyBuf[:0], d.keyEnds[:0], cols, n)
	d.keys = d.keys[:0]
	for r, start := 0, 0; r < n; r++ {
		d.keys = append(d.keys, d.keyBuf[start:d.keyEnds[r]])
		start = d.keyEnds[r]
	}
	// With --ttl, rows older than the watermark of the epoch's start are late (Spark's
	// dropDuplicatesWithinWatermark drops them): their key may have expired already, so
	// keeping one would let it in again and then swallow a later, on-time row as its
	// duplicate. They go to --dropped-output and are counted. The watermark of the last
	// barrier is the same in a replay and in every shard of keyby --shards.
	late := 0
	if d.times != nil && d.cfg.TTL > 0 && d.epochWM != window.MinTime {
		d.late = growBools(d.late, n)
		for r := range n {
			l := d.tsOK[r] && d.ts[r] < d.epochWM
			d.late[r] = l
			if l {
				late++
			}
		}
	}
	// keys are the on-time rows' keys; d.rows maps them back to rows when some are late.
	keys := d.keys
	if late > 0 {
		d.onTime, d.rows = d.onTime[:0], d.rows[:0]
		for r := range n {
			if !d.late[r] {
				d.onTime = append(d.onTime, d.keys[r])
				d.rows = append(d.rows, r)
			}
		}
		keys = d.onTime
	}
	kept, next := 0, 0
	// lateUpTo appends the mask entries of the late rows before row r.
	lateUpTo := func(r int) {
		for ; next < r; next++ {
			d.mask.UnsafeAppend(false)
			if d.side != nil {
				d.dropMask.UnsafeAppend(true)
			}
		}
		next = r + 1
	}
	d.store.PutIfAbsentAll(keys, func(i int) int64 {
		r := i
		if late > 0 {
			r = d.rows[i]
		}
		switch {
		case d.times != nil && d.tsOK[r]:
			return d.ts[r]
		case d.times != nil:
			return max(startWM, noTime+1) // no usable event time: expire from the watermark
		case d.cfg.TTLProcessing > 0:
			return now
		}
		return noTime
	}, func(i int, inserted bool) {
		if late > 0 {
			lateUpTo(d.rows[i])
		}
		d.mask.UnsafeAppend(inserted)
		if d.side != nil {
			d.dropMask.UnsafeAppend(!inserted)
		}
		if inserted {
			kept++
		}
	})
	if late > 0 {
		lateUpTo(n)
		d.lateDropped += int64(late)
		d.env.Stats.Reject(stage.DroppedLateRow, int64(late))
	}
	// Every row's event time moves the watermark, the duplicates' too (as Spark's
	// withWatermark before dropDuplicatesWithinWatermark): keyby can then tell every shard the
	// stream's progress without knowing which rows the shards keep.
	if d.times != nil {
		for r, ok := range d.tsOK[:n] {
			if ok {
				d.wm.Observe(0, d.ts[r])
			}
		}
	}
	mask := d.mask.NewBooleanArray()
	defer mask.Release()
	d.dropped += int64(n - kept - late)
	d.env.Stats.StateKeys.Store(int64(d.store.Len()))
	d.env.Stats.StateBytes.Store(d.store.Bytes())
	ctx = compute.WithAllocator(ctx, d.env.Mem)
	if d.side != nil {
		drop := d.dropMask.NewBooleanArray()
		defer drop.Release()
		if kept < n {
			if err := d.writeDropped(ctx, rec, drop, kept == 0); err != nil {
				return err
			}
		}
	}
	switch kept {
	case 0:
		return nil
	case n:
		rec.Retain()
		return emit(rec)
	}
	out, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return fmt.Errorf("dedup: filter: %w", err)
	}
	return emit(codec.CarryMetadata(out, rec)) // the source partition of the rows, if named
}

// writeDropped writes the rows of rec selected by drop (all of them when all) to the
// --dropped-output file.
func (d *Dedup) writeDropped(ctx context.Context, rec arrow.RecordBatch, drop *array.Boolean, all bool) error {
	if all {
		return d.side.Write(rec)
	}
	out, err := compute.FilterRecordBatch(ctx, rec, drop, compute.DefaultFilterOptions())
	if err != nil {
		return fmt.Errorf("dedup: filter: %w", err)
	}
	defer out.Release()
	return d.side.Write(out)
}

// ObserveProgress takes the latest event time of the whole stream, sent by keyby --shards to
// its shards between batches (stage.ProgressObserver), as an observed event time.
func (d *Dedup) ObserveProgress(t time.Time) {
	if d.times != nil {
		d.wm.Observe(0, t.UnixMicro())
	}
}

// Watermark merges an upstream watermark.
func (d *Dedup) Watermark(_ context.Context, wm time.Time, _ stage.Emit) error {
	d.wm.Upstream(wm.UnixMicro())
	return nil
}

// OutputWatermark is the merged watermark (upstream and generated).
func (d *Dedup) OutputWatermark() (time.Time, bool) {
	cur := d.wm.Current()
	if cur == window.MinTime || cur == d.lastOut {
		return time.Time{}, false
	}
	d.lastOut = cur
	return time.UnixMicro(cur).UTC(), true
}

// expire forgets keys whose TTL has passed; called at barriers so replays expire at the same
// points of the stream.
func (d *Dedup) expire() {
	var limit int64
	var ttl time.Duration
	switch {
	case d.cfg.TTL > 0:
		limit, ttl = d.wm.Current(), d.cfg.TTL
	case d.cfg.TTLProcessing > 0:
		limit, ttl = d.env.Now().UnixMicro(), d.cfg.TTLProcessing
	default:
		return
	}
	if limit == window.MinTime {
		return
	}
	cut := limit - ttl.Microseconds()
	d.store.DeleteFunc(func(_ string, first int64) bool { return first != noTime && first <= cut })
}

// Barrier expires keys, syncs the --dropped-output file and checkpoints the state of the
// epoch (with the file's size, so a restart resumes it exactly there).
func (d *Dedup) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	d.expire()
	d.epochWM = d.wm.Current()
	d.env.Stats.StateKeys.Store(int64(d.store.Len()))
	d.env.Stats.StateBytes.Store(d.store.Bytes())
	x := extra{Watermark: d.wm.Current()}
	if d.side != nil {
		var err error
		if x.Dropped, err = d.side.Mark(d.sidePath); err != nil {
			return fmt.Errorf("dedup: --dropped-output: %w", err)
		}
	}
	if d.env.Dir == nil {
		d.store.Discard() // no changelog to write: free the deleted keys
		return nil
	}
	return d.store.Checkpoint(d.env.Mem, d.env.Dir, n, x)
}

// End: nothing is buffered; state is kept (pause) or not needed any more (final).
func (d *Dedup) End(context.Context, codec.EndKind, stage.Emit) error {
	d.env.Log.Info("dedup done", "keys", d.store.Len(), "duplicates_dropped", d.dropped, "late_rows_dropped", d.lateDropped)
	if d.lateDropped > 0 && d.side == nil {
		d.env.Log.Warn("rows older than the watermark were dropped as late and no --dropped-output was given; they are counted above",
			"late_rows_dropped", d.lateDropped)
	}
	return nil
}

// Close releases the mask builders and closes the --dropped-output file.
func (d *Dedup) Close() error {
	if d.mask != nil {
		d.mask.Release()
	}
	if d.dropMask != nil {
		d.dropMask.Release()
	}
	if d.side != nil {
		return d.side.Close()
	}
	return nil
}

// Command returns the cobra command of `streamkit dedup`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit dedup`: its usage, help, flags and examples (docs/cli/dedup.md).
func CommandSpec() cli.Spec {
	var cfg Config
	var key, tz string
	o := stage.Options{Tool: "dedup", Stateful: true}
	return cli.Spec{
		Use:   "dedup",
		Short: "Drop duplicate rows by key, with state bounded by a TTL",
		Long: `dedup keeps the first row of each key and drops later ones. The key is --key (dot paths),
else the key declared by keyby, else all columns.

State is bounded by --ttl with --event-time: a key is forgotten once the watermark passes its
first event time + TTL (Spark's dropDuplicatesWithinWatermark). The watermark is the later of
the upstream watermark and max event time (of every row, duplicates too) − --watermark-delay;
rows without an event time expire TTL after the watermark before their batch. As in Spark, a
row older than the watermark at the last barrier is late: its key may have been forgotten
already, so it is not kept (it would let an old duplicate in, which would then drop a later
on-time row): it goes to --dropped-output and is counted (late_rows_dropped). As a shard of
keyby --shards, dedup is told the latest event time of the whole stream after each batch, so
its watermark is that of one dedup. --ttl-processing forgets keys by
the wall clock instead (not reproducible on replay). Expired keys are forgotten at each barrier
(so a replay forgets them at the same points): a key is forgotten between TTL and TTL + the
source's --epoch-interval after it was first seen (sources cut epochs on time also while
idle), so a duplicate arriving in that span is still dropped; keep --epoch-interval well below
--ttl-processing where that matters. reading a backlog, cap the source's epochs
(read-kafka --max-records-per-epoch) to bound the state. Without a TTL the state grows with the
number of keys; the status line shows it.

--dropped-output FILE keeps the dropped duplicates (and the late rows) for audits: an Arrow IPC stream (.arrow) or
JSON lines (.ndjson); a .ndjson file is appended to, an existing .arrow file is refused. With a
checkpoint the file is synced at every barrier and a restart continues it from the committed
epoch, so it holds every dropped row of the committed epochs exactly once. As a shard of keyby
--shards, shard i writes FILE with .shard-i before the extension (dropped.shard-0.ndjson).

State is checkpointed at every barrier (changelog + periodic snapshot); a restart resumes from
the committed epoch, and a restart with another key or TTL is refused.`,
		Examples: []string{
			"# Exactly-once dedup of Kafka records by a field of the JSON value\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format json --value-schema orders.json | streamkit dedup --key value.order_id | streamkit print",
			"# Forget keys an hour (event time) after their first occurrence\nstreamkit read-files 'events/*.json' | streamkit dedup --key id --event-time ts --ttl 1h --watermark-delay 5m | streamkit print",
			"# Keep the dropped duplicates as JSON lines for an audit\nstreamkit read-files 'events/*.json' | streamkit dedup --key id --dropped-output dropped.ndjson | streamkit print",
		},
		Args: cli.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			if cmd.Flags().Changed("key") {
				k, err := cli.KeyList("dedup: --key", key)
				if err != nil {
					return err
				}
				cfg.Key = k
			}
			if tz != "" {
				loc, err := time.LoadLocation(tz)
				if err != nil {
					return stage.Usagef("dedup: --tz %q: %v", tz, err)
				}
				cfg.Location = loc
			}
			d, err := New(cfg)
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, d)
		},
		Flags: func(f *pflag.FlagSet) {
			f.StringVar(&key, "key", "", "key columns, comma-separated dot paths (default: the declared key, else all columns)")
			f.StringVar(&cfg.EventTime, "event-time", "", "event-time column for --ttl (timestamp, epoch integer with --time-unit, or RFC 3339 text)")
			f.StringVar(&cfg.TimeUnit, "time-unit", "", "unit of an integer event-time column: s, ms, us or ns")
			cli.Choices(f, "time-unit", "s", "ms", "us", "ns")
			f.StringVar(&tz, "tz", "", "time zone of zone-less event times (e.g. UTC, America/New_York); never the machine's zone")
			cli.DurationVar(f, &cfg.TTL, "ttl", 0, "forget a key once the watermark passes its first event time + TTL (0: never)")
			cli.DurationVar(f, &cfg.WatermarkDelay, "watermark-delay", 0, "bounded out-of-orderness: watermark = max event time − delay")
			cli.DurationVar(f, &cfg.TTLProcessing, "ttl-processing", 0, "forget a key this long after it was first seen, by the wall clock, at the next barrier (so up to one --epoch-interval later; 0: never)")
			f.StringVar(&cfg.DroppedOutput, "dropped-output", "", "file for the dropped duplicates and late rows: .arrow (Arrow IPC stream) or .ndjson (JSON lines)")
			cli.StageFlags(f, &o)
		},
	}
}

// growBools returns s with length n (contents unspecified), reusing its memory.
func growBools(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
