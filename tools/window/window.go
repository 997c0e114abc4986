// Package window is the `streamkit window` tool: keyed tumbling, sliding, session, count and
// global windows with watermarks, allowed lateness and a late side output (Flink DataStream
// window semantics, carried over a pipe). The logic lives in the window package; this is the
// wiring into the stage loop.
package window

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/duration"
	"github.com/streamkit/streamkit/sink/sideoutput"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/tools/cli"
	"github.com/streamkit/streamkit/window"
	"github.com/streamkit/streamkit/window/checkpoint"
)

// Spec is what the command line says about the windows; Build turns it into a window.Config.
type Spec struct {
	Kind           string // tumbling|sliding|session|count|global
	Size, Slide    time.Duration
	Offset, Gap    time.Duration
	CountSize      int64
	CountSlide     int64
	Key            []string // empty: the declared key, else one global key
	Time           string   // event-time column (--event-time); "" with ProcessingTime
	TimeUnit       string
	TZ             string
	ProcessingTime bool
	WatermarkDelay time.Duration
	IdleTimeout    time.Duration
	Agg            string
	Lateness       time.Duration
	LateOutput     string
	Emit           string // final|update
	Every          time.Duration
	Trigger        string // global: interval:D
	// PartitionCol names the source-partition columns for per-partition watermarks of input
	// batches that do not name their partition (read-kafka's do, codec.KeyPartition): "auto"
	// (default: topic,partition when present), "none" (one watermark, tags ignored too), or
	// comma-separated paths.
	PartitionCol string
}

// Op is the window operator.
type Op struct {
	spec Spec
	loc  *time.Location
	asg  *window.Assigner
	aggs []window.AggCall
	m    *window.Manager
	st   *checkpoint.Store
	env  *stage.Env
	late *sideoutput.File
	// latePath is the late side output's absolute path, the one its marks name.
	latePath string
	lastOut  int64
	tick     time.Duration
}

// New validates the spec (usage errors name the flag).
func New(s Spec) (*Op, error) {
	o := &Op{spec: s}
	var err error
	if s.TZ != "" {
		if o.loc, err = time.LoadLocation(s.TZ); err != nil {
			return nil, stage.Usagef("window: --tz %q: %v", s.TZ, err)
		}
	}
	if s.Time == "" && !s.ProcessingTime && s.Kind != "count" && s.Kind != "global" {
		return nil, stage.Usagef("window %s: give the event-time column with --event-time, or --processing-time", s.Kind)
	}
	if s.Time != "" && s.ProcessingTime {
		return nil, stage.Usagef("window: --event-time and --processing-time exclude each other")
	}
	switch s.Kind {
	case "tumbling":
		o.asg, err = window.NewTumbling(s.Size, s.Offset, o.loc)
	case "sliding":
		o.asg, err = window.NewSliding(s.Size, s.Slide, s.Offset, o.loc)
	case "session":
		o.asg, err = window.NewSession(s.Gap)
	case "count":
		slide := s.CountSlide
		if slide == 0 {
			slide = s.CountSize
		}
		o.asg, err = window.NewCount(s.CountSize, slide)
	case "global":
		o.asg = window.NewGlobal()
		if c, ok := strings.CutPrefix(s.Trigger, "every:"); ok {
			n, perr := strconv.ParseInt(c, 10, 64)
			if perr != nil {
				return nil, stage.Usagef("window global: --trigger every:N needs a whole number, got %q", s.Trigger)
			}
			o.asg, err = window.NewGlobalEvery(n)
		} else if s.Trigger != "" {
			d, ok := strings.CutPrefix(s.Trigger, "interval:")
			every, perr := duration.Parse(d)
			if !ok || perr != nil || every <= 0 {
				return nil, stage.Usagef("window global: --trigger must be every:N or interval:DURATION (e.g. interval:1m), got %q", s.Trigger)
			}
			o.spec.Emit, o.spec.Every = "update", every
		}
	default:
		return nil, stage.Usagef("window: unknown window kind %q", s.Kind)
	}
	if err != nil {
		return nil, stage.Usagef("window %s: %v", s.Kind, err)
	}
	agg := s.Agg
	if agg == "" {
		agg = "count"
	}
	if o.aggs, err = window.ParseAggs(agg); err != nil {
		return nil, stage.Usagef("window: --agg: %v", err)
	}
	switch o.spec.Emit {
	case "", "final":
	case "update":
		if o.spec.Every <= 0 {
			return nil, stage.Usagef("window: --emit update needs --every DURATION")
		}
	default:
		return nil, stage.Usagef("window: --emit must be final or update, got %q", s.Emit)
	}
	if s.LateOutput != "" {
		if err := sideoutput.Check("window: --late-output", s.LateOutput); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// partitionPaths resolves --partition-col against the input schema.
func (o *Op) partitionPaths(in *arrow.Schema) []string {
	switch pc := o.spec.PartitionCol; pc {
	case "none":
		return nil
	case "", "auto":
		t, p := in.FieldIndices("topic"), in.FieldIndices("partition")
		if len(t) == 1 && len(p) == 1 && in.Field(p[0]).Type.ID() == arrow.INT32 && in.Field(t[0]).Type.ID() == arrow.STRING {
			return []string{"topic", "partition"} // read-kafka's columns (Spark's Kafka source)
		}
		return nil
	default:
		var out []string
		for _, c := range strings.Split(pc, ",") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
		return out
	}
}

func (o *Op) keyPaths(in *arrow.Schema) []string {
	if len(o.spec.Key) > 0 {
		return o.spec.Key
	}
	return codec.Info(in).Key
}

// ResolveState lists the options that shape window state; a restart with others is refused.
func (o *Op) ResolveState(in *arrow.Schema) (map[string]string, error) {
	opts := map[string]string{
		"window":           o.asg.String(),
		"key":              strings.Join(o.keyPaths(in), ","),
		"time":             o.spec.Time, // --event-time; the key keeps the flag's old name, so checkpoints stay valid
		"time-unit":        o.spec.TimeUnit,
		"tz":               o.spec.TZ,
		"agg":              o.spec.Agg,
		"allowed-lateness": o.spec.Lateness.String(),
	}
	if p := o.partitionPaths(in); len(p) > 0 { // recorded only when used: older checkpoints stay valid
		opts["partition"] = strings.Join(p, ",")
	}
	return opts, nil
}

// Open builds the window manager for the input schema and restores its state.
func (o *Op) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	o.env = env
	env.MarkStateful()
	if err := env.Shard.CheckKey("window: --key", o.keyPaths(in)); err != nil {
		return nil, err
	}
	cfg := window.Config{
		Assigner:        o.asg,
		Key:             o.keyPaths(in),
		Time:            o.spec.Time,
		TimeOptions:     window.TimeOptions{Location: o.loc},
		Aggs:            o.aggs,
		AllowedLateness: o.spec.Lateness,
		Watermark:       window.WatermarkOptions{Generate: o.spec.Time != "", Delay: o.spec.WatermarkDelay, IdleTimeout: o.spec.IdleTimeout},
		Partition:       o.partitionPaths(in),
		Partitions:      codec.Info(in).Partitions,
		OnePartition:    o.spec.PartitionCol == "none",
		Now:             env.Now,
		Mem:             env.Mem,
		Changelog:       env.Dir != nil,
	}
	if o.spec.TimeUnit != "" {
		u, err := window.ParseEpochUnit(o.spec.TimeUnit)
		if err != nil {
			return nil, stage.Usagef("window: --time-unit: %v", err)
		}
		cfg.TimeOptions.Unit = u
	}
	if o.spec.Emit == "update" {
		cfg.Emit, cfg.Every = window.EmitUpdate, o.spec.Every
	}
	m, err := window.New(in, cfg)
	if err != nil {
		return nil, stage.Usagef("window: %v", err)
	}
	o.m = m
	o.st = &checkpoint.Store{M: m}
	if env.Dir != nil && env.Committed > 0 {
		if err := o.st.Restore(env.Mem, env.Dir.Path, env.Committed); err != nil {
			return nil, err
		}
	}
	if o.spec.LateOutput != "" {
		// Resumed where the committed epoch left it, so a restart neither drops the late rows
		// of committed epochs (an Arrow file was created anew) nor repeats those of replayed
		// ones (JSON lines were appended to).
		const flag = "window: --late-output"
		if o.latePath, err = filepath.Abs(sideoutput.Path(o.spec.LateOutput, env.Shard.Name())); err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		var mark *sideoutput.Mark
		if raw := m.LateOutput(); raw != nil {
			if err := json.Unmarshal(raw, &mark); err != nil {
				return nil, fmt.Errorf("%s: restore epoch %d: %w", flag, env.Committed, err)
			}
		}
		var ckpt storage.Store
		if env.Dir != nil {
			ckpt = env.Dir.Store()
		}
		if o.late, err = sideoutput.Reopen(flag, o.latePath, in, env.Mem, ckpt, lateStartFile, mark); err != nil {
			return nil, err
		}
	}
	// Tick often enough for idle timeouts, gaps and early firings measured in processing time.
	o.tick = time.Second
	for _, d := range []time.Duration{o.spec.IdleTimeout / 4, o.spec.Every / 4} {
		if d > 0 && d < o.tick {
			o.tick = max(d, 10*time.Millisecond)
		}
	}
	if o.spec.ProcessingTime && o.spec.Gap > 0 && o.spec.Gap/4 < o.tick {
		o.tick = max(o.spec.Gap/4, 10*time.Millisecond)
	}
	out := m.Schema()
	info := codec.Info(out)
	info.Key = cfg.Key
	info.EventTime = "window_end"
	st := m.Stats()
	env.Stats.StateKeys.Store(int64(st.Windows))
	env.Stats.StateBytes.Store(st.StateBytes)
	return codec.WithInfo(out, info), nil
}

func (o *Op) flush(emit stage.Emit) error {
	out := o.m.TakeOutput()
	if err := o.m.Err(); err != nil {
		// An aggregate has no valid result (sum overflow): fail before emitting anything.
		for _, r := range out {
			r.Release()
		}
		return fmt.Errorf("window: %w", err)
	}
	for i, rec := range out {
		if err := emit(rec); err != nil {
			for _, r := range out[i+1:] {
				r.Release()
			}
			return err
		}
	}
	st := o.m.Stats()
	o.env.Stats.StateKeys.Store(int64(st.Windows))
	o.env.Stats.StateBytes.Store(st.StateBytes)
	return nil
}

// Process assigns the batch's rows to windows; fired windows are emitted, late rows and rows
// without a usable event time go to the side output (counted, never silently dropped).
func (o *Op) Process(_ context.Context, rec arrow.RecordBatch, emit stage.Emit) error {
	rej, err := o.m.Process(rec)
	if err != nil {
		return err
	}
	if n := len(rej.Late) + len(rej.BadTime); n > 0 {
		o.env.Stats.Reject(stage.LateRow, int64(len(rej.Late)))
		o.env.Stats.Reject(stage.BadTimeRow, int64(len(rej.BadTime)))
		if o.late != nil {
			for _, rows := range [][]int32{rej.Late, rej.BadTime} {
				if len(rows) == 0 {
					continue
				}
				side, err := window.TakeRows(o.env.Mem, rec, rows)
				if err != nil {
					return err
				}
				err = o.late.Write(side)
				side.Release()
				if err != nil {
					return err
				}
			}
		} else if len(rej.BadTime) > 0 || len(rej.Late) > 0 {
			o.env.Log.Debug("late rows without --late-output", "late", len(rej.Late), "bad_time", len(rej.BadTime))
		}
	}
	return o.flush(emit)
}

// Watermark merges an upstream watermark; windows it passes fire.
func (o *Op) Watermark(_ context.Context, wm time.Time, emit stage.Emit) error {
	o.m.OnWatermark(window.Micros(wm))
	return o.flush(emit)
}

// OutputWatermark is the window's watermark, forwarded downstream.
func (o *Op) OutputWatermark() (time.Time, bool) {
	wm := o.m.Watermark()
	if wm == window.MinTime || wm <= o.lastOut {
		return time.Time{}, false
	}
	o.lastOut = wm
	return window.TimeOf(wm), true
}

// TickInterval is how often processing time is checked.
func (o *Op) TickInterval() time.Duration { return o.tick }

// lateStartFile is the checkpoint file where --late-output records the size the file had
// when this checkpoint first opened it (sideoutput.Reopen).
const lateStartFile = "late-output-start.json"

// Tick advances processing time: idle inputs, heartbeat sessions, early firings.
func (o *Op) Tick(_ context.Context, _ time.Time, emit stage.Emit) error {
	o.m.OnProcessingTime()
	return o.flush(emit)
}

// Barrier checkpoints the window state of epoch n and syncs the side output.
func (o *Op) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	if o.late != nil {
		mark, err := o.late.Mark(o.latePath)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(mark)
		if err != nil {
			return err
		}
		o.m.SetLateOutput(raw)
	}
	if o.env.Dir == nil {
		return nil
	}
	return o.st.Checkpoint(o.env.Mem, o.env.Dir, n)
}

// End fires every open window at a final end; a pause keeps them for the next run in the
// checkpoint. Without a checkpoint there is no next run to keep them for, so a pause fires them
// as a final end does (logged once: the rows would otherwise be lost while every stage exits 0).
func (o *Op) End(_ context.Context, kind codec.EndKind, emit stage.Emit) error {
	open := o.m.Stats()
	switch {
	case kind == codec.Final:
		o.m.Final()
	case open.Windows == 0:
	case o.env.Dir == nil:
		o.env.Log.Warn("end=pause but this window keeps no checkpoint, so nothing is kept for a next run: the open windows fire now as at end=final",
			"open_windows", open.Windows, "keys", open.Keys)
		o.m.Final()
	default:
		o.env.Log.Info("end=pause with open windows: they stay in the checkpoint and the next run continues them",
			"open_windows", open.Windows, "keys", open.Keys, "checkpoint", o.env.Dir.Path)
	}
	st := o.m.Stats()
	o.env.Log.Info("window done", "records", st.Records, "on_time", st.OnTime, "late_update", st.LateUpdate,
		"late", st.Late, "bad_time", st.BadTime, "open_windows", st.Windows)
	if st.Late+st.BadTime > 0 && o.late == nil {
		o.env.Log.Warn("rows were late or had no usable event time and no --late-output was given; they are counted above",
			"late", st.Late, "bad_time", st.BadTime)
	}
	return o.flush(emit)
}

// Close releases the manager and closes the side output.
func (o *Op) Close() error {
	if o.m != nil {
		o.m.Release()
	}
	if o.late != nil {
		return o.late.Close()
	}
	return nil
}

// Command returns the cobra command group `streamkit window KIND`.
func Command() *cobra.Command { return cli.Command(CommandSpec()) }

// CommandSpec declares `streamkit window` and its subcommands, one per window kind: their usage,
// help, flags and examples (docs/cli/window.md).
func CommandSpec() cli.Spec {
	var kinds []cli.Spec
	for _, kind := range []string{"tumbling", "sliding", "session", "count", "global"} {
		kinds = append(kinds, kindSpec(kind))
	}
	return cli.Spec{
		Use:   "window tumbling|sliding|session|count|global",
		Short: "Keyed windows with watermarks, allowed lateness and a late side output",
		Long: `window groups rows by key into windows and emits one row per (key, window) with the
aggregates: window_start, window_end (timestamp µs UTC), the key columns, the aggregates, and
emit (on_time, late_update or early). The semantics are Flink's DataStream windows.

Event time comes from --event-time (a timestamp column, epoch integers with --time-unit, or RFC 3339
text; zone-less values need --tz). The watermark is the later of the upstream watermark and
max event time − --watermark-delay, kept per source partition (the minimum over partitions that
are not idle, --idle-timeout): read-kafka names the partition of every batch, whatever its
--columns keep, and the partitions with a backlog hold the watermark back until they deliver.
A window fires when the watermark passes the window's end. With
--allowed-lateness a fired window is kept until end + lateness and late rows update it
(late_update); rows later than that go to --late-output and are counted, never dropped
silently. --processing-time windows on the wall clock instead: a processing-time session
window is a heartbeat monitor.

Aggregates follow Spark SQL in ANSI mode: sum of integers is a bigint and fails the stage
(exit 1, ARITHMETIC_OVERFLOW, naming the key and the window) when it leaves the bigint range;
try_sum(x) gives null for that window instead. sum of floats is a double (±Inf on overflow),
avg a double. min and max order NaN above every other float (+Inf included); nulls are
skipped. Decimal columns are not summed yet (refused).

All aggregates, with Spark's names, arguments and result types (nulls are skipped):
  count, count(*), count(x)          rows, or non-null x (bigint)
  sum(x), try_sum(x), avg(x)         as above
  min(x), max(x), first(x), last(x)  x's type; first/last by event time
  count_distinct(x)                  exact distinct count (bigint); keeps every distinct value
  approx_count_distinct(x[, rsd])    HyperLogLog estimate (bigint), relative standard
                                     deviation rsd (default 0.05: 512 registers per window);
                                     within Spark's error bound, but not Spark's number (the
                                     hash differs)
  median(x), percentile(x, p)        exact, interpolated (double; p may be array(p1, …) for an
                                     array); keep every value of the window, so memory grows
                                     with the window's rows
  percentile_approx(x, p[, acc])     a value of x within rank error ⌈n/acc⌉ (acc default
                                     10000) of rank ⌈p·n⌉, x's type; Spark's Greenwald-Khanna
                                     algorithm (its buffer is smaller: answers may differ
                                     from Spark's within the bound), bounded; exact below
                                     acc/2 rows. Also approx_percentile
  stddev(x), stddev_samp, std,       sample and population standard deviation and variance
  stddev_pop, variance, var_samp,    (double); the sample forms are null for one row
  var_pop
  collect_list(x), collect_set(x)    array of the values in arrival order (set: distinct)
  max_by(x, ord), min_by(x, ord)     x of the row with the largest / smallest ord (ties: the
                                     later row)

End of input: end=final fires every open window; end=pause keeps them in the checkpoint for the
next run (logged with their number). Without a checkpoint nothing can be kept, so end=pause
fires them as end=final does, and a warning says so. State is checkpointed at every barrier; a
restart with another window spec or aggregates is refused.`,
		Commands: kinds,
	}
}

// kindSpec declares `streamkit window KIND`.
func kindSpec(kind string) cli.Spec {
	var s Spec
	var key string
	o := stage.Options{Tool: "window", Stateful: true}
	ex := map[string]string{
		"tumbling": "# Hourly flight counts and delays per origin airport\nstreamkit read-files flights.parquet | streamkit window tumbling --size 1h --event-time date --tz UTC --key origin --agg 'count, avg(delay), max(delay)' | streamkit print",
		"sliding":  "# 10-minute revenue every minute, tolerating 30 s of disorder\nstreamkit read-kafka -b 127.0.0.1:9092 -t orders --value-format json --value-schema orders.json | streamkit window sliding --size 10m --slide 1m --event-time timestamp --watermark-delay 30s --agg 'sum(value.amount) as revenue' | streamkit print",
		"session":  "# Heartbeat monitor: a row when a sensor has been silent for 5 minutes\nstreamkit read-kafka -b 127.0.0.1:9092 -t heartbeats --value-format json --value-schema hb.json | streamkit window session --processing-time --gap 5m --key value.sensor_id --agg 'last(value.sensor_type) as sensor_type, max(timestamp) as last_heartbeat_time' | streamkit print",
		"count":    "# Average of every 100 readings per sensor\nstreamkit read-files 'readings/*.csv' | streamkit window count --size 100 --key sensor --agg 'avg(value)' | streamkit print",
		"global":   "# Running totals per key, emitted every minute\nstreamkit read-files 'sales/*.json' | streamkit window global --key region --trigger interval:1m --agg 'sum(amount)' | streamkit print",
	}
	var required []string
	if kind == "tumbling" || kind == "sliding" {
		required = []string{"size"}
	}
	return cli.Spec{
		Use:      kind,
		Short:    kind + " windows",
		Examples: []string{ex[kind]},
		Args:     cli.NoArgs,
		Required: required,
		Run: func(cmd *cobra.Command, _ []string) error {
			cli.Fill(&o, cmd)
			s.Kind = kind
			if cmd.Flags().Changed("key") {
				k, err := cli.KeyList("window: --key", key)
				if err != nil {
					return err
				}
				s.Key = k
			}
			op, err := New(s)
			if err != nil {
				return err
			}
			return stage.RunOperator(cmd.Context(), o, op)
		},
		Flags: func(f *pflag.FlagSet) {
			switch kind {
			case "tumbling":
				cli.DurationVar(f, &s.Size, "size", 0, "window length (required)")
				cli.DurationVar(f, &s.Offset, "offset", 0, "shift window boundaries by this much")
			case "sliding":
				cli.DurationVar(f, &s.Size, "size", 0, "window length (required)")
				cli.DurationVar(f, &s.Slide, "slide", 0, "distance between window starts (required)")
				cli.DurationVar(f, &s.Offset, "offset", 0, "shift window boundaries by this much")
			case "session":
				cli.DurationVar(f, &s.Gap, "gap", 0, "a session closes after this much inactivity (required)")
			case "count":
				f.Int64Var(&s.CountSize, "size", 0, "rows per window (required)")
				f.Int64Var(&s.CountSlide, "slide", 0, "rows between window starts (default: --size, tumbling)")
			case "global":
				f.StringVar(&s.Trigger, "trigger", "", "early firings of the one window per key: every:N (records of the key) or interval:DURATION (processing time)")
			}
			f.StringVar(&key, "key", "", "key columns, comma-separated dot paths (default: the declared key, else one global key)")
			f.StringVar(&s.Time, "event-time", "", "event-time column: timestamp, epoch integer (with --time-unit) or RFC 3339 text")
			cli.Alias(f, "event-time", "time")
			f.StringVar(&s.TimeUnit, "time-unit", "", "unit of an integer event-time column: s, ms, us or ns")
			cli.Choices(f, "time-unit", "s", "ms", "us", "ns")
			f.StringVar(&s.TZ, "tz", "", "time zone for calendar alignment and zone-less times (e.g. America/Los_Angeles); never the machine's")
			f.BoolVar(&s.ProcessingTime, "processing-time", false, "window on the wall clock instead of an event-time column")
			cli.DurationVar(f, &s.WatermarkDelay, "watermark-delay", 0, "bounded out-of-orderness: watermark = max event time − delay")
			cli.DurationVar(f, &s.IdleTimeout, "idle-timeout", 0, "a source partition silent this long stops holding the watermark back (0: never)")
			f.StringVar(&s.PartitionCol, "partition-col", "auto", "per-partition watermarks (min over source partitions of max event time − delay) come from the partition read-kafka names on every batch, whatever --columns keeps; this names the partition columns of other input: auto (topic,partition when present), none (one watermark for all rows), or dot paths")
			f.StringVar(&s.Agg, "agg", "count", "aggregates, comma-separated, each [as name]: count, count(x), sum(x) (fails on bigint overflow), try_sum(x) (null on overflow), min(x), max(x), avg(x), first(x), last(x), count_distinct(x), approx_count_distinct(x[, rsd]), median(x), percentile(x, p), percentile_approx(x, p[, accuracy]), stddev(x), stddev_pop(x), variance(x), var_pop(x), collect_list(x), collect_set(x), max_by(x, ord), min_by(x, ord) (see window --help)")
			cli.DurationVar(f, &s.Lateness, "allowed-lateness", 0, "keep fired windows this long past their end; late rows emit late_update rows")
			f.StringVar(&s.LateOutput, "late-output", "", "file for rows later than the allowed lateness (.arrow or .ndjson)")
			f.StringVar(&s.Emit, "emit", "final", "final, or update: also emit early partial results every --every")
			cli.Choices(f, "emit", "final", "update")
			cli.DurationVar(f, &s.Every, "every", 0, "early-firing period (processing time) with --emit update")
			cli.StageFlags(f, &o)
		},
	}
}
