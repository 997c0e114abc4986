package codec

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
)

// SchemaShardEventTime, in the output schema of a stage that runs as a child of keyby --shards
// and generates its watermark from event times (dedup --event-time), declares the event-time
// column of the stage's input and how the stage reads it: a JSON object
// {"column": dot path, "unit": "s"|"ms"|"us"|"ns" (integer columns), "tz": IANA zone
// (zone-less values)}, empty members omitted (ShardEventTimeColumn). keyby reads it from the
// first schema each child writes and then sends that child the stream's event-time progress
// (Progress) read from that column; only a keyby that is itself a shard passes it on, to its
// parent (docs/protocol.md §4).
const SchemaShardEventTime = "streamkit.shard_event_time"

// ShardEventTimeColumn is the value of SchemaShardEventTime: an event-time column as
// window.NewTimeExtractor takes it (Column a dot path; Unit and TZ as --time-unit and --tz
// spell them, "" for none).
type ShardEventTimeColumn struct {
	Column string `json:"column"`
	Unit   string `json:"unit,omitempty"`
	TZ     string `json:"tz,omitempty"`
}

// ShardEventTime reads SchemaShardEventTime from s's metadata; false when it is absent, has
// no column or is not such a JSON object.
func ShardEventTime(s *arrow.Schema) (ShardEventTimeColumn, bool) {
	var e ShardEventTimeColumn
	v, ok := s.Metadata().GetValue(SchemaShardEventTime)
	if !ok || json.Unmarshal([]byte(v), &e) != nil || e.Column == "" {
		return ShardEventTimeColumn{}, false
	}
	return e, true
}

// WithShardEventTime returns s with SchemaShardEventTime set to e (removed when e.Column is
// ""), after every other metadata key; fields and other keys are kept as they are.
func WithShardEventTime(s *arrow.Schema, e ShardEventTimeColumn) *arrow.Schema {
	md := s.Metadata()
	var keys, vals []string
	for i, k := range md.Keys() {
		if k != SchemaShardEventTime {
			keys, vals = append(keys, k), append(vals, md.Values()[i])
		}
	}
	if e.Column != "" {
		b, _ := json.Marshal(e) // strings only: cannot fail
		keys, vals = append(keys, SchemaShardEventTime), append(vals, string(b))
	} else if len(keys) == md.Len() {
		return s
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &m)
}
