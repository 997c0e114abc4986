package kafka_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/source/kafka"
)

func init() {
	scenarios = append(scenarios, struct {
		name string
		fn   func(*testing.T, *kafkatest.Cluster)
	}{"AvroBadRecords", testAvroBadRecords})
}

// testAvroBadRecords: plain Avro values with a schema file decode into a struct column; bad
// ones (truncated, not Avro) are rescued and written to --bad-records with topic, partition,
// offset and reason; a restart from the checkpoint cuts what an uncommitted epoch wrote to the
// file, so every bad record is in it exactly once.
func testAvroBadRecords(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "avro", 1, nil)
	dir := kafkatest.TempDir(t)
	doc := `{"type":"record","name":"V","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"n","type":["null","int"]}]}`
	avsc := filepath.Join(dir, "v.avsc")
	if err := os.WriteFile(avsc, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	codec, err := goavro.NewCodec(doc)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(id int64, n any) []byte {
		b, err := codec.BinaryFromNative(nil, map[string]any{"id": id, "tags": []any{"x"}, "n": n})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := enc(1, goavro.Union("int", int32(5)))
	c.Produce(t, rec(topic, 0, nil, good), rec(topic, 0, nil, good[:2]), rec(topic, 0, nil, []byte(`{"id":3}`)),
		rec(topic, 0, nil, enc(4, nil)), rec(topic, 0, nil, nil))
	bad := filepath.Join(dir, "bad.ndjson")
	cfg := base(c, topic)
	cfg.ValueFormat, cfg.ValueSchema, cfg.BadRecords = "avro", avsc, bad
	ck := filepath.Join(dir, "ck", "read-kafka")
	out, err := run(t, cfg, runOpts{dir: ck, commit: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = out
	lines := func() []map[string]any {
		data, err := os.ReadFile(bad)
		if err != nil {
			t.Fatal(err)
		}
		var ls []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("bad-records line %q: %v", l, err)
			}
			ls = append(ls, m)
		}
		return ls
	}
	ls := lines()
	if len(ls) != 2 || ls[0]["offset"] != 1.0 || ls[1]["offset"] != 2.0 || ls[0]["topic"] != topic || ls[0]["partition"] != 0.0 ||
		!strings.Contains(ls[0]["reason"].(string), "value: bad avro data") || ls[1]["value"] != `{"id":3}` {
		t.Fatalf("bad records %v", ls)
	}
	// Rows: the same run without a committing sink shows the decoded values and the rescue.
	out, err = run(t, kafka.Config{Conn: c.Conn, Topics: []string{topic}, Until: "now", ValueFormat: "avro", ValueSchema: "@" + avsc}, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := out.Schema.FieldsByName("value"); len(f) != 1 || f[0].Type.String() != "struct<id: int64, tags: list<item: utf8, nullable>, n: int32 nullable>" {
		t.Fatalf("value column %v", f)
	} else if s, _ := f[0].Metadata.GetValue(kafka.MetaWireFormat); s != "plain" {
		t.Errorf("wire format metadata %q", s)
	}
	want := []string{`{"id":1,"n":5,"tags":["x"]}`, "", "", `{"id":4,"n":null,"tags":["x"]}`, ""}
	if len(out.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(out.Rows), len(want))
	}
	for i, w := range want {
		r := out.Rows[i]
		if string(r.Value) != w {
			t.Errorf("row %d value %s, want %s", i, r.Value, w)
		}
		if (i == 1 || i == 2) != (r.Rescued != nil) {
			t.Errorf("row %d rescued %v", i, r.Rescued)
		}
	}

	// An uncommitted epoch of a crashed run had written a line at offset 5 and a torn line;
	// another topic's line stays. The restart cuts both and writes offset 5's line once.
	f, err := os.OpenFile(bad, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"topic":"other","partition":0,"offset":9,"reason":"x"}` + "\n")
	_, _ = f.WriteString(`{"topic":"` + topic + `","partition":0,"offset":5,"reason":"stale"}` + "\n" + `{"topic":"`)
	f.Close()
	c.Produce(t, rec(topic, 0, nil, []byte{0xff, 0xff}), rec(topic, 0, nil, enc(7, nil)))
	if _, err := run(t, cfg, runOpts{dir: ck, commit: true}); err != nil {
		t.Fatal(err)
	}
	ls = lines()
	var offs []float64
	for _, l := range ls {
		if l["topic"] == topic {
			offs = append(offs, l["offset"].(float64))
		}
	}
	if len(ls) != 4 || len(offs) != 3 || offs[2] != 5 || ls[3]["reason"] == "stale" || ls[3]["value_base64"] != "//8=" {
		t.Fatalf("after restart: %v", ls)
	}
}
