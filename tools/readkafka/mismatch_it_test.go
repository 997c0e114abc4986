package readkafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/schemaregistry"
)

// TestAvroSchemaMismatch (issue #17 item 9): records written by confluent-kafka's
// AvroSerializer with schema v1 (user_id long), then an incompatible latest version of the
// subject (user_id string) registered in the real registry. read-kafka --schema-registry used
// to turn every record into a rescued row and exit 0; now it fails at the first record, naming
// both schema ids and the field, with the reader from the registry's latest and from a
// --value-schema file alike. --on-schema-mismatch rescue keeps the old behaviour: every record
// rescued with the reason, none dropped.
func TestAvroSchemaMismatch(t *testing.T) {
	c := kafkatest.NewReal(t)
	reg := peertest.SchemaRegistry(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "avro-mismatch", 1, nil)
	var r struct{ IDs []uint32 }
	out := avroPeer(t, "produce", brokers, reg, topic, testdata("order-v1.avsc"), testdata("orders-v1.json"))
	if err := json.Unmarshal(out, &r); err != nil || len(r.IDs) != 1 {
		t.Fatalf("producer said %s (%v)", out, err)
	}
	writerID := r.IDs[0]
	cl, err := schemaregistry.New(schemaregistry.Config{URL: reg})
	if err != nil {
		t.Fatal(err)
	}
	v3, err := os.ReadFile(testdata("order-v3-incompatible.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	readerID, err := cl.Register(context.Background(), topic+"-value", string(v3))
	if err != nil {
		t.Fatalf("register the incompatible version: %v\n%s", err, peertest.RegistryLogTail(t, 20))
	}
	produced := len(kafkatest.KcatConsume(t, c.Real.KcatPath(t), c.Brokers, topic))
	if produced == 0 {
		t.Fatal("nothing produced")
	}
	read := []string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--value-format", "avro", "--schema-registry", reg}
	for _, reader := range [][]string{nil, {"--value-schema", testdata("order-v3-incompatible.avsc")}} {
		_, err := pipeline(t, append(read, reader...), []string{"print", "--format", "json"})
		if err == nil {
			t.Fatalf("reader %v: a writer schema that does not resolve was read without an error", reader)
		}
		for _, want := range []string{fmt.Sprintf("topic %s partition 0 offset 0", topic), fmt.Sprintf("writer schema id %d", writerID),
			fmt.Sprintf("reader schema id %d", readerID), "$.user_id", "--on-schema-mismatch rescue"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("reader %v: error lacks %q:\n%v", reader, want, err)
			}
		}
	}
	got, err := pipeline(t, append(read, "--on-schema-mismatch", "rescue"), []string{"print", "--format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != produced {
		t.Fatalf("--on-schema-mismatch rescue: %d rows, kcat reads %d records", len(lines), produced)
	}
	for i, l := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		resc, _ := row["_rescued_data"].(string)
		if row["value"] != nil || !strings.Contains(resc, fmt.Sprintf("schema id %d: writer schema cannot be resolved", writerID)) {
			t.Errorf("row %d: %s", i, l)
		}
	}
}
