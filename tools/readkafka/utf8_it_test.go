package readkafka_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
)

// TestNotUTF8 (issue #17 item 8, Kafka): keys and values that are not valid UTF-8 keep their
// bytes through read-kafka | print. --value-format string and --key-format string: the column
// is null and the record is rescued (value_base64/key_base64) and written to --bad-records;
// --value-format json: a string field with stray bytes is null and its verbatim JSON value is
// base64 in value._rescued_data, with one warning for the partition. kcat reads the same bytes.
func TestNotUTF8(t *testing.T) {
	c := kafkatest.NewReal(t)
	kcat := c.Real.KcatPath(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "not-utf8", 1, nil)
	c.Produce(t,
		&kgo.Record{Topic: topic, Key: []byte("k\xff"), Value: []byte("{\"id\":1,\"name\":\"bad\xff\xfeutf8\"}")},
		&kgo.Record{Topic: topic, Key: []byte("k2"), Value: []byte(`{"id":2,"name":"ok"}`)},
		&kgo.Record{Topic: topic, Key: []byte("k3"), Value: []byte("{\"id\":3,\"name\":\"caf\xe9\"}")})
	raw := kafkatest.KcatConsume(t, kcat, c.Brokers, topic)
	if len(raw) != 3 {
		t.Fatalf("kcat reads %d records", len(raw))
	}
	bad := filepath.Join(kafkatest.TempDir(t), "bad.ndjson")
	read := []string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now"}
	printer := []string{"print", "--format", "json"}
	rows := func(out []byte) []map[string]any {
		var rs []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			rs = append(rs, m)
		}
		return rs
	}
	b64 := base64.StdEncoding.EncodeToString

	// string key and value
	out, err := pipeline(t, append(read, "--key-format", "string", "--value-format", "string", "--bad-records", bad), printer)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows(out) {
		resc, _ := r["_rescued_data"].(string)
		var m map[string]any
		_ = json.Unmarshal([]byte(resc), &m)
		switch i {
		case 0:
			if r["key"] != nil || r["value"] != nil || m["key_base64"] != b64(raw[0].Key) || m["value_base64"] != b64(raw[0].Value) {
				t.Errorf("string row 0: %v", r)
			}
		case 1:
			if r["key"] != "k2" || r["value"] != string(raw[1].Value) || resc != "" {
				t.Errorf("string row 1: %v", r)
			}
		case 2:
			if r["key"] != "k3" || r["value"] != nil || m["value_base64"] != b64(raw[2].Value) {
				t.Errorf("string row 2: %v", r)
			}
		}
	}
	lines, err := os.ReadFile(bad)
	if err != nil || strings.Count(string(lines), "\n") != 2 || !strings.Contains(string(lines), `"value_base64":"`+b64(raw[2].Value)+`"`) {
		t.Errorf("--bad-records: %v\n%s", err, lines)
	}

	// json value
	_, stderr, err := streamkit(t, nil, append(read, "--value-format", "json", "--value-schema", "id BIGINT, name STRING")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if n := strings.Count(stderr, "not valid UTF-8"); n != 1 {
		t.Errorf("%d warnings, want one for the partition:\n%s", n, stderr)
	}
	out, err = pipeline(t, append(read, "--value-format", "json", "--value-schema", "id BIGINT, name STRING"), printer)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows(out) {
		v, _ := r["value"].(map[string]any)
		resc, _ := v["_rescued_data"].(string)
		var m map[string]any
		_ = json.Unmarshal([]byte(resc), &m)
		wantName := map[int]string{0: "\"bad\xff\xfeutf8\"", 2: "\"caf\xe9\""}[i]
		if wantName == "" {
			if v["name"] != "ok" || resc != "" {
				t.Errorf("json row %d: %v", i, r)
			}
		} else if v["name"] != nil || m["name_base64"] != b64([]byte(wantName)) {
			t.Errorf("json row %d: %v, want name null and name_base64 of %q", i, r, wantName)
		}
	}
}
