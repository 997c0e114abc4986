package kafka_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/schemaregistry"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
)

// TestSchemaMismatch (issue #17 item 9): the registry's latest reader schema (id 2) cannot
// resolve writer schema id 1 (amount was a string, the reader wants a double without a
// default). By default the run fails at the first record of id 1, naming both schema ids and
// the field; the records before it (id 2) are fine. --on-schema-mismatch rescue keeps the old
// behaviour: every id-1 record is null and rescued with the reason.
func TestSchemaMismatch(t *testing.T) {
	c := kafkatest.NewFake(t)
	topic := c.Topic(t, "mismatch", 1, nil)
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"amount","type":"string"}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]string{"/schemas/ids/1": v1, "/schemas/ids/2": v2}
		switch {
		case doc[r.URL.Path] != "":
			_ = json.NewEncoder(w).Encode(map[string]any{"schema": doc[r.URL.Path]})
		case r.URL.Path == "/subjects/"+topic+"-value/versions/latest":
			_ = json.NewEncoder(w).Encode(map[string]any{"subject": topic + "-value", "version": 2, "id": 2, "schema": v2})
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":40403,"message":"not found"}`))
		}
	}))
	defer srv.Close()
	wire := func(id uint32, doc string, v map[string]any) []byte {
		codec, err := goavro.NewCodec(doc)
		if err != nil {
			t.Fatal(err)
		}
		b, err := codec.BinaryFromNative(binary.BigEndian.AppendUint32([]byte{0}, id), v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c.Produce(t, rec(topic, 0, nil, wire(2, v2, map[string]any{"id": int64(1), "amount": 1.5})),
		rec(topic, 0, nil, wire(1, v1, map[string]any{"id": int64(2), "amount": "2.5"})),
		rec(topic, 0, nil, wire(1, v1, map[string]any{"id": int64(3), "amount": "3.5"})))
	cfg := base(c, topic)
	cfg.ValueFormat, cfg.Registry = "avro", schemaregistry.Config{URL: srv.URL}
	_, err := run(t, cfg, runOpts{})
	if err == nil {
		t.Fatal("a writer schema the reader cannot resolve was read without an error")
	}
	for _, want := range []string{fmt.Sprintf("topic %s partition 0 offset 1", topic), "writer schema id 1", "reader schema id 2",
		"$.amount", "--on-schema-mismatch rescue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	var ue *stage.UsageError
	if errors.As(err, &ue) {
		t.Errorf("a runtime error, not a usage error: %v", err)
	}

	cfg.OnSchemaMismatch = kafka.SchemaMismatchRescue
	out, err := run(t, cfg, runOpts{})
	if err != nil || len(out.Rows) != 3 {
		t.Fatalf("--on-schema-mismatch rescue: %d rows, %v", len(out.Rows), err)
	}
	for i, r := range out.Rows {
		if (i > 0) != (r.Rescued != nil) || i > 0 && !strings.Contains(*r.Rescued, "schema id 1: writer schema cannot be resolved") {
			t.Errorf("row %d: rescued %v", i, r.Rescued)
		}
	}
	cfg.OnSchemaMismatch = "skip"
	if _, err := kafka.New(cfg); !errors.As(err, &ue) {
		t.Errorf("--on-schema-mismatch skip: %v, want a usage error", err)
	}
}
