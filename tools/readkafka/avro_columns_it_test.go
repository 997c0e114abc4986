package readkafka_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestAvroRegistryColumns: --columns dot paths and value.* with --value-format avro
// --schema-registry and no --value-schema, where the reader schema is the subject's latest
// version, fetched when the run opens: the projection is compiled against that schema (break
// test 4 found it compiled against the binary placeholder before, refused as "value is
// binary"). Records come from confluent-kafka's AvroSerializer; an unknown member is still a
// usage error (exit 2) listing the registry schema's members.
func TestAvroRegistryColumns(t *testing.T) {
	c := kafkatest.NewReal(t)
	reg := peertest.SchemaRegistry(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "avro-cols", 1, nil)
	avroPeer(t, "produce", brokers, reg, topic, testdata("order-v1.avsc"), testdata("orders-v1.json"))
	read := []string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--value-format", "avro", "--schema-registry", reg, "--columns"}
	for cols, want := range map[string]string{
		"value.user_id,offset":      `{"user_id":1,"offset":0,"_rescued_data":null}` + "\n" + `{"user_id":2,"offset":1,"_rescued_data":null}`,
		"value.user.name,partition": `{"name":"ann","partition":0,"_rescued_data":null}` + "\n" + `{"name":"bob","partition":0,"_rescued_data":null}`,
		"value.user.*":              `{"name":"ann","tags":["a","b"],"_rescued_data":null}` + "\n" + `{"name":"bob","tags":[],"_rescued_data":null}`,
	} {
		out, err := pipeline(t, append(read, cols), []string{"print", "--format", "json"})
		if err != nil {
			t.Errorf("--columns %s: %v", cols, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("--columns %s: got\n%s\nwant\n%s", cols, got, want)
		}
	}
	out, err := pipeline(t, append(read, "value.*"), []string{"print", "--format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	for _, m := range []string{"user_id", "user", "attrs", "note", "state", "amount", "ts", "day", "blob", "_rescued_data"} {
		if !strings.Contains(first, fmt.Sprintf("%q:", m)) {
			t.Errorf("--columns value.*: no member %s in %s", m, first)
		}
	}
	_, stderr, err := streamkit(t, nil, append(read, "value.nope")...)
	if err == nil || !strings.Contains(err.Error(), "exit status 2") ||
		!strings.Contains(stderr, `value.nope: value has no member "nope" (members: user_id, user, attrs, note, state, amount, ts, day, blob)`) {
		t.Errorf("--columns value.nope: err %v, stderr %s", err, stderr)
	}
}
