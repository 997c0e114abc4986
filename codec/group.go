package codec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// GroupInfo is the value of SchemaGroup: a consumer-group pipeline's group, the flow of its
// per-partition txn appIds and its progress table (docs/protocol.md §13).
type GroupInfo struct {
	Group string `json:"group"`
	Flow  string `json:"flow"`
	// AppID, when set (read-kafka --app-id, one topic), is the prefix of the txn appIds
	// "<app>-<partition>", kafka-delta-ingest's app_id; empty: "<flow>-<topic>-<partition>".
	AppID string `json:"app_id,omitempty"`
	// Table is the progress table as storage.Store.Location prints it (redacted URL or
	// absolute local path).
	Table string `json:"table"`
}

// Group returns the SchemaGroup of s; ok is false when s has none. A value that is not a
// GroupInfo object is an error.
func Group(s *arrow.Schema) (g GroupInfo, ok bool, err error) {
	v, has := s.Metadata().GetValue(SchemaGroup)
	if !has {
		return g, false, nil
	}
	if err := json.Unmarshal([]byte(v), &g); err != nil || g.Flow == "" || g.Table == "" {
		return g, true, fmt.Errorf("schema metadata %s=%q is not a {\"group\",\"flow\",\"table\"} object", SchemaGroup, v)
	}
	return g, true, nil
}

// WithGroup returns s with SchemaGroup set to g (replacing one it has); every other metadata
// key is kept.
func WithGroup(s *arrow.Schema, g GroupInfo) *arrow.Schema {
	b, _ := json.Marshal(g)
	md := s.Metadata()
	keys, vals := slices.Clone(md.Keys()), slices.Clone(md.Values())
	if i := md.FindKey(SchemaGroup); i >= 0 {
		vals[i] = string(b)
	} else {
		keys, vals = append(keys, SchemaGroup), append(vals, string(b))
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &m)
}

// OffsetProgress is one source partition's entry in a barrier's KeyOffsets: the epoch moved
// the partition's position to Next (the next offset to read); Txn is the txn version the
// table must hold for the partition before the epoch's commit, nil when it must hold none.
type OffsetProgress struct {
	Txn  *int64 `json:"txn"`
	Next int64  `json:"next"`
}

// ParseOffsets decodes a barrier's KeyOffsets ("" is none: a nil map).
func ParseOffsets(s string) (map[string]OffsetProgress, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]OffsetProgress
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("barrier %s=%q is not a JSON object of {\"txn\",\"next\"}: %v", KeyOffsets, s, err)
	}
	return m, nil
}

// FormatOffsets encodes m as a barrier's KeyOffsets, partitions in name order ("" for none).
func FormatOffsets(m map[string]OffsetProgress) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // encoding/json writes map keys sorted
	return string(b)
}

// TxnAppID is the Delta txn appId of source partition name ("topic/partition") in g:
// "<app>-<partition>" with an AppID (kafka-delta-ingest's convention for its one topic),
// else TxnAppID(g.Flow, name).
func (g GroupInfo) TxnAppID(name string) string {
	if g.AppID == "" {
		return TxnAppID(g.Flow, name)
	}
	return g.AppID + "-" + name[strings.LastIndexByte(name, '/')+1:]
}

// TxnAppID is the Delta txn appId of source partition name ("topic/partition", as
// KeyPartition) in flow: "<flow>-<topic>-<partition>", kafka-delta-ingest's
// "<app_id>-<partition>" with app_id "<flow>-<topic>" (docs/protocol.md §13).
func TxnAppID(flow, name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return flow + "-" + name[:i] + "-" + name[i+1:]
	}
	return flow + "-" + name
}
