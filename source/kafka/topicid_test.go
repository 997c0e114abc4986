package kafka_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/state"
)

func init() {
	scenarios = append(scenarios, struct {
		name string
		fn   func(*testing.T, *kafkatest.Cluster)
	}{"TopicRecreated", testTopicRecreated})
}

// testTopicRecreated: a topic deleted and re-created while a checkpoint holds position 5, whose
// new log has 25 records (so position 5 is inside it), is data loss: the checkpoint records the
// topic ID, and a restart fails naming the topic and both IDs instead of reading offsets 5–24
// and never 0–4. --on-data-loss earliest reads all 25 records of the new topic, latest none;
// an old checkpoint without IDs keeps working and records the ID from then on.
func testTopicRecreated(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "recreated", 1, nil)
	for i := 0; i < 10; i++ {
		c.Produce(t, rec(topic, 0, nil, []byte(fmt.Sprint("old", i))))
	}
	root := kafkatest.TempDir(t)
	dir := filepath.Join(root, "read-kafka")
	cfg := base(c, topic)
	cfg.Until = fmt.Sprintf(`{%q:{"0":5}}`, topic)
	if _, err := run(t, cfg, runOpts{dir: dir, commit: true}); err != nil {
		t.Fatal(err)
	}
	oldID := kafka.TopicID(c.TopicID(t, topic))
	if pos := walPosition(t, dir); pos.Offsets[kafka.TP{Topic: topic, Partition: 0}] != 5 || pos.TopicIDs[topic] != oldID {
		t.Fatalf("checkpoint position %+v, want offset 5 and topic ID %s", pos, oldID)
	}

	c.Recreate(t, topic, 1)
	var fresh []string
	for i := 0; i < 25; i++ {
		v := fmt.Sprint("new", i)
		fresh = append(fresh, v)
		c.ProduceFresh(t, rec(topic, 0, nil, []byte(v)))
	}
	newID := kafka.TopicID(c.TopicID(t, topic))
	if newID == oldID {
		t.Fatalf("the re-created topic kept its ID %s", oldID)
	}

	_, err := run(t, base(c, topic), runOpts{dir: dir})
	var dl *kafka.DataLossError
	if !errors.As(err, &dl) || dl.CheckpointTopicID != oldID || dl.TopicID != newID {
		t.Fatalf("re-created topic: got %v, want a DataLossError with both topic IDs", err)
	}
	for _, want := range []string{topic, oldID.String(), newID.String(), "re-created", "--on-data-loss earliest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	for _, tc := range []struct {
		choice string
		want   []string
	}{{"earliest", fresh}, {"latest", nil}} {
		d := filepath.Join(root, tc.choice, "read-kafka")
		copyDir(t, dir, d)
		cfg := base(c, topic)
		cfg.OnDataLoss = tc.choice
		out, err := run(t, cfg, runOpts{dir: d})
		if err != nil {
			t.Fatalf("--on-data-loss %s: %v", tc.choice, err)
		}
		var got []string
		for _, r := range out.Rows {
			got = append(got, string(r.Value))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Fatalf("--on-data-loss %s: read %v, want %v", tc.choice, got, tc.want)
		}
		if pos := walPosition(t, d); pos.Offsets[kafka.TP{Topic: topic, Partition: 0}] != 25 || pos.TopicIDs[topic] != newID {
			t.Fatalf("--on-data-loss %s: position %+v, want offset 25 of topic ID %s", tc.choice, pos, newID)
		}
	}

	// A checkpoint written before topic IDs were recorded (Spark offsets JSON only) is read as it
	// is, and the next position records the ID.
	d := filepath.Join(root, "old", "read-kafka")
	copyDir(t, dir, d)
	eps, err := state.Epochs(d, state.OffsetsDir)
	if err != nil || len(eps) == 0 {
		t.Fatal(eps, err)
	}
	if err := state.WriteJSON(filepath.Join(d, state.OffsetsDir), state.EpochName(eps[len(eps)-1])+".json",
		json.RawMessage(fmt.Sprintf(`{%q:{"0":20}}`, topic))); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, base(c, topic), runOpts{dir: d})
	if err != nil || len(out.Rows) != 5 || string(out.Rows[0].Value) != "new20" {
		t.Fatalf("checkpoint without topic IDs: %d rows, %v", len(out.Rows), err)
	}
	if pos := walPosition(t, d); pos.TopicIDs[topic] != newID {
		t.Fatalf("checkpoint without topic IDs: the next position %+v does not record topic ID %s", pos, newID)
	}
}

// walPosition is the newest offsets WAL entry of dir, with its topic IDs.
func walPosition(t *testing.T, dir string) kafka.Position {
	t.Helper()
	eps, err := state.Epochs(dir, state.OffsetsDir)
	if err != nil || len(eps) == 0 {
		t.Fatalf("no offsets WAL in %s: %v", dir, err)
	}
	b, err := state.ReadOffsets(dir, eps[len(eps)-1])
	if err != nil {
		t.Fatal(err)
	}
	var p kafka.Position
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPositionJSON: the position is Spark's offsets JSON with each topic's ID beside its
// partitions; Offsets (--start) accepts it, and a position without IDs reads as before.
func TestPositionJSON(t *testing.T) {
	id, err := kafka.ParseTopicID("vG1lUgy4QnOxGfVtqsxKxQ")
	if err != nil || id.String() != "vG1lUgy4QnOxGfVtqsxKxQ" {
		t.Fatalf("ParseTopicID: %v %v", id, err)
	}
	p := kafka.Position{
		Offsets:  kafka.Offsets{{Topic: "b", Partition: 10}: 5, {Topic: "b", Partition: 2}: 7, {Topic: "a", Partition: 0}: 3},
		TopicIDs: map[string]kafka.TopicID{"b": id, "c": id},
	}
	b, _ := json.Marshal(p)
	const want = `{"a":{"0":3},"b":{"2":7,"10":5,"topicId":"vG1lUgy4QnOxGfVtqsxKxQ"}}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back kafka.Position
	if err := json.Unmarshal(b, &back); err != nil || len(back.Offsets) != 3 || back.TopicIDs["b"] != id || len(back.TopicIDs) != 1 {
		t.Fatalf("round trip %+v %v", back, err)
	}
	var o kafka.Offsets
	if err := json.Unmarshal(b, &o); err != nil || len(o) != 3 || o[kafka.TP{Topic: "b", Partition: 10}] != 5 {
		t.Fatalf("as offsets %v %v", o, err)
	}
	if s, err := kafka.ParseStart(string(b)); err != nil || len(s.Offsets) != 3 {
		t.Fatalf("--start with a checkpoint position: %+v %v", s, err)
	}
	var old kafka.Position
	if err := json.Unmarshal([]byte(`{"a":{"0":3}}`), &old); err != nil || old.TopicIDs != nil || old.Offsets[kafka.TP{Topic: "a"}] != 3 {
		t.Fatalf("old position %+v %v", old, err)
	}
	for _, bad := range []string{`{"a":{"topicId":"x"}}`, `{"a":{"topicId":3}}`, `{"a":{"0":"x"}}`} {
		if err := json.Unmarshal([]byte(bad), &old); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
