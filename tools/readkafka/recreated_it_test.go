package readkafka_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
)

// TestTopicRecreated (issue #17 item 7): a checkpoint holds position 5 of a topic that is then
// deleted and re-created with 25 records. read-kafka | print used to read offsets 5–24 and exit
// 0 (offsets 0–4 of the new topic never read). Now the checkpoint records the topic ID, the
// restart fails naming the topic and both IDs, state-dump --offsets shows the recorded ID (and
// --lag the re-created status), and --on-data-loss earliest reads exactly the records kcat
// reads from the new topic.
func TestTopicRecreated(t *testing.T) {
	c := kafkatest.NewReal(t)
	kcat := c.Real.KcatPath(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "recreated-cli", 1, nil)
	for i := 0; i < 10; i++ {
		c.Produce(t, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint("old", i))})
	}
	ck := kafkatest.TempDir(t)
	t.Setenv("STREAMKIT_CHECKPOINT", ck)
	read := func(extra ...string) []string {
		return append([]string{"read-kafka", "-b", brokers, "-t", topic, "--value-format", "string"}, extra...)
	}
	printer := []string{"print", "--format", "json"}
	out, err := pipeline(t, read("--until", fmt.Sprintf(`{%q:{"0":5}}`, topic)), printer)
	if err != nil || len(values(t, out)) != 5 {
		t.Fatalf("first run: %v %s", err, out)
	}
	oldID := topicID(c.TopicID(t, topic))
	offsets := func(extra ...string) map[string]any {
		so, se, err := streamkit(t, nil, append([]string{"state-dump", ck, "--offsets", "--format", "json"}, extra...)...)
		if err != nil {
			t.Fatalf("state-dump: %v\n%s", err, se)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(so)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["topic"] == topic {
				return m
			}
		}
		t.Fatalf("state-dump: no row of %s in\n%s", topic, so)
		return nil
	}

	c.Recreate(t, topic, 1)
	var recs []*kgo.Record
	for i := 0; i < 25; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint("new", i))})
	}
	c.ProduceFresh(t, recs...)
	newID := topicID(c.TopicID(t, topic))
	if newID == oldID {
		t.Fatalf("the re-created topic kept ID %s", oldID)
	}

	_, err = pipeline(t, read("--until", "now"), printer)
	if err == nil {
		t.Fatal("the re-created topic was read without an error")
	}
	for _, want := range []string{"data loss on topic " + topic, oldID, newID, "--on-data-loss earliest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}

	if m := offsets("--lag", "-b", brokers); m["topic_id"] != oldID || m["committed"] != 5.0 || m["status"] != "topic re-created" {
		t.Fatalf("state-dump --offsets %v, want topic_id %s at 5, topic re-created", m, oldID)
	}

	out, err = pipeline(t, read("--until", "now", "--on-data-loss", "earliest"), printer)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range kafkatest.KcatConsume(t, kcat, c.Brokers, topic) {
		want = append(want, string(r.Value))
	}
	if got := values(t, out); len(want) != 25 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("--on-data-loss earliest read %v, kcat reads %v", got, want)
	}
	if m := offsets("--lag", "-b", brokers); m["topic_id"] != newID || m["committed"] != 25.0 || m["status"] != "ok" {
		t.Fatalf("state-dump --offsets --lag after the restart: %v", m)
	}
}

// values returns the value column of print --format json output, in order.
func values(t *testing.T, out []byte) []string {
	t.Helper()
	var vs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("print output %q: %v", line, err)
		}
		v, _ := m["value"].(string)
		vs = append(vs, v)
	}
	return vs
}

// topicID is Kafka's text form of a topic ID (URL-safe base64 without padding).
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
