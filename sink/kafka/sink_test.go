package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	sink "github.com/streamkit/streamkit/sink/kafka"
	source "github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/tools/stage"
)

// pipe runs read-kafka | write-kafka in-process with checkpoints under root.
func pipe(t *testing.T, src source.Config, dst sink.Config, root string, maxPerEpoch int64) (error, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	old := stage.Mem
	stage.Mem = mem
	defer func() { stage.Mem = old; mem.AssertSize(t, 0) }()
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
		Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true, StateOptions: src.StateOptions()},
		EpochInterval: time.Hour, BatchRows: 100, Linger: 20 * time.Millisecond, End: "pause"}
	oo := stage.Options{Tool: "write-kafka", Checkpoint: filepath.Join(root, "write-kafka"), Stdin: pr, Stdout: io.Discard,
		Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true, StateOptions: dst.StateOptions()}
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
}

func TestFake(t *testing.T) {
	c := kafkatest.NewFake(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.fn(t, c) })
	}
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
	in := c.Topic(t, "eos-in", 2, nil)
	out := c.Topic(t, "eos-out", 2, nil)
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
	c.Produce(t, rec(in, 0, []byte("k"), []byte("hello")))
	root := kafkatest.TempDir(t)
	serr, oerr := pipe(t, source.Config{Conn: c.Conn, Topics: []string{in}, Until: "now", ValueFormat: "string"},
		sink.Config{Conn: c.Conn, Topic: out, ValueFormat: sink.FormatJSON, Key: sink.None}, root, 0)
	if serr != nil || oerr != nil {
		t.Fatal(serr, oerr)
	}
	got := c.Consume(t, out, false)
	if len(got) != 1 || got[0].Key != nil {
		t.Fatalf("got %v", got)
	}
	var m map[string]any
	if err := json.Unmarshal(got[0].Value, &m); err != nil {
		t.Fatalf("value %s: %v", got[0].Value, err)
	}
	if m["value"] != "hello" || m["key"] != "aw==" || m["topic"] != in || m["offset"] != float64(0) || !strings.HasPrefix(fmt.Sprint(m["timestamp"]), "20") {
		t.Fatalf("row JSON %s", got[0].Value)
	}
}
