// Package codec carries streamkit's wire format: Arrow IPC streams with in-band control batches
// (DESIGN.md §2, docs/protocol.md), and the schema metadata stages pass downstream.
package codec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Metadata keys of control batches (IPC Message custom_metadata) and of the stream schema.
// All keys are namespaced "streamkit." so foreign metadata passes through untouched.
const (
	// KeyControl marks a zero-row batch as a control batch; values: "barrier", "watermark",
	// "progress", "stats", "end".
	KeyControl = "streamkit.control"
	// KeyEpoch is the decimal epoch number (uint64, starting at 1) of a barrier.
	KeyEpoch = "streamkit.epoch"
	// KeyWatermark is the watermark instant, RFC 3339 with exactly 6 fractional digits, UTC ("Z").
	KeyWatermark = "streamkit.watermark"
	// KeyProgress is the event-time instant of a progress batch, as KeyWatermark.
	KeyProgress = "streamkit.progress"
	// KeyEnd is "final" or "pause" on an end batch.
	KeyEnd = "streamkit.end"
	// KeyReason optionally says why an end batch was sent; "interrupt" means a SIGINT/SIGTERM
	// stopped the pipeline, so every downstream stage exits 130 as well.
	KeyReason = "streamkit.reason"
	// KeyStats is the JSON payload of a stats control: one stage's live counters, for the
	// view the last stage of a pipeline draws (docs/protocol.md §2).
	KeyStats = "streamkit.stats"
	// KeyHops, on a stats control, is how many stages forwarded it (decimal, absent = 0): the
	// drawing stage orders the stages of its view by it.
	KeyHops = "streamkit.hops"
	// KeyOffsets, on a barrier of a consumer-group source, is the progress of every source
	// partition that moved during the epoch, as JSON (docs/protocol.md §2, §13); stages
	// forward it with the barrier.
	KeyOffsets = "streamkit.offsets"

	// SchemaKey lists the stream's key columns (comma-separated dot paths), set by keyby.
	SchemaKey = "streamkit.key"
	// SchemaEventTime names the event-time column (a dot path).
	SchemaEventTime = "streamkit.event_time"
	// SchemaCheckpoints lists the absolute checkpoint directories of every upstream stage
	// that keeps a checkpoint, newline-separated; sinks write commit markers into each.
	SchemaCheckpoints = "streamkit.checkpoints"
	// SchemaPartitions lists, newline-separated, the source partitions (names as in
	// KeyPartition) that a source has records to deliver from when it starts: a stage that
	// generates per-partition watermarks lets each of them hold its watermark back until the
	// partition delivers (or goes idle), as Flink's per-split watermarks do. A source that
	// sets it tags every data batch with KeyPartition.
	SchemaPartitions = "streamkit.partitions"

	// KeyPartition, in the custom metadata of a data batch, names the one source partition
	// all the batch's rows come from (read-kafka: "topic/partition"). Stages that forward a
	// batch or a subset of its rows keep it (CarryMetadata), whatever columns the rows keep.
	KeyPartition = "streamkit.partition"

	// SchemaReplayable is "true" when the stream's epochs are replayable: its source keeps a
	// checkpoint (an offsets write-ahead log), so after a restart it numbers its epochs on from
	// the committed one and an epoch number seen again carries the same rows as before (a
	// replay). Absent (or any other value): epochs are numbered from 1 on every run (a source
	// without a checkpoint, a foreign producer), and a sink must not skip an epoch because a
	// previous run committed one with its number. Every stage passes it on unchanged.
	SchemaReplayable = "streamkit.replayable"

	// SchemaGroup is set by a consumer-group source (read-kafka --consumer-group): JSON
	// {"group":G,"flow":F,"table":T} naming the group, the flow of the table's per-partition
	// txn appIds and the progress table (docs/protocol.md §13). Stages pass it on unchanged.
	SchemaGroup = "streamkit.group"
)

// EndOfTime is the watermark a source sends when its input is complete (end=final): every
// event-time window fires (Flink's MAX_WATERMARK). 9999-12-31T23:59:59.999999Z.
var EndOfTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)

// WatermarkLayout is the textual form of watermarks on the wire: RFC 3339, microseconds, UTC.
const WatermarkLayout = "2006-01-02T15:04:05.000000Z"

// Kind is the type of a control batch.
type Kind int

const (
	// Barrier ends epoch Control.Epoch (Flink-style checkpoint barrier, DESIGN.md §3).
	Barrier Kind = iota + 1
	// Watermark promises no record with an earlier event time follows (modulo allowed lateness).
	Watermark
	// End closes the stream; Control.End says whether it is final or a pause.
	End
	// Progress tells a shard of keyby --shards the latest event time of the whole stream so
	// far (Control.Watermark): the rows up to here, of every shard, reached it. A shard that
	// generates its watermark from event times observes it as if it had seen those rows, so
	// that every shard has the watermark one process would have (Flink generates watermarks
	// before the keyBy for the same reason). Only keyby sends it, only to its streamkit
	// children; a stage consumes it and never forwards it.
	Progress
	// Stats carries one upstream stage's live counters (Control.Stats, JSON) to the stage
	// that draws the pipeline's view on the terminal. Every stage forwards it (Hops + 1)
	// unless it draws the view itself; it carries no stream semantics, and a sink ignores it.
	Stats
)

// String returns the wire value of k ("barrier", "watermark", "end").
func (k Kind) String() string {
	switch k {
	case Barrier:
		return "barrier"
	case Watermark:
		return "watermark"
	case End:
		return "end"
	case Progress:
		return "progress"
	case Stats:
		return "stats"
	}
	return "unknown"
}

// EndKind tells how a stream ended.
type EndKind int

const (
	// Final: the input is complete; flush everything (windows fire, state may be dropped).
	// An IPC end-of-stream without an end batch (a foreign producer) means Final.
	Final EndKind = iota + 1
	// Pause: an incremental ("available now") run stops; keep state for the next run.
	Pause
)

// String returns the wire value of e ("final", "pause").
func (e EndKind) String() string {
	if e == Pause {
		return "pause"
	}
	return "final"
}

// Control is one decoded control batch.
type Control struct {
	Kind      Kind
	Epoch     uint64    // Barrier only; epochs start at 1
	Watermark time.Time // Watermark and Progress only; UTC, microsecond precision
	End       EndKind   // End only
	// Interrupted marks an end sent because the pipeline was interrupted (End only).
	Interrupted bool
	// Offsets is the barrier's KeyOffsets (Barrier only): the JSON progress of the source
	// partitions of a consumer-group source, "" when the barrier has none.
	Offsets string
	// Stats is the JSON payload of a stats control (Stats only), Hops how many stages
	// forwarded it.
	Stats string
	Hops  int
}

// String renders c as it is carried on the wire, e.g. "barrier epoch=3".
func (c Control) String() string {
	switch c.Kind {
	case Barrier:
		return fmt.Sprintf("barrier epoch=%d", c.Epoch)
	case Watermark:
		return "watermark " + FormatWatermark(c.Watermark)
	case Progress:
		return "progress " + FormatWatermark(c.Watermark)
	case Stats:
		return fmt.Sprintf("stats hops=%d %s", c.Hops, c.Stats)
	case End:
		if c.Interrupted {
			return "end " + c.End.String() + " (interrupt)"
		}
		return "end " + c.End.String()
	}
	return "unknown control"
}

// BarrierControl returns the control for the end of epoch n.
func BarrierControl(n uint64) Control { return Control{Kind: Barrier, Epoch: n} }

// WatermarkControl returns the control for watermark t (truncated to µs, in UTC). Instants
// after EndOfTime (year 9999, the last RFC 3339 can write: e.g. epoch integers read with the
// wrong unit) are clamped to it.
func WatermarkControl(t time.Time) Control {
	if t.After(EndOfTime) {
		t = EndOfTime
	}
	return Control{Kind: Watermark, Watermark: t.UTC().Truncate(time.Microsecond)}
}

// ProgressControl returns the progress control for event time t (truncated to µs, in UTC,
// clamped to EndOfTime as WatermarkControl).
func ProgressControl(t time.Time) Control {
	c := WatermarkControl(t)
	c.Kind = Progress
	return c
}

// StatsControl returns a stats control carrying payload (JSON), not yet forwarded.
func StatsControl(payload string) Control { return Control{Kind: Stats, Stats: payload} }

// EndControl returns the control for the end of the stream.
func EndControl(e EndKind) Control { return Control{Kind: End, End: e} }

// FormatWatermark formats t as on the wire (RFC 3339, 6 fractional digits, UTC).
func FormatWatermark(t time.Time) string { return t.UTC().Format(WatermarkLayout) }

// Metadata returns the custom metadata that carries c.
func (c Control) Metadata() arrow.Metadata {
	switch c.Kind {
	case Barrier:
		if c.Offsets != "" {
			return arrow.NewMetadata([]string{KeyControl, KeyEpoch, KeyOffsets}, []string{"barrier", strconv.FormatUint(c.Epoch, 10), c.Offsets})
		}
		return arrow.NewMetadata([]string{KeyControl, KeyEpoch}, []string{"barrier", strconv.FormatUint(c.Epoch, 10)})
	case Watermark:
		return arrow.NewMetadata([]string{KeyControl, KeyWatermark}, []string{"watermark", FormatWatermark(c.Watermark)})
	case Progress:
		return arrow.NewMetadata([]string{KeyControl, KeyProgress}, []string{"progress", FormatWatermark(c.Watermark)})
	case Stats:
		if c.Hops > 0 {
			return arrow.NewMetadata([]string{KeyControl, KeyStats, KeyHops}, []string{"stats", c.Stats, strconv.Itoa(c.Hops)})
		}
		return arrow.NewMetadata([]string{KeyControl, KeyStats}, []string{"stats", c.Stats})
	default:
		if c.Interrupted {
			return arrow.NewMetadata([]string{KeyControl, KeyEnd, KeyReason}, []string{"end", c.End.String(), "interrupt"})
		}
		return arrow.NewMetadata([]string{KeyControl, KeyEnd}, []string{"end", c.End.String()})
	}
}

// NewControlBatch returns, allocated from mem, a zero-row record batch of schema s carrying c in its custom metadata.
// The caller releases it.
func NewControlBatch(mem memory.Allocator, s *arrow.Schema, c Control) arrow.RecordBatch {
	cols := make([]arrow.Array, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	rec := array.NewRecordBatchWithMetadata(s, cols, 0, c.Metadata())
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// ParseControl decodes the control carried by rec. ok is false for a data batch (no
// streamkit.control key, or rows > 0 — a batch with rows is always data). A batch that claims
// to be a control batch but has unreadable values yields an error naming the key and value.
func ParseControl(rec arrow.RecordBatch) (c Control, ok bool, err error) {
	if rec.NumRows() != 0 {
		return c, false, nil
	}
	rm, isMeta := rec.(arrow.RecordBatchWithMetadata)
	if !isMeta {
		return c, false, nil
	}
	return ParseControlMetadata(rm.Metadata())
}

// ParseControlMetadata decodes a control from batch custom metadata; see ParseControl.
func ParseControlMetadata(md arrow.Metadata) (c Control, ok bool, err error) {
	kind, has := md.GetValue(KeyControl)
	if !has {
		return c, false, nil
	}
	switch kind {
	case "barrier":
		v, _ := md.GetValue(KeyEpoch)
		n, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil || n == 0 {
			return c, true, fmt.Errorf("control batch: %s=%q is not an epoch number ≥ 1", KeyEpoch, v)
		}
		c = BarrierControl(n)
		c.Offsets, _ = md.GetValue(KeyOffsets)
		return c, true, nil
	case "watermark", "progress":
		key, mk := KeyWatermark, WatermarkControl
		if kind == "progress" {
			key, mk = KeyProgress, ProgressControl
		}
		v, _ := md.GetValue(key)
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			return c, true, fmt.Errorf("control batch: %s=%q is not an RFC 3339 instant", key, v)
		}
		return mk(t), true, nil
	case "stats":
		// Only a view reads the payload, and a bad one costs a row of it, not the stream.
		c = StatsControl("")
		c.Stats, _ = md.GetValue(KeyStats)
		if v, ok := md.GetValue(KeyHops); ok {
			if n, perr := strconv.Atoi(v); perr == nil && n >= 0 {
				c.Hops = n
			}
		}
		return c, true, nil
	case "end":
		v, _ := md.GetValue(KeyEnd)
		reason, _ := md.GetValue(KeyReason)
		switch v {
		case "final", "":
			c = EndControl(Final)
		case "pause":
			c = EndControl(Pause)
		default:
			return c, true, fmt.Errorf("control batch: %s=%q is neither final nor pause", KeyEnd, v)
		}
		c.Interrupted = reason == "interrupt"
		return c, true, nil
	}
	return c, true, fmt.Errorf("control batch: unknown %s=%q (want barrier, watermark, progress, stats or end)", KeyControl, kind)
}

// StreamInfo is what a stream's schema metadata tells downstream stages.
type StreamInfo struct {
	Key         []string // key columns as dot paths; nil when undeclared
	EventTime   string   // event-time column; "" when undeclared
	Checkpoints []string // upstream checkpoint directories, in pipeline order
	Partitions  []string // source partitions declared by the source (SchemaPartitions)
	Replayable  bool     // the epochs are replayable (SchemaReplayable)
}

// Info reads the streamkit keys of s's metadata.
func Info(s *arrow.Schema) StreamInfo {
	var in StreamInfo
	md := s.Metadata()
	if v, ok := md.GetValue(SchemaKey); ok && v != "" {
		in.Key = strings.Split(v, ",")
	}
	if v, ok := md.GetValue(SchemaEventTime); ok {
		in.EventTime = v
	}
	if v, ok := md.GetValue(SchemaCheckpoints); ok && v != "" {
		in.Checkpoints = strings.Split(v, "\n")
	}
	if v, ok := md.GetValue(SchemaPartitions); ok && v != "" {
		in.Partitions = strings.Split(v, "\n")
	}
	if v, ok := md.GetValue(SchemaReplayable); ok && v == "true" {
		in.Replayable = true
	}
	return in
}

// WithInfo returns s with its streamkit metadata keys replaced by in; every other metadata key
// and all fields are kept as they are. Empty values remove their key.
func WithInfo(s *arrow.Schema, in StreamInfo) *arrow.Schema {
	md := s.Metadata()
	var keys, vals []string
	for i, k := range md.Keys() {
		if k == SchemaKey || k == SchemaEventTime || k == SchemaCheckpoints || k == SchemaPartitions || k == SchemaReplayable {
			continue
		}
		keys = append(keys, k)
		vals = append(vals, md.Values()[i])
	}
	add := func(k, v string) {
		if v != "" {
			keys, vals = append(keys, k), append(vals, v)
		}
	}
	add(SchemaKey, strings.Join(in.Key, ","))
	add(SchemaEventTime, in.EventTime)
	add(SchemaCheckpoints, strings.Join(in.Checkpoints, "\n"))
	add(SchemaPartitions, strings.Join(in.Partitions, "\n"))
	if in.Replayable {
		add(SchemaReplayable, "true")
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &m)
}

// BatchPartition returns the source partition a data batch's rows come from (KeyPartition in
// its custom metadata), or "" and false when the batch does not say.
func BatchPartition(rec arrow.RecordBatch) (string, bool) {
	rm, ok := rec.(arrow.RecordBatchWithMetadata)
	if !ok {
		return "", false
	}
	return rm.Metadata().GetValue(KeyPartition)
}

// WithPartition returns rec tagged with source partition name (KeyPartition), taking over the
// caller's reference to rec.
func WithPartition(rec arrow.RecordBatch, name string) arrow.RecordBatch {
	return withMetadata(rec, arrow.NewMetadata([]string{KeyPartition}, []string{name}))
}

func withMetadata(rec arrow.RecordBatch, md arrow.Metadata) arrow.RecordBatch {
	out := array.NewRecordBatchWithMetadata(rec.Schema(), rec.Columns(), rec.NumRows(), md)
	rec.Release()
	return out
}

// CarryMetadata returns dst with the custom metadata of src (a data batch that dst was made
// from: a filtered subset, a shard's rows), taking over the caller's reference to dst; dst
// itself when src has none. It keeps KeyPartition across stages that build new batches.
func CarryMetadata(dst, src arrow.RecordBatch) arrow.RecordBatch {
	rm, ok := src.(arrow.RecordBatchWithMetadata)
	if !ok || rm.Metadata().Len() == 0 {
		return dst
	}
	return withMetadata(dst, rm.Metadata())
}
