package readkafka_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestBreak4AvroRegistryColumns (break-test 4): --columns value.NAME with --value-format avro
// --schema-registry and no --value-schema (the reader schema is the subject's latest version)
// must pick the member, as it does with --value-schema. It fails today: the projection is
// compiled before the registry's reader schema is fetched, against the binary placeholder, so
// read-kafka exits 2 with "--columns: value.user_id needs --value-format json or avro (value
// is binary)" although the value format is avro.
func TestBreak4AvroRegistryColumns(t *testing.T) {
	c := kafkatest.NewReal(t)
	reg := peertest.SchemaRegistry(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "avro-cols", 1, nil)
	avroPeer(t, "produce", brokers, reg, topic, testdata("order-v1.avsc"), testdata("orders-v1.json"))
	for _, cols := range []string{"value.user_id,offset", "value.*", "value.user.name,partition"} {
		stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", brokers, "-t", topic, "--until", "now",
			"--value-format", "avro", "--schema-registry", reg, "--columns", cols)
		if err != nil {
			t.Errorf("--columns %s: %v\n%s", cols, err, stderr)
			continue
		}
		out := kafkatest.Decode(t, bytes.NewReader(stdout))
		if out.Schema.NumFields() < 2 {
			t.Errorf("--columns %s: schema %s", cols, out.Schema)
		}
	}
}
