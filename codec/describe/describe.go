// Package describe says what a stream or a data file holds, for `streamkit schema`: every
// field's Spark SQL and Arrow type, nullability and metadata, the streamkit keys of the schema
// metadata (docs/protocol.md §4), and for an Arrow IPC stream the data batches, rows and
// control batches it carried (§2) and how it ended (§3). It reads through codec (the stream
// framing and control batches) and codec/schema (type names); it writes text for people and
// one JSON document for scripts.
package describe

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/internal/tabtext"
)

// Field is one top-level field of a schema.
type Field struct {
	Name string `json:"name"`
	// Type is the Spark SQL DDL spelling ("bigint", "timestamp", "array<string>"; the Arrow
	// name for a type Spark has none for, such as uint32), as codec/schema.TypeString gives it.
	Type string `json:"type"`
	// Arrow is the Arrow type as arrow-go prints it ("int64", "timestamp[us, tz=UTC]").
	Arrow    string `json:"arrowType"`
	Nullable bool   `json:"nullable"`
	// Metadata is the field's own metadata (Avro reader schema, registry id …); omitted when none.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Roles says what the streamkit metadata makes of the field: "key", "event time",
	// "shard event time"; omitted when none.
	Roles []string `json:"roles,omitempty"`
}

// Streamkit is what the schema metadata's streamkit.* keys declare (docs/protocol.md §4).
type Streamkit struct {
	Key            []string                    `json:"key,omitempty"`            // streamkit.key
	EventTime      string                      `json:"eventTime,omitempty"`      // streamkit.event_time
	ShardEventTime *codec.ShardEventTimeColumn `json:"shardEventTime,omitempty"` // streamkit.shard_event_time: a shard's watermark source
	Checkpoints    []string                    `json:"checkpoints,omitempty"`    // streamkit.checkpoints
	Partitions     []string                    `json:"partitions,omitempty"`     // streamkit.partitions
	Replayable     bool                        `json:"replayable"`               // streamkit.replayable
	Group          json.RawMessage             `json:"group,omitempty"`          // streamkit.group, as given (JSON)
	// Other holds every other streamkit.* key, as given.
	Other map[string]string `json:"other,omitempty"`
}

// Schema describes one schema.
type Schema struct {
	Fields    []Field   `json:"fields"`
	Streamkit Streamkit `json:"streamkit"`
	// Metadata holds the schema metadata keys that are not streamkit's (pandas, ARROW:schema
	// of a Parquet file …); omitted when none.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Of describes s.
func Of(s *arrow.Schema) Schema {
	in := codec.Info(s)
	d := Schema{Fields: []Field{}}
	d.Streamkit = Streamkit{Key: in.Key, EventTime: in.EventTime, Checkpoints: in.Checkpoints, Partitions: in.Partitions, Replayable: in.Replayable}
	if e, ok := codec.ShardEventTime(s); ok {
		d.Streamkit.ShardEventTime = &e
	}
	md := s.Metadata()
	for i, k := range md.Keys() {
		v := md.Values()[i]
		switch k {
		case codec.SchemaKey, codec.SchemaEventTime, codec.SchemaCheckpoints, codec.SchemaPartitions, codec.SchemaReplayable, codec.SchemaShardEventTime:
		case codec.SchemaGroup:
			if json.Valid([]byte(v)) {
				d.Streamkit.Group = json.RawMessage(v)
			} else {
				d.Streamkit.Other = put(d.Streamkit.Other, k, v)
			}
		default:
			if strings.HasPrefix(k, "streamkit.") {
				d.Streamkit.Other = put(d.Streamkit.Other, k, v)
			} else {
				d.Metadata = put(d.Metadata, k, v)
			}
		}
	}
	roles := map[string][]string{}
	role := func(path, what string) {
		col := top(s, path)
		if path != col {
			what += " (" + path + ")"
		}
		roles[col] = append(roles[col], what)
	}
	for _, k := range in.Key {
		role(k, "key")
	}
	if in.EventTime != "" {
		role(in.EventTime, "event time")
	}
	if e := d.Streamkit.ShardEventTime; e != nil {
		role(e.Column, "shard event time")
	}
	for _, f := range s.Fields() {
		df := Field{Name: f.Name, Type: schema.TypeString(f.Type), Arrow: f.Type.String(), Nullable: f.Nullable, Roles: roles[f.Name]}
		for i, k := range f.Metadata.Keys() {
			df.Metadata = put(df.Metadata, k, f.Metadata.Values()[i])
		}
		d.Fields = append(d.Fields, df)
	}
	return d
}

// top is the top-level column of dot path p in s: the column named p when s has one (as
// codec.ResolvePath matches a dotted name first), else p's first part.
func top(s *arrow.Schema, p string) string {
	if s.HasField(p) {
		return p
	}
	if i := strings.IndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return p
}

func put(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// Stream counts what an Arrow IPC stream carried after its schema.
type Stream struct {
	DataBatches int64 `json:"dataBatches"`
	Rows        int64 `json:"rows"`
	Barriers    int64 `json:"barriers"`
	// FirstEpoch and LastEpoch are the epochs of the first and the last barrier (0: none).
	FirstEpoch uint64 `json:"firstEpoch,omitempty"`
	LastEpoch  uint64 `json:"lastEpoch,omitempty"`
	Watermarks int64  `json:"watermarks"`
	// FirstWatermark and LastWatermark are the first and the last watermark instants, as on
	// the wire (RFC 3339, µs, UTC); "" when none.
	FirstWatermark string `json:"firstWatermark,omitempty"`
	LastWatermark  string `json:"lastWatermark,omitempty"`
	Progress       int64  `json:"progress,omitempty"` // progress batches (keyby → its shards only)
	// End is how the stream ended: "final" or "pause" (an end-of-stream marker without an end
	// batch, from a foreign producer, is "final"); "" when it did not end (Truncated, Stopped).
	End string `json:"end,omitempty"`
	// Interrupted: the end batch said the pipeline was interrupted (streamkit.reason).
	Interrupted bool `json:"interrupted,omitempty"`
	// Truncated: the input stopped without an end-of-stream marker (upstream died).
	Truncated bool `json:"truncated,omitempty"`
	// Stopped: the count stopped before the end (the user interrupted it).
	Stopped bool `json:"stopped,omitempty"`
}

// Add counts message m of a stream (releasing its batch).
func (st *Stream) Add(m codec.Message) {
	if m.Batch != nil {
		st.DataBatches++
		st.Rows += m.Batch.NumRows()
		m.Batch.Release()
		return
	}
	switch c := m.Control; c.Kind {
	case codec.Barrier:
		if st.Barriers == 0 {
			st.FirstEpoch = c.Epoch
		}
		st.Barriers++
		st.LastEpoch = c.Epoch
	case codec.Watermark:
		w := codec.FormatWatermark(c.Watermark)
		if st.Watermarks == 0 {
			st.FirstWatermark = w
		}
		st.Watermarks++
		st.LastWatermark = w
	case codec.Progress:
		st.Progress++
	case codec.End:
		st.End = c.End.String()
		st.Interrupted = c.Interrupted
	}
}

// Report is what `streamkit schema` prints: where the schema came from, the schema, and for a
// stream what it carried.
type Report struct {
	// Source is the file (as given, URLs redacted) or "stdin".
	Source string `json:"source"`
	// Format is the input's format: arrows (Arrow IPC stream), arrow (IPC file), parquet,
	// csv, tsv, json, avro.
	Format string `json:"format"`
	Schema
	// Stream is set for an Arrow IPC stream that was read past its schema.
	Stream *Stream `json:"stream,omitempty"`
}

// WriteJSON writes r as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // array<string>, not array\u003cstring\u003e
	return enc.Encode(r)
}

// WriteSchemaText writes the schema part of r for people: a header line, one line per field
// (name, Spark SQL type, nullability, Arrow type, roles and metadata), then the streamkit
// keys and other schema metadata, each on its own line.
func WriteSchemaText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "%s (%s): %d field(s)\n", r.Source, r.Format, len(r.Fields))
	tw := tabtext.New(w)
	fmt.Fprintln(tw, "  #\tNAME\tTYPE\tNULLABLE\tARROW TYPE\tNOTES")
	for i, f := range r.Fields {
		notes := append([]string(nil), f.Roles...)
		for _, k := range sortedKeys(f.Metadata) {
			notes = append(notes, k+"="+oneLine(f.Metadata[k]))
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", i+1, f.Name, f.Type, yesNo(f.Nullable), f.Arrow, strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sk := r.Streamkit
	tw = tabtext.New(w)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("key", orNone(strings.Join(sk.Key, ",")))
	line("event time", orNone(sk.EventTime))
	if e := sk.ShardEventTime; e != nil {
		v := e.Column
		if e.Unit != "" {
			v += " unit=" + e.Unit
		}
		if e.TZ != "" {
			v += " tz=" + e.TZ
		}
		line("shard event time", v)
	}
	line("replayable", yesNo(sk.Replayable))
	if len(sk.Partitions) > 0 {
		line("partitions", strings.Join(sk.Partitions, ", "))
	}
	for _, c := range sk.Checkpoints {
		line("checkpoint", c)
	}
	if len(sk.Group) > 0 {
		line("group", string(sk.Group))
	}
	for _, k := range sortedKeys(sk.Other) {
		line(k, oneLine(sk.Other[k]))
	}
	for _, k := range sortedKeys(r.Metadata) {
		line("metadata "+k, abbrev(oneLine(r.Metadata[k])))
	}
	return tw.Flush()
}

// WriteStreamText writes r.Stream for people: counts of data batches and rows, barriers with
// their first and last epoch, watermarks with their first and last instant, and the end.
func WriteStreamText(w io.Writer, r *Report) error {
	st := r.Stream
	if st == nil {
		return nil
	}
	tw := tabtext.New(w)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	line("data batches", "%d", st.DataBatches)
	line("rows", "%d", st.Rows)
	switch st.Barriers {
	case 0:
		line("barriers", "0")
	case 1:
		line("barriers", "1 (epoch %d)", st.FirstEpoch)
	default:
		line("barriers", "%d (epochs %d … %d)", st.Barriers, st.FirstEpoch, st.LastEpoch)
	}
	switch {
	case st.Watermarks == 0:
		line("watermarks", "0")
	case st.LastWatermark == codec.FormatWatermark(codec.EndOfTime) && st.Watermarks == 1:
		line("watermarks", "1 (end of time)")
	case st.LastWatermark == codec.FormatWatermark(codec.EndOfTime):
		line("watermarks", "%d (%s … end of time)", st.Watermarks, st.FirstWatermark)
	case st.Watermarks == 1:
		line("watermarks", "1 (%s)", st.FirstWatermark)
	default:
		line("watermarks", "%d (%s … %s)", st.Watermarks, st.FirstWatermark, st.LastWatermark)
	}
	if st.Progress > 0 {
		line("progress", "%d", st.Progress)
	}
	line("end", "%s", endText(st))
	return tw.Flush()
}

func endText(st *Stream) string {
	switch {
	case st.Truncated:
		return "none: the input stopped without an end-of-stream marker (upstream process died?)"
	case st.Stopped:
		return "not reached (interrupted)"
	case st.Interrupted:
		return st.End + " (interrupt)"
	}
	return st.End
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a metadata value on one line of the text output.
func oneLine(s string) string { return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s) }

// abbrev shortens a long foreign metadata value (ARROW:schema, pandas) in the text output;
// --format json gives it whole.
func abbrev(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}
