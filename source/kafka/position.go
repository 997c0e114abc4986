package kafka

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (t TP) String() string { return fmt.Sprintf("%s/%d", t.Topic, t.Partition) }

// Offsets are offsets per topic partition. As a position they are the next offset to read
// (one past the last record or transaction marker consumed). Their JSON form is Spark's
// Kafka source offsets JSON, {"topic":{"0":23,"1":42}}, so a checkpoint position can be
// pasted into --start and Spark users read it at a glance.
type Offsets map[TP]int64

// MarshalJSON writes {"topic":{"partition":offset}} with topics and partitions in order.
func (o Offsets) MarshalJSON() ([]byte, error) { return o.appendJSON(nil, nil), nil }

// appendJSON appends o's JSON form to b, with the topicId member of ids (when it has a
// non-zero one) last in each topic's object.
func (o Offsets) appendJSON(b []byte, ids map[string]TopicID) []byte {
	tps := o.Sorted()
	b = append(b, '{')
	for i, tp := range tps {
		if i == 0 || tp.Topic != tps[i-1].Topic {
			if i > 0 {
				b = appendTopicID(b, ids, tps[i-1].Topic)
				b = append(b, "},"...)
			}
			k, _ := json.Marshal(tp.Topic)
			b = append(b, k...)
			b = append(b, ":{"...)
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(tp.Partition), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, o[tp], 10)
	}
	if len(tps) > 0 {
		b = appendTopicID(b, ids, tps[len(tps)-1].Topic)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendTopicID(b []byte, ids map[string]TopicID, topic string) []byte {
	if id, ok := ids[topic]; ok && !id.IsZero() {
		b = append(b, `,"`+topicIDKey+`":"`...)
		b = append(b, id.String()...)
		b = append(b, '"')
	}
	return b
}

// UnmarshalJSON reads Spark's offsets JSON. A checkpoint position's topic IDs (the
// "topicId" members of Position's JSON) are accepted and ignored, so a position can be pasted
// into --start or --until.
func (o *Offsets) UnmarshalJSON(b []byte) error {
	out, _, err := parseOffsets(b)
	if err != nil {
		return err
	}
	*o = out
	return nil
}

// topicIDKey is the member of a topic's object in Position's JSON that holds its topic ID: it
// cannot be a partition number.
const topicIDKey = "topicId"

// parseOffsets reads Spark's offsets JSON, with the optional topicIDKey member of each topic.
func parseOffsets(b []byte) (Offsets, map[string]TopicID, error) {
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("offsets JSON: %w (want {\"topic\":{\"0\":23,\"1\":-2}})", err)
	}
	out := Offsets{}
	var ids map[string]TopicID
	for t, ps := range m {
		for p, raw := range ps {
			if p == topicIDKey {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, nil, fmt.Errorf("offsets JSON: topic %q: %s is not a string", t, topicIDKey)
				}
				id, err := ParseTopicID(s)
				if err != nil {
					return nil, nil, fmt.Errorf("offsets JSON: topic %q: %w", t, err)
				}
				if ids == nil {
					ids = map[string]TopicID{}
				}
				ids[t] = id
				continue
			}
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil || n < 0 {
				return nil, nil, fmt.Errorf("offsets JSON: topic %q: partition %q is not a partition number", t, p)
			}
			var off int64
			if err := json.Unmarshal(raw, &off); err != nil {
				return nil, nil, fmt.Errorf("offsets JSON: topic %q partition %s: offset %s is not an integer", t, p, raw)
			}
			out[TP{t, int32(n)}] = off
		}
	}
	return out, ids, nil
}

// TopicID is a topic's ID (KIP-516): 16 bytes the controller gives a topic when it is created,
// so a topic deleted and re-created under the same name has another ID. The zero value means
// unknown (a checkpoint written before IDs were recorded). Its text form is Kafka's
// (Uuid.toString: URL-safe base64 without padding, 22 characters), as kafka-topics.sh
// --describe prints it.
type TopicID [16]byte

// String returns the ID as Kafka writes it, e.g. "vG1lUgy4QnOxGfVtqsxKxQ".
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports whether the ID is unknown.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// ParseTopicID parses Kafka's text form of a topic ID (TopicID.String).
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("topic ID %q is not a Kafka topic ID (22 characters of URL-safe base64)", s)
	}
	copy(id[:], b)
	return id, nil
}

// Position is read-kafka's checkpoint position (its offsets WAL entry): the next offset of
// every assigned partition, and the topic ID of every topic read, so a restart can tell a
// topic that was deleted and re-created under the same name (whose offsets start again at 0)
// from the one the checkpoint read. Its JSON form is Spark's offsets JSON with each topic's ID
// beside its partitions,
//
//	{"orders":{"0":23,"1":42,"topicId":"vG1lUgy4QnOxGfVtqsxKxQ"}}
//
// A position written before IDs were recorded has none (TopicIDs nil): its topics are taken
// as they are, and the next position records their IDs.
type Position struct {
	Offsets  Offsets
	TopicIDs map[string]TopicID // topic → ID; a topic without one is not checked
}

// MarshalJSON writes Offsets as Offsets.MarshalJSON does, with the topicId member last in each
// topic that has an ID.
func (p Position) MarshalJSON() ([]byte, error) { return p.Offsets.appendJSON(nil, p.TopicIDs), nil }

// UnmarshalJSON reads Position's JSON form, or Spark's offsets JSON (no IDs).
func (p *Position) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	o, ids, err := parseOffsets(b)
	if err != nil {
		return err
	}
	p.Offsets, p.TopicIDs = o, ids
	return nil
}

// Sorted returns the partitions of o by topic, then partition.
func (o Offsets) Sorted() []TP {
	tps := make([]TP, 0, len(o))
	for tp := range o {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	return tps
}

func sortTPs(tps []TP) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// Special offsets in offsets JSON, as in Spark: -2 earliest, -1 latest.
const (
	OffsetEarliest = -2
	OffsetLatest   = -1
)

// StartKind is the kind of a --start spec.
type StartKind int

// Kinds of --start.
const (
	StartEarliest StartKind = iota
	StartLatest
	StartTime   // first offset with a timestamp ≥ Time
	StartLastN  // N records before the end, per partition
	StartOffset // explicit offsets (JSON); partitions not listed start at earliest
)

// Start is a parsed --start.
type Start struct {
	Kind    StartKind
	Time    time.Time
	N       int64
	Offsets Offsets
}

// ParseStart parses --start: earliest, latest, @<RFC 3339 or epoch milliseconds>, -N (the last
// N records of each partition) or Spark's offsets JSON ({"t":{"0":23,"1":-2}}; -2 earliest, -1
// latest).
func ParseStart(s string) (Start, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "earliest":
		return Start{Kind: StartEarliest}, nil
	case s == "latest":
		return Start{Kind: StartLatest}, nil
	case strings.HasPrefix(s, "@"):
		t, err := ParseTime(s[1:])
		if err != nil {
			return Start{}, fmt.Errorf("--start %s: %w", s, err)
		}
		return Start{Kind: StartTime, Time: t}, nil
	case strings.HasPrefix(s, "-"):
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n < 0 {
			return Start{}, fmt.Errorf("--start %s: -N wants a record count, e.g. -100 for the last 100 records of each partition", s)
		}
		return Start{Kind: StartLastN, N: n}, nil
	case strings.HasPrefix(s, "{"):
		var o Offsets
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return Start{}, fmt.Errorf("--start: %w", err)
		}
		for tp, off := range o {
			if off < OffsetEarliest {
				return Start{}, fmt.Errorf("--start: %s: offset %d (want ≥ 0, -2 earliest or -1 latest)", tp, off)
			}
		}
		return Start{Kind: StartOffset, Offsets: o}, nil
	}
	return Start{}, fmt.Errorf("--start %q: want earliest, latest, @<time>, -N or offsets JSON", s)
}

// UntilKind is the kind of an --until spec.
type UntilKind int

// Kinds of --until.
const (
	UntilNever   UntilKind = iota // live: read forever
	UntilNow                      // the end of every partition at start-up ("available now")
	UntilTime                     // the first offset with a timestamp ≥ Time, fixed at start-up
	UntilOffsets                  // explicit end offsets (JSON, -1 = latest at start-up)
)

// Until is a parsed --until.
type Until struct {
	Kind    UntilKind
	Time    time.Time
	Offsets Offsets
}

// ParseUntil parses --until: never, now, @<RFC 3339 or epoch ms>, or offsets JSON (exclusive
// ends; -1 = the end at start-up).
func ParseUntil(s string) (Until, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "never":
		return Until{Kind: UntilNever}, nil
	case s == "now" || s == "latest":
		return Until{Kind: UntilNow}, nil
	case strings.HasPrefix(s, "@"):
		t, err := ParseTime(s[1:])
		if err != nil {
			return Until{}, fmt.Errorf("--until %s: %w", s, err)
		}
		return Until{Kind: UntilTime, Time: t}, nil
	case strings.HasPrefix(s, "{"):
		var o Offsets
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return Until{}, fmt.Errorf("--until: %w", err)
		}
		for tp, off := range o {
			if off < OffsetLatest {
				return Until{}, fmt.Errorf("--until: %s: offset %d (want ≥ 0 or -1 latest)", tp, off)
			}
		}
		return Until{Kind: UntilOffsets, Offsets: o}, nil
	}
	return Until{}, fmt.Errorf("--until %q: want never, now, @<time> or offsets JSON", s)
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// ParseTime parses an RFC 3339 instant (with a zone or Z) or epoch milliseconds.
func ParseTime(s string) (time.Time, error) {
	if digits.MatchString(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, err
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 with a zone (2024-05-01T12:00:00Z) or epoch milliseconds")
	}
	return t.UTC(), nil
}

// ParseAssign parses --assign values: "topic:0,2" or "topic:0-3" (several values allowed).
func ParseAssign(specs []string) ([]TP, error) {
	seen := map[TP]bool{}
	var out []TP
	for _, spec := range specs {
		i := strings.LastIndexByte(spec, ':')
		if i <= 0 || i == len(spec)-1 {
			return nil, fmt.Errorf("--assign %q: want topic:partition[,partition…] (e.g. orders:0,2 or orders:0-3)", spec)
		}
		topic := spec[:i]
		for _, p := range strings.Split(spec[i+1:], ",") {
			lo, hi, ok := strings.Cut(strings.TrimSpace(p), "-")
			a, err1 := strconv.ParseInt(lo, 10, 32)
			b := a
			var err2 error
			if ok {
				b, err2 = strconv.ParseInt(hi, 10, 32)
			}
			if err1 != nil || err2 != nil || a < 0 || b < a {
				return nil, fmt.Errorf("--assign %q: bad partition %q", spec, p)
			}
			for n := a; n <= b; n++ {
				tp := TP{topic, int32(n)}
				if !seen[tp] {
					seen[tp] = true
					out = append(out, tp)
				}
			}
		}
	}
	sortTPs(out)
	return out, nil
}
