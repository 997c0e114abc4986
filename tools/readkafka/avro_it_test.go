package readkafka_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/source/kafka"
)

// avroPeer runs scripts/py/avro_interop.py (confluent-kafka's AvroSerializer/Deserializer).
func avroPeer(t *testing.T, args ...string) []byte {
	t.Helper()
	root := peertest.Root(t)
	// A bounded run: once a consume hung for minutes after a failed registry request; the
	// script dumps its Python stack at 100 s (faulthandler) and the context kills it at 120 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, peertest.Python(t), append([]string{filepath.Join(root, "scripts", "py", "avro_interop.py")}, args...)...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("avro_interop.py %v: %v (context: %v)\n%s\nregistry log:\n%s", args[0], err, ctx.Err(), se.String(), peertest.RegistryLogTail(t, 40))
	}
	return so.Bytes()
}

func testdata(name string) string { return filepath.Join("testdata", "avro", name) }

// TestAvroConfluent: records serialised by confluent-kafka's AvroSerializer with two schema
// versions registered in the real registry (Apicurio) are read by read-kafka
// --schema-registry: every field equals what confluent-kafka's AvroDeserializer reads; v1
// records resolve into the latest (v2) reader schema with the added field's default, and into a
// v1 reader file with v2's field dropped; a bad magic byte, truncated Avro and an unknown
// schema id are rescued and written to --bad-records with topic, partition, offset and reason,
// and nothing is lost (records in = decoded + bad).
func TestAvroConfluent(t *testing.T) {
	c := kafkatest.NewReal(t)
	reg := peertest.SchemaRegistry(t)
	brokers := strings.Join(c.Brokers, ",")
	topic := c.Topic(t, "avro-cf", 1, nil)
	var ids [2]uint32
	for i, v := range []string{"v1", "v2"} {
		var r struct{ IDs []uint32 }
		out := avroPeer(t, "produce", brokers, reg, topic, testdata("order-"+v+".avsc"), testdata("orders-"+v+".json"))
		if err := json.Unmarshal(out, &r); err != nil || len(r.IDs) != 1 {
			t.Fatalf("producer said %s (%v)", out, err)
		}
		ids[i] = r.IDs[0]
	}
	if ids[0] == ids[1] {
		t.Fatalf("v1 and v2 got one schema id %d", ids[0])
	}
	wire := func(id uint32, body ...byte) []byte {
		b := binary.BigEndian.AppendUint32([]byte{0}, id)
		return append(b, body...)
	}
	badIn := [][]byte{append([]byte{1}, wire(ids[0], 2, 6, 'a')[1:]...), wire(ids[0], 2, 6, 'a'), wire(999999, 2)}
	for _, b := range badIn {
		c.Produce(t, &kgo.Record{Topic: topic, Partition: 0, Value: b})
	}
	const good, total = 4, 7

	// The independent reading: confluent-kafka's AvroDeserializer.
	type peerRec struct {
		Offset int64
		ID     uint32
		Value  map[string]any
	}
	var want []peerRec
	for _, l := range strings.Split(strings.TrimSpace(string(avroPeer(t, "consume", brokers, reg, topic, strconv.Itoa(good)))), "\n") {
		var r peerRec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ndjson")
	stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", brokers, "-t", topic, "--until", "now",
		"--value-format", "avro", "--schema-registry", reg, "--bad-records", bad)
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	out := kafkatest.Decode(t, bytes.NewReader(stdout))
	vf, _ := out.Schema.FieldsByName("value")
	if len(vf) != 1 {
		t.Fatal("no value column")
	}
	if id, _ := vf[0].Metadata.GetValue(kafka.MetaSchemaID); id != strconv.Itoa(int(ids[1])) {
		t.Errorf("value metadata schema id %q, want the latest (v2) id %d", id, ids[1])
	}
	if len(out.Rows) != total {
		t.Fatalf("%d rows, want %d", len(out.Rows), total)
	}
	checkRows := func(rows []kafkatest.Row, v2Reader bool) {
		t.Helper()
		for i, w := range want {
			var got map[string]any
			if err := json.Unmarshal(rows[i].Value, &got); err != nil {
				t.Fatalf("row %d value %q: %v", i, rows[i].Value, err)
			}
			sameAvro(t, i, got, w.Value, v2Reader)
			if rows[i].Rescued != nil {
				t.Errorf("row %d rescued %s", i, *rows[i].Rescued)
			}
		}
	}
	checkRows(out.Rows, true)
	for i, why := range []string{"magic byte 0x01", "bad avro data", "schema id 999999"} {
		r := out.Rows[good+i]
		if r.Value != nil || r.Rescued == nil || !strings.Contains(*r.Rescued, why) {
			t.Errorf("bad row %d: value %s rescued %v, want %q", i, r.Value, r.Rescued, why)
		}
	}
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != total-good {
		t.Fatalf("bad-records has %d lines, want %d:\n%s", len(lines), total-good, data)
	}
	for i, l := range lines {
		var m struct {
			Topic       string
			Partition   int32
			Offset      int64
			Reason      string
			ValueBase64 string `json:"value_base64"`
			Value       *string
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(m.ValueBase64)
		if m.Value != nil {
			raw = []byte(*m.Value)
		}
		if m.Topic != topic || m.Partition != 0 || m.Offset != int64(good+i) || !bytes.Equal(raw, badIn[i]) || m.Reason == "" {
			t.Errorf("bad-records line %d: %s", i, l)
		}
	}

	// A v1 reader schema file: v2 records resolve into it (country dropped).
	stdout, stderr, err = streamkit(t, nil, "read-kafka", "-b", brokers, "-t", topic, "--until", "now",
		"--value-format", "avro", "--schema-registry", reg, "--value-schema", testdata("order-v1.avsc"))
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	out = kafkatest.Decode(t, bytes.NewReader(stdout))
	if len(out.Rows) != total {
		t.Fatalf("v1 reader: %d rows", len(out.Rows))
	}
	if vf, _ := out.Schema.FieldsByName("value"); len(vf) == 1 {
		if id, _ := vf[0].Metadata.GetValue(kafka.MetaSchemaID); id != strconv.Itoa(int(ids[0])) {
			t.Errorf("v1 reader file: metadata schema id %q, want v1's id %d", id, ids[0])
		}
	}
	checkRows(out.Rows, false)

	// An unreachable registry: every record is rescued with the reason, none dropped.
	stdout, stderr, err = streamkit(t, nil, "read-kafka", "-b", brokers, "-t", topic, "--until", "now",
		"--value-format", "avro", "--schema-registry", "http://127.0.0.1:1", "--value-schema", testdata("order-v2.avsc"))
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	out = kafkatest.Decode(t, bytes.NewReader(stdout))
	if len(out.Rows) != total {
		t.Fatalf("unreachable registry: %d rows", len(out.Rows))
	}
	for i, r := range out.Rows {
		if r.Value != nil || r.Rescued == nil || (i != good && !strings.Contains(*r.Rescued, "unreachable")) {
			t.Errorf("unreachable registry, row %d: value %s rescued %v", i, r.Value, r.Rescued)
		}
	}

	// Downstream dot paths work on the decoded struct.
	res, err := pipeline(t, []string{"read-kafka", "-b", brokers, "-t", topic, "--until", "now", "--value-format", "avro", "--schema-registry", reg},
		[]string{"print", "--format", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res, []byte(`"user":{"name":"cé","tags":["z"]}`)) {
		t.Errorf("print output lacks the nested user of record 3:\n%s", res)
	}
}

// sameAvro compares one decoded value (read-kafka's struct as JSON) with confluent-kafka's
// AvroDeserializer output for the same record (scripts/py/avro_interop.py plain form).
func sameAvro(t *testing.T, i int, got, want map[string]any, v2Reader bool) {
	t.Helper()
	eq := func(field string, g, w any) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("record %d %s: read-kafka %s, confluent-kafka %s", i, field, gj, wj)
		}
	}
	for _, f := range []string{"user_id", "user", "note", "state"} {
		eq(f, got[f], want[f])
	}
	attrs := map[string]any{}
	for _, kv := range got["attrs"].([]any) {
		m := kv.(map[string]any)
		attrs[m["key"].(string)] = m["value"]
	}
	eq("attrs", attrs, want["attrs"])
	ga, _ := new(big.Rat).SetString(got["amount"].(string))
	wa, _ := new(big.Rat).SetString(want["amount"].(string))
	if ga == nil || wa == nil || ga.Cmp(wa) != 0 {
		t.Errorf("record %d amount: %v vs %v", i, got["amount"], want["amount"])
	}
	ts, err := time.Parse(time.RFC3339Nano, got["ts"].(string))
	if err != nil || ts.UnixMilli() != int64(want["ts"].(float64)) {
		t.Errorf("record %d ts: %v vs %v (%v)", i, got["ts"], want["ts"], err)
	}
	eq("day", got["day"], want["day"])
	blob, _ := base64.StdEncoding.DecodeString(got["blob"].(string))
	eq("blob", hex.EncodeToString(blob), want["blob"])
	switch {
	case !v2Reader:
		if _, has := got["country"]; has {
			t.Errorf("record %d: v1 reader has country", i)
		}
	case want["country"] == nil:
		eq("country (default)", got["country"], "FR")
	default:
		eq("country", got["country"], want["country"])
	}
}

// TestAvroWriteKafka: write-kafka --value-format avro --schema-registry writes what
// confluent-kafka's AvroDeserializer reads back: the decoded value column re-encoded (schema
// derived from the Arrow type) equals the original records field by field, and whole rows
// written as records carry the columns.
func TestAvroWriteKafka(t *testing.T) {
	c := kafkatest.NewReal(t)
	reg := peertest.SchemaRegistry(t)
	brokers := strings.Join(c.Brokers, ",")
	in := c.Topic(t, "avro-w-in", 1, nil)
	outCol := c.Topic(t, "avro-w-col", 1, nil)
	outRow := c.Topic(t, "avro-w-row", 1, nil)
	avroPeer(t, "produce", brokers, reg, in, testdata("order-v2.avsc"), testdata("orders-v2.json"))
	read := []string{"read-kafka", "-b", brokers, "-t", in, "--until", "now", "--value-format", "avro", "--schema-registry", reg}
	if _, err := pipeline(t, read, []string{"write-kafka", "-b", brokers, "-t", outCol, "--key", "value.user.name", "--key-format", "avro",
		"--value", "value", "--value-format", "avro", "--schema-registry", reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline(t, read, []string{"write-kafka", "-b", brokers, "-t", outRow, "--key", "none", "--value-format", "avro",
		"--schema-registry", reg}); err != nil {
		t.Fatal(err)
	}
	type peerRec struct {
		Offset int64
		ID     uint32
		Value  map[string]any
	}
	consume := func(topic string) []peerRec {
		var out []peerRec
		for _, l := range strings.Split(strings.TrimSpace(string(avroPeer(t, "consume", brokers, reg, topic, "2"))), "\n") {
			var r peerRec
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	orig, col, row := consume(in), consume(outCol), consume(outRow)
	if len(orig) != 2 || len(col) != 2 || len(row) != 2 {
		t.Fatalf("records: %d in, %d column, %d row", len(orig), len(col), len(row))
	}
	for i := range orig {
		o, _ := json.Marshal(orig[i].Value)
		g, _ := json.Marshal(col[i].Value)
		if !bytes.Equal(o, g) {
			t.Errorf("record %d: written %s, original %s", i, g, o)
		}
		r := row[i].Value
		v, _ := json.Marshal(r["value"])
		if !bytes.Equal(v, o) || r["topic"] != in || r["offset"] != float64(i) || r["partition"] != 0.0 || r["key"] != nil {
			t.Errorf("row record %d: %v (value %s)", i, r, v)
		}
	}
	// Keys and values both Avro, read back by read-kafka with reader schemas from the subjects.
	stdout, stderr, err := streamkit(t, nil, "read-kafka", "-b", brokers, "-t", outCol, "--until", "now",
		"--key-format", "avro", "--value-format", "avro", "--schema-registry", reg)
	if err != nil {
		t.Fatalf("read-kafka: %v\n%s", err, stderr)
	}
	back := kafkatest.Decode(t, bytes.NewReader(stdout))
	kf, _ := back.Schema.FieldsByName("key")
	if len(kf) != 1 || kf[0].Type.String() != "utf8" || len(back.Rows) != 2 {
		t.Fatalf("key column %v, %d rows", kf, len(back.Rows))
	}
	for i, r := range back.Rows {
		name, _ := orig[i].Value["user"].(map[string]any)["name"].(string)
		if string(r.Key) != name || r.Rescued != nil {
			t.Errorf("row %d key %q rescued %v, want %q", i, r.Key, r.Rescued, name)
		}
	}
	if col[0].ID == orig[0].ID || col[0].ID == row[0].ID {
		t.Errorf("schema ids: in %d, column %d, row %d: want the derived schemas registered apart", orig[0].ID, col[0].ID, row[0].ID)
	}
}
