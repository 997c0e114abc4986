package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/kafkatest"
	sink "github.com/streamkit/streamkit/sink/kafka"
	source "github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// pipe runs read-kafka | write-kafka in-process with checkpoints under root.
func pipe(t *testing.T, src source.Config, dst sink.Config, root string, maxPerEpoch int64) (error, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src.MaxRecordsPerEpoch = maxPerEpoch
	s, err := source.New(src)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sink.New(dst)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	so := stage.SourceOptions{Options: stage.Options{Tool: "read-kafka", Checkpoint: filepath.Join(root, "read-kafka"), Stdout: pw,
		Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true, StateOptions: src.StateOptions(), Mem: mem},
		EpochInterval: time.Hour, BatchRows: 100, Linger: 20 * time.Millisecond, End: "pause"}
	oo := stage.Options{Tool: "write-kafka", Checkpoint: filepath.Join(root, "write-kafka"), Stdin: pr, Stdout: io.Discard,
		Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true, StateOptions: dst.StateOptions(), Mem: mem}
	var serr error
	done := make(chan struct{})
	go func() { defer close(done); serr = stage.RunSource(context.Background(), so, s); pw.Close() }()
	oerr := stage.RunOperator(context.Background(), oo, k)
	pr.Close()
	<-done
	return serr, oerr
}

var scenarios = []struct {
	name string
	fn   func(*testing.T, *kafkatest.Cluster)
}{
	{"CopyKeepsEverything", testCopyKeepsEverything},
	{"TransactionsExactlyOnce", testTransactionsExactlyOnce},
	{"ValueJSON", testValueJSON},
	{"MissingTopicCreated", testMissingTopicCreated},
	{"MissingTopicTransactional", testMissingTopicTransactional},
	{"UnreplayableTransactionalRefused", testUnreplayableTransactionalRefused},
}

// TestFake runs the scenarios on kfake, which creates missing topics as a broker with
// auto.create.topics.enable=true does.
func TestFake(t *testing.T) {
	c := kafkatest.NewFake(t, kfake.AllowAutoTopicCreation())
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.fn(t, c) })
	}
}

// TestMissingTopicRefused: a broker that does not create topics (kfake's default, as
// auto.create.topics.enable=false) makes write-kafka -t fail at start, saying that the topic
// does not exist and how to create it, without or with --transactional-id.
func TestMissingTopicRefused(t *testing.T) {
	c := kafkatest.NewFake(t)
	in := c.Topic(t, "refused-in", 1, nil)
	c.Produce(t, rec(in, 0, []byte("k"), []byte("v")))
	for _, txn := range []string{"", "tx-refused"} {
		out := c.MissingTopic(t, "refused-out")
		_, oerr := pipe(t, source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now"},
			sink.Config{Conn: c.Conn, Topic: out, TransactionalID: txn}, kafkatest.TempDir(t), 0)
		want := "topic " + out + " does not exist and the broker did not create it"
		if oerr == nil || !strings.Contains(oerr.Error(), want) || !strings.Contains(oerr.Error(), "kafka-topics.sh --bootstrap-server "+c.Brokers[0]+" --create --topic "+out) {
			t.Errorf("transactional id %q: got %v, want an error containing %q and the kafka-topics.sh command", txn, oerr, want)
		}
	}
}

// testMissingTopicCreated: -t names a topic that does not exist yet: the broker creates it
// (auto.create.topics.enable=true) and every record is written.
func testMissingTopicCreated(t *testing.T, c *kafkatest.Cluster) {
	in := c.Topic(t, "auto-in", 2, nil)
	out := c.MissingTopic(t, "auto-out")
	for i := 0; i < 20; i++ {
		c.Produce(t, rec(in, int32(i%2), []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i))))
	}
	serr, oerr := pipe(t, source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now"}, sink.Config{Conn: c.Conn, Topic: out},
		kafkatest.TempDir(t), 0)
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	seen := map[string]int{}
	for _, r := range c.Consume(t, out, false) {
		seen[string(r.Value)]++
	}
	for i := 0; i < 20; i++ {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("record %d written %d times to the auto-created topic", i, n)
		}
	}
}

// testMissingTopicTransactional: the exactly-once copy into a topic that does not exist yet
// (created by the broker, no epoch recorded), then restarted after a crash between the Kafka
// commit and the commit markers: no duplicates.
func testMissingTopicTransactional(t *testing.T, c *kafkatest.Cluster) {
	eosCopy(t, c, c.MissingTopic(t, "auto-eos-out"))
}

func rec(topic string, p int32, key, value []byte, hs ...kgo.RecordHeader) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Key: key, Value: value, Headers: hs}
}

// testCopyKeepsEverything: read-kafka | write-kafka copies keys, values (null vs empty),
// headers (order, repeats, null values) and timestamps.
func testCopyKeepsEverything(t *testing.T, c *kafkatest.Cluster) {
	in := c.Topic(t, "copy-in", 1, nil)
	out := c.Topic(t, "copy-out", 1, nil)
	ts := time.Date(2023, 3, 4, 5, 6, 7, 8e6, time.UTC)
	recs := []*kgo.Record{
		rec(in, 0, nil, nil),
		rec(in, 0, []byte{}, []byte{}),
		rec(in, 0, []byte{0xff, 0xfe}, []byte("v"), kgo.RecordHeader{Key: "h", Value: []byte("1")}, kgo.RecordHeader{Key: "h", Value: nil},
			kgo.RecordHeader{Key: "e", Value: []byte{}}),
	}
	for i, r := range recs {
		r.Timestamp = ts.Add(time.Duration(i) * time.Hour)
	}
	c.Produce(t, recs...)
	root := kafkatest.TempDir(t)
	serr, oerr := pipe(t, source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now"}, sink.Config{Conn: c.Conn, Topic: out}, root, 0)
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	got := c.Consume(t, out, false)
	if len(got) != len(recs) {
		t.Fatalf("copied %d records, want %d", len(got), len(recs))
	}
	for i, r := range got {
		w := recs[i]
		row := kafkatest.Row{Key: w.Key, Value: w.Value, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: w.Timestamp}
		for _, h := range w.Headers {
			row.Headers = append(row.Headers, kafkatest.Header{Key: h.Key, Value: h.Value})
		}
		if err := kafkatest.SameRecord(row, r); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
	}
	if c, _ := state.Committed(filepath.Join(root, "read-kafka")); c != 1 {
		t.Fatalf("read-kafka committed %d, want 1", c)
	}
}

// testTransactionsExactlyOnce: with --transactional-id, a crash after the Kafka commit but
// before the commit markers replays the epoch, and the replay is aborted: read_committed
// sees every record once.
func testTransactionsExactlyOnce(t *testing.T, c *kafkatest.Cluster) {
	eosCopy(t, c, c.Topic(t, "eos-out", 2, nil))
}

// eosCopy copies a topic into out with a transactional id in epochs of 10 records, forgets the
// commit markers of the last epoch, adds records and copies again: read_committed sees every
// record once.
func eosCopy(t *testing.T, c *kafkatest.Cluster, out string) {
	in := c.Topic(t, "eos-in", 2, nil)
	for i := 0; i < 30; i++ {
		c.Produce(t, rec(in, int32(i%2), []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i))))
	}
	root := kafkatest.TempDir(t)
	srcCfg := source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now"}
	dstCfg := sink.Config{Conn: c.Conn, Topic: out, TransactionalID: "tx-" + out}
	if serr, oerr := pipe(t, srcCfg, dstCfg, root, 10); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	// Forget the commit of the last epoch (3): as if both stages were killed after the Kafka
	// transaction committed but before the markers were written.
	for _, d := range []string{"read-kafka", "write-kafka"} {
		p := filepath.Join(root, d, state.CommitsDir, state.EpochName(3)+".json")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := 30; i < 35; i++ {
		c.Produce(t, rec(in, int32(i%2), []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i))))
	}
	if serr, oerr := pipe(t, srcCfg, dstCfg, root, 10); serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	committed := c.Consume(t, out, false)
	uncommitted := c.Consume(t, out, true)
	seen := map[string]int{}
	for _, r := range committed {
		seen[string(r.Value)]++
	}
	for i := 0; i < 35; i++ {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("record %d seen %d times by read_committed", i, n)
		}
	}
	if len(uncommitted) <= len(committed) {
		t.Errorf("read_uncommitted saw %d records, read_committed %d: the replayed epoch was not produced and aborted", len(uncommitted), len(committed))
	}
	// A fresh checkpoint with the same transactional id is refused (its epochs would be
	// aborted as replays).
	_, oerr := pipe(t, srcCfg, dstCfg, kafkatest.TempDir(t), 10)
	if oerr == nil || !strings.Contains(oerr.Error(), "checkpoint was reset") {
		t.Errorf("fresh checkpoint, same transactional id: %v", oerr)
	}
	// The epoch number is in the transactional id's group.
	resp, err := c.Admin.FetchOffsetsForTopics(context.Background(), dstCfg.TransactionalID, out)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(out, 0); !ok || o.At != 4 {
		t.Errorf("epoch recorded in Kafka: %+v, want 4", o)
	}
}

func testValueJSON(t *testing.T, c *kafkatest.Cluster) {
	in := c.Topic(t, "json-in", 1, nil)
	out := c.Topic(t, "json-out", 1, nil)
	c.Produce(t, rec(in, 0, []byte("k"), []byte("hello")), rec(in, 0, nil, []byte("no key")))
	root := kafkatest.TempDir(t)
	serr, oerr := pipe(t, source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now", ValueFormat: "string"},
		sink.Config{Conn: c.Conn, Topic: out, ValueFormat: sink.FormatJSON, Key: sink.None}, root, 0)
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	got := c.Consume(t, out, false)
	if len(got) != 2 || got[0].Key != nil {
		t.Fatalf("got %v", got)
	}
	// A null column is left out, as Spark's to_json does (ignoreNullFields).
	if v := string(got[1].Value); strings.Contains(v, `"key"`) || strings.Contains(v, "null") || !strings.Contains(v, `"value":"no key"`) {
		t.Errorf("row with a null key: %s, want no key field", v)
	}
	var m map[string]any
	if err := json.Unmarshal(got[0].Value, &m); err != nil {
		t.Fatalf("value %s: %v", got[0].Value, err)
	}
	if m["value"] != "hello" || m["key"] != "aw==" || m["topic"] != in || m["offset"] != float64(0) || !strings.HasPrefix(fmt.Sprint(m["timestamp"]), "20") {
		t.Fatalf("row JSON %s", got[0].Value)
	}
}

// runBatch runs write-kafka on one batch of (topic, value) string rows, from row `from` on (a
// sliced batch), followed by barrier 1 and the end.
func runBatch(t *testing.T, cfg sink.Config, from int64, topics, values []string) error {
	return runBatchInfo(t, cfg, codec.StreamInfo{}, from, topics, values)
}

// runBatchInfo is runBatch with the stream's schema metadata info (e.g. Replayable).
func runBatchInfo(t *testing.T, cfg sink.Config, info codec.StreamInfo, from int64, topics, values []string) error {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := codec.WithInfo(arrow.NewSchema([]arrow.Field{{Name: "topic", Type: arrow.BinaryTypes.String}, {Name: "value", Type: arrow.BinaryTypes.String}}, nil), info)
	b := array.NewRecordBuilder(mem, sc)
	b.Field(0).(*array.StringBuilder).AppendValues(topics, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(values, nil)
	whole := b.NewRecordBatch()
	b.Release()
	batch := whole.NewSlice(from, whole.NumRows())
	whole.Release()
	defer batch.Release()
	var in bytes.Buffer
	w := codec.NewWriter(&in, sc, mem)
	if err := errors.Join(w.Write(batch), w.WriteControl(codec.BarrierControl(1)), w.WriteControl(codec.EndControl(codec.Final)), w.Close()); err != nil {
		t.Fatal(err)
	}
	k, err := sink.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return stage.RunOperator(context.Background(), stage.Options{Tool: "write-kafka", Checkpoint: kafkatest.TempDir(t), Stdin: &in,
		Stdout: io.Discard, Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true}, k)
}

// TestStringValueSliced: string values are written as their bytes, the last row of a batch and
// the rows of a sliced batch included.
func TestStringValueSliced(t *testing.T) {
	c := kafkatest.NewFake(t)
	out := c.Topic(t, "string-value", 1, nil)
	if err := runBatch(t, sink.Config{Conn: c.Conn}, 1, []string{out, out, out, out}, []string{"a", "bb", "ccc", "dddd"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Consume(t, out, false) {
		got = append(got, string(r.Value))
	}
	if fmt.Sprint(got) != "[bb ccc dddd]" {
		t.Fatalf("values %q, want [bb ccc dddd]", got)
	}
}

// TestMissingTopicColumnRefused: without -t, a row whose "topic" column names a topic that the
// broker does not create fails the epoch with the same explanation.
func TestMissingTopicColumnRefused(t *testing.T) {
	c := kafkatest.NewFake(t)
	out := c.MissingTopic(t, "refused-col")
	err := runBatch(t, sink.Config{Conn: c.Conn}, 0, []string{out}, []string{"v"})
	if err == nil || !strings.Contains(err.Error(), "topic "+out+" does not exist and the broker did not create it") {
		t.Fatalf("got %v", err)
	}
}

// testUnreplayableTransactionalRefused: with --transactional-id, write-kafka aborts epochs up to
// the one Kafka holds as replays, so a stream whose epochs are not replayable (a source without
// a checkpoint, numbering from 1 on every run) is refused at its first barrier, saying how to
// run it, and nothing of it is committed; the same rows from a replayable stream are written,
// and a second run of them (same epoch 1) is aborted as the replay it is.
func testUnreplayableTransactionalRefused(t *testing.T, c *kafkatest.Cluster) {
	out := c.Topic(t, "unreplayable-out", 1, nil)
	cfg := sink.Config{Conn: c.Conn, Topic: out, TransactionalID: "tx-" + out}
	rows := []string{out, out}
	err := runBatchInfo(t, cfg, codec.StreamInfo{}, 0, rows, []string{"a", "b"})
	if err == nil || stage.ExitCode(err) != 2 || !strings.Contains(err.Error(), "epochs are not replayable") ||
		!strings.Contains(err.Error(), "without --transactional-id") {
		t.Fatalf("unreplayable stream: %v (exit %d)", err, stage.ExitCode(err))
	}
	if got := c.Consume(t, out, false); len(got) != 0 {
		t.Fatalf("read_committed sees %d records of the refused epoch", len(got))
	}
	for run := 0; run < 2; run++ {
		if err := runBatchInfo(t, cfg, codec.StreamInfo{Replayable: true}, 0, rows, []string{"a", "b"}); err != nil {
			t.Fatalf("replayable stream, run %d: %v", run, err)
		}
	}
	if got := c.Consume(t, out, false); len(got) != 2 {
		t.Fatalf("read_committed sees %d records, want 2", len(got))
	}
}
