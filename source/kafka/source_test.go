package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/schemaregistry"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// run runs read-kafka in-process and returns its decoded output and error. dir is the
// checkpoint ("" for none). With commit, the output goes through `print` (a committing sink,
// printing to nowhere) and is not returned.
type runOpts struct {
	dir      string
	commit   bool
	epoch    time.Duration
	batch    int
	interupt chan struct{}
}

func run(t *testing.T, cfg kafka.Config, o runOpts) (kafkatest.Output, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src, err := kafka.New(cfg)
	if err != nil {
		return kafkatest.Output{}, err
	}
	if o.epoch == 0 {
		o.epoch = time.Hour
	}
	if o.batch == 0 {
		o.batch = 1000
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	so := stage.SourceOptions{Options: stage.Options{Tool: "read-kafka", Checkpoint: o.dir, Stdout: pw, Stderr: io.Discard,
		Progress: stage.ProgressOff, NoSignals: true, StateOptions: cfg.StateOptions(), Interrupt: o.interupt, Mem: mem},
		EpochInterval: o.epoch, BatchRows: o.batch, Linger: 20 * time.Millisecond}
	if cfg.Until == "now" {
		so.End = "pause"
	}
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		serr = stage.RunSource(context.Background(), so, src)
		pw.Close()
	}()
	col := &collector{}
	oo := stage.Options{Tool: "collect", Checkpoint: filepath.Join(filepath.Dir(o.dir), "collect"), Stdin: pr, Stdout: io.Discard,
		Stderr: io.Discard, Progress: stage.ProgressOff, NoSignals: true}
	if !o.commit {
		oo.Checkpoint = ""
	}
	oerr := stage.RunOperator(context.Background(), oo, col)
	pr.Close()
	<-done
	if serr == nil && oerr != nil {
		t.Fatalf("sink: %v", oerr)
	}
	return col.out, serr
}

// collector is a sink recording rows and controls; with a checkpoint it commits every epoch.
type collector struct{ out kafkatest.Output }

func (c *collector) Open(_ context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	c.out.Schema = in
	if env.Dir != nil {
		env.MarkSink()
	}
	return nil, nil
}
func (c *collector) Process(_ context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	rows := kafkatest.Rows(rec)
	c.out.Rows = append(c.out.Rows, rows...)
	c.out.Events = append(c.out.Events, fmt.Sprintf("rows %d", rec.NumRows()))
	// Every batch names the one partition its rows come from.
	tag, ok := codec.BatchPartition(rec)
	for _, r := range rows {
		if want := fmt.Sprintf("%s/%d", r.Topic, r.Partition); !ok || tag != want {
			c.out.Events = append(c.out.Events, fmt.Sprintf("bad partition tag %q (%v) on a row of %s", tag, ok, want))
			break
		}
	}
	return nil
}
func (c *collector) Watermark(context.Context, time.Time, stage.Emit) error { return nil }
func (c *collector) Barrier(_ context.Context, n uint64, _ stage.Emit) error {
	s := fmt.Sprintf("barrier %d", n)
	c.out.Controls, c.out.Events = append(c.out.Controls, s), append(c.out.Events, s)
	return nil
}
func (c *collector) End(_ context.Context, k codec.EndKind, _ stage.Emit) error {
	s := "end " + k.String()
	c.out.Controls, c.out.Events = append(c.out.Controls, s), append(c.out.Events, s)
	return nil
}
func (c *collector) Close() error { return nil }

func walPos(t *testing.T, dir string) kafka.Offsets {
	t.Helper()
	return walPosition(t, dir).Offsets
}

func base(c *kafkatest.Cluster, topics ...string) kafka.Config {
	return kafka.Config{Conn: c.Conn, Topics: topics, Until: "now"}
}

func rec(topic string, p int32, key, value []byte, hs ...kgo.RecordHeader) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Key: key, Value: value, Headers: hs}
}

// Tests are shared by kfake (here) and the real broker (it_test.go).
var scenarios = []struct {
	name string
	fn   func(*testing.T, *kafkatest.Cluster)
}{
	{"RecordsAsSpark", testRecordsAsSpark},
	{"Transactions", testTransactions},
	{"UntilNowWhileProducing", testUntilNowWhileProducing},
	{"StartModes", testStartModes},
	{"ReplayReproducesEpochs", testReplayReproducesEpochs},
	{"DataLoss", testDataLoss},
	{"CompactedGaps", testCompactedGaps},
	{"GroupCommit", testGroupCommit},
	{"MultiTopicPatternAssign", testMultiTopicPatternAssign},
	{"JSONValues", testJSONValues},
	{"PatternPicksUpNewTopics", testPatternPicksUpNewTopics},
	{"ReplayBeyondTheLog", testReplayBeyondTheLog},
	{"CapSpreadOverPartitions", testCapSpreadOverPartitions},
	{"StaticMembers", testStaticMembers},
}

func TestFake(t *testing.T) {
	c := kafkatest.NewFake(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.fn(t, c) })
	}
}

// testRecordsAsSpark: every column as Spark's Kafka source, null vs empty, binary keys,
// repeated and null-valued headers, timestamps to the millisecond.
func testRecordsAsSpark(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "spark", 2, nil)
	ts := time.Date(2024, 5, 1, 12, 0, 0, 123e6, time.UTC)
	recs := []*kgo.Record{
		rec(topic, 0, nil, nil),
		rec(topic, 0, []byte{}, []byte{}),
		rec(topic, 0, []byte{0xff, 0x00, 0xfe, 'k'}, []byte("v"), kgo.RecordHeader{Key: "a", Value: []byte("1")},
			kgo.RecordHeader{Key: "a", Value: []byte("2")}, kgo.RecordHeader{Key: "n", Value: nil}, kgo.RecordHeader{Key: "e", Value: []byte{}}),
		rec(topic, 1, []byte("k1"), nil),
		rec(topic, 1, nil, []byte{0x80, 0x81}),
	}
	for i, r := range recs {
		r.Timestamp = ts.Add(time.Duration(i) * time.Millisecond)
	}
	c.Produce(t, recs...)
	out, err := run(t, base(c, topic), runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	wantFields := []string{"key: binary", "value: binary", "topic: utf8", "partition: int32", "offset: int64",
		"timestamp: timestamp[us, tz=UTC]", "timestampType: int32", "headers: list<item: struct<key: utf8 nullable, value: binary nullable>, nullable>"}
	for i, f := range out.Schema.Fields() {
		if i >= len(wantFields) || !strings.HasPrefix(fmt.Sprintf("%s: %s", f.Name, f.Type), wantFields[i]) {
			t.Fatalf("schema field %d = %s: %s, want %s", i, f.Name, f.Type, wantFields[i])
		}
	}
	got := c.Consume(t, topic, false)
	kafkatest.SortRows(out.Rows)
	if len(out.Rows) != len(got) || len(got) != len(recs) {
		t.Fatalf("read %d rows, kgo consumer %d, produced %d", len(out.Rows), len(got), len(recs))
	}
	for i := range got {
		if err := kafkatest.SameRecord(out.Rows[i], got[i]); err != nil {
			t.Errorf("row %d: %v", i, err)
		}
		if out.Rows[i].TimestampType != 0 {
			t.Errorf("row %d: timestampType %d, want 0 (CreateTime)", i, out.Rows[i].TimestampType)
		}
		if (len(got[i].Headers) == 0) != out.Rows[i].HeadersNull {
			t.Errorf("row %d: headers null = %v with %d headers", i, out.Rows[i].HeadersNull, len(got[i].Headers))
		}
	}
	if want := []string{"barrier 1", "end pause"}; fmt.Sprint(out.Controls) != fmt.Sprint(want) {
		t.Errorf("controls %v, want %v", out.Controls, want)
	}
	// string formats: UTF-8 kept, other bytes rescued (base64) and never silently null.
	cfg := base(c, topic)
	cfg.KeyFormat, cfg.ValueFormat = "string", "string"
	out, err = run(t, cfg, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.SortRows(out.Rows)
	if len(out.Rows) != len(recs) {
		t.Fatalf("string formats: %d rows, want %d: %v (events %v)", len(out.Rows), len(recs), out.Rows, out.Events)
	}
	if r := out.Rows[2]; r.Key != nil || r.Rescued == nil || !strings.Contains(*r.Rescued, `"key_base64":"/wD+aw=="`) {
		t.Errorf("binary key as string: key %q rescued %v", r.Key, r.Rescued)
	}
	if r := out.Rows[1]; r.KeyS == nil || *r.KeyS != "" || r.ValueS == nil || *r.ValueS != "" || r.Rescued != nil {
		t.Errorf("empty key/value as string: %v", r)
	}
}

// testTransactions: committed, aborted, committed; read_committed yields only committed
// records and the position ends past the last marker.
func testTransactions(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "txn", 1, nil)
	tc := c.TxnClient(t, "txn-"+topic)
	kafkatest.Txn(t, tc, true, rec(topic, 0, []byte("a"), []byte("1")), rec(topic, 0, []byte("b"), []byte("2")))
	kafkatest.Txn(t, tc, false, rec(topic, 0, []byte("x"), []byte("aborted")), rec(topic, 0, []byte("y"), []byte("aborted")))
	kafkatest.Txn(t, tc, true, rec(topic, 0, []byte("c"), []byte("3")))
	// 2 + marker + 2 + marker + 1 + marker; the coordinator writes the last marker
	// asynchronously after EndTransaction returns.
	end := c.Ends(t, topic)[0]
	for i := 0; i < 100 && end != 8; i++ {
		time.Sleep(50 * time.Millisecond)
		end = c.Ends(t, topic)[0]
	}
	if end != 8 {
		t.Fatalf("log end %d, want 8", end)
	}
	dir := filepath.Join(kafkatest.TempDir(t), "read-kafka")
	out, err := run(t, base(c, topic), runOpts{dir: dir, commit: true})
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, r := range out.Rows {
		vals = append(vals, string(r.Value))
	}
	if fmt.Sprint(vals) != "[1 2 3]" {
		t.Fatalf("read_committed read %v, want [1 2 3]", vals)
	}
	if pos := walPos(t, dir); pos[kafka.TP{Topic: topic, Partition: 0}] != end {
		t.Fatalf("checkpoint position %v, want %d (past the last marker)", pos, end)
	}
	cfg := base(c, topic)
	cfg.Isolation = kafka.ReadUncommitted
	out, err = run(t, cfg, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 5 {
		t.Fatalf("read_uncommitted read %d rows, want 5", len(out.Rows))
	}
	// An open transaction: read_committed stops before it (the last stable offset) and ends.
	open := c.TxnClient(t, "open-"+topic)
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := open.ProduceSync(ctx, rec(topic, 0, nil, []byte("open"))).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.Produce(t, rec(topic, 0, nil, []byte("after"))) // non-transactional, after the open one
	out, err = run(t, base(c, topic), runOpts{dir: dir, commit: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 0 {
		t.Fatalf("records beyond the last stable offset were read: %v", out.Rows)
	}
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	c.WaitStable(t, topic)
	out, err = run(t, base(c, topic), runOpts{dir: dir, commit: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 2 || string(out.Rows[0].Value) != "open" || string(out.Rows[1].Value) != "after" {
		t.Fatalf("after commit read %v", out.Rows)
	}
	if pos := walPos(t, dir); pos[kafka.TP{Topic: topic, Partition: 0}] != c.Ends(t, topic)[0] {
		t.Fatalf("checkpoint position %v, want the log end %d", pos, c.Ends(t, topic)[0])
	}
}

// testUntilNowWhileProducing: --until now ends although producers keep writing.
func testUntilNowWhileProducing(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "busy", 2, nil)
	for i := 0; i < 100; i++ {
		c.Produce(t, rec(topic, int32(i%2), nil, []byte(fmt.Sprint(i))))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.Client.ProduceSync(context.Background(), rec(topic, int32(i%2), nil, []byte("more")))
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	var out kafkatest.Output
	var err error
	go func() { out, err = run(t, base(c, topic), runOpts{}); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("--until now did not end while producers kept writing")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) < 100 || out.Controls[len(out.Controls)-1] != "end pause" {
		t.Fatalf("read %d rows, controls %v", len(out.Rows), out.Controls)
	}
}

func testStartModes(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "start", 2, nil)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		r := rec(topic, int32(i%2), nil, []byte(fmt.Sprint(i)))
		r.Timestamp = t0.Add(time.Duration(i) * time.Minute)
		c.Produce(t, r)
	}
	for _, tc := range []struct {
		start string
		want  int
	}{
		{"earliest", 20},
		{"latest", 0},
		{"-3", 6},
		{"@" + t0.Add(15*time.Minute).Format(time.RFC3339), 5},
		{fmt.Sprint(t0.Add(16 * time.Minute).UnixMilli()), -1}, // not @: rejected
		{"@" + fmt.Sprint(t0.Add(16*time.Minute).UnixMilli()), 4},
		{fmt.Sprintf(`{%q:{"0":8,"1":-1}}`, topic), 2},
	} {
		cfg := base(c, topic)
		cfg.Start = tc.start
		out, err := run(t, cfg, runOpts{})
		if tc.want < 0 {
			var ue *stage.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("--start %s: got %v, want a usage error", tc.start, err)
			}
			continue
		}
		if err != nil || len(out.Rows) != tc.want {
			t.Errorf("--start %s: %d rows, %v; want %d", tc.start, len(out.Rows), err, tc.want)
		}
	}
	// --until @time and max-records-per-epoch.
	cfg := base(c, topic)
	cfg.Until = "@" + t0.Add(10*time.Minute).Format(time.RFC3339)
	cfg.MaxRecordsPerEpoch = 4
	out, err := run(t, cfg, runOpts{})
	if err != nil || len(out.Rows) != 10 {
		t.Fatalf("--until @t: %d rows, %v", len(out.Rows), err)
	}
	if b := out.Barriers(); len(b) != 3 {
		t.Fatalf("10 rows with 4 per epoch: barriers %v, events %v", b, out.Events)
	}
}

// testReplayReproducesEpochs: without commits, a second run replays every epoch from the WAL
// with the same rows, then continues.
func testReplayReproducesEpochs(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "replay", 3, nil)
	for i := 0; i < 50; i++ {
		c.Produce(t, rec(topic, int32(i%3), []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i))))
	}
	dir := filepath.Join(kafkatest.TempDir(t), "read-kafka")
	cfg := base(c, topic)
	cfg.MaxRecordsPerEpoch = 7
	first, err := run(t, cfg, runOpts{dir: dir, batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 60; i++ {
		c.Produce(t, rec(topic, int32(i%3), []byte(fmt.Sprint(i)), []byte(fmt.Sprint(i))))
	}
	second, err := run(t, cfg, runOpts{dir: dir, batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	epochs := func(o kafkatest.Output) [][]string {
		var out [][]string
		var cur []string
		i := 0
		for _, e := range o.Events {
			var n int
			if _, err := fmt.Sscanf(e, "rows %d", &n); err == nil {
				for ; n > 0; n-- {
					r := o.Rows[i]
					cur = append(cur, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
					i++
				}
			} else if strings.HasPrefix(e, "barrier") {
				sortStrings(cur)
				out = append(out, cur)
				cur = nil
			}
		}
		return out
	}
	e1, e2 := epochs(first), epochs(second)
	if len(e1) != 8 || len(e2) < 10 {
		t.Fatalf("epochs: first run %d, second %d", len(e1), len(e2))
	}
	for i := range e1 {
		if fmt.Sprint(e1[i]) != fmt.Sprint(e2[i]) {
			t.Fatalf("epoch %d differs on replay:\n%v\n%v", i+1, e1[i], e2[i])
		}
	}
	if len(second.Rows) != 60 {
		t.Fatalf("second run read %d rows, want 60 (50 replayed + 10 new)", len(second.Rows))
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// testDataLoss: a committed position before the log start (records deleted) or beyond its end
// (topic re-created) fails with a message naming both ranges, unless --on-data-loss.
func testDataLoss(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "loss", 1, nil)
	for i := 0; i < 10; i++ {
		c.Produce(t, rec(topic, 0, nil, []byte(fmt.Sprint(i))))
	}
	root := kafkatest.TempDir(t)
	dir := filepath.Join(root, "read-kafka")
	cfg := base(c, topic)
	cfg.Until = fmt.Sprintf(`{%q:{"0":5}}`, topic)
	if _, err := run(t, cfg, runOpts{dir: dir, commit: true}); err != nil {
		t.Fatal(err)
	}
	if pos := walPos(t, dir); pos[kafka.TP{Topic: topic, Partition: 0}] != 5 {
		t.Fatalf("position %v, want 5", pos)
	}
	ctx := context.Background()
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 8})
	if r, err := c.Admin.DeleteRecords(ctx, del); err != nil || r.Error() != nil {
		t.Fatalf("delete records: %v %v", err, r.Error())
	}
	_, err := run(t, base(c, topic), runOpts{dir: dir, commit: true})
	var dl *kafka.DataLossError
	if !errors.As(err, &dl) {
		t.Fatalf("got %v, want a DataLossError", err)
	}
	for _, want := range []string{topic, "partition 0", "position 5", "[8, 10)", "--on-data-loss"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// earliest continues at 8, latest at 10.
	for _, tc := range []struct {
		choice string
		want   int
	}{{"latest", 0}, {"earliest", 2}} {
		d := filepath.Join(root, tc.choice, "read-kafka")
		copyDir(t, dir, d)
		cfg := base(c, topic)
		cfg.OnDataLoss = tc.choice
		out, err := run(t, cfg, runOpts{dir: d})
		if err != nil || len(out.Rows) != tc.want {
			t.Fatalf("--on-data-loss %s: %d rows, %v; want %d", tc.choice, len(out.Rows), err, tc.want)
		}
		if pos := walPos(t, d); pos[kafka.TP{Topic: topic, Partition: 0}] != 10 {
			t.Fatalf("--on-data-loss %s: position %v, want 10", tc.choice, pos)
		}
	}
	// Beyond the end: the topic was re-created with fewer records.
	c.Recreate(t, topic, 1)
	c.ProduceFresh(t, rec(topic, 0, nil, []byte("new")))
	_, err = run(t, base(c, topic), runOpts{dir: dir})
	if !errors.As(err, &dl) || dl.CheckpointTopicID.IsZero() || !strings.Contains(err.Error(), "re-created") {
		t.Fatalf("re-created topic: got %v", err)
	}
	cfg = base(c, topic)
	cfg.OnDataLoss = "earliest"
	out, err := run(t, cfg, runOpts{dir: dir})
	if err != nil || len(out.Rows) != 1 || string(out.Rows[0].Value) != "new" {
		t.Fatalf("re-created topic with --on-data-loss earliest: %v %v", out.Rows, err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testCompactedGaps: a compacted topic with offset gaps is read to its end.
func testCompactedGaps(t *testing.T, c *kafkatest.Cluster) {
	compact := "compact"
	small, zero := "0.001", "0"
	segMs := "100"
	cfgs := map[string]*string{"cleanup.policy": &compact, "min.cleanable.dirty.ratio": &small, "delete.retention.ms": &zero,
		"segment.ms": &segMs, "min.compaction.lag.ms": &zero}
	topic := c.Topic(t, "compacted", 1, cfgs)
	for k := 0; k < 10; k++ {
		c.Produce(t, rec(topic, 0, []byte(fmt.Sprint(k)), []byte("first")))
	}
	time.Sleep(150 * time.Millisecond) // segments roll on time
	for k := 0; k < 10; k += 2 {
		c.Produce(t, rec(topic, 0, []byte(fmt.Sprint(k)), []byte("second")))
	}
	time.Sleep(150 * time.Millisecond)
	c.Produce(t, rec(topic, 0, []byte("3"), nil)) // a tombstone
	if !compactUntil(t, c, topic, func(n int) bool { return n < 14 }) {
		t.Fatal("the broker did not compact in time")
	}
	end := c.Ends(t, topic)[0]
	dir := filepath.Join(kafkatest.TempDir(t), "read-kafka")
	out, err := run(t, base(c, topic), runOpts{dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gaps := 0
	for i := 1; i < len(out.Rows); i++ {
		if out.Rows[i].Offset != out.Rows[i-1].Offset+1 {
			gaps++
		}
	}
	if gaps == 0 || len(out.Rows) >= int(end) {
		t.Fatalf("no gaps in %d rows of %d offsets", len(out.Rows), end)
	}
	if pos := walPos(t, dir); pos[kafka.TP{Topic: topic, Partition: 0}] != end {
		t.Fatalf("position %v, want %d", pos, end)
	}
}

// compactUntil triggers (kfake) or waits for (real broker) compaction until ok(records left).
func compactUntil(t *testing.T, c *kafkatest.Cluster, topic string, ok func(int) bool) bool {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if c.Fake != nil {
			c.Fake.Compact()
		}
		if n := len(c.Consume(t, topic, false)); ok(n) {
			return true
		}
		if c.Fake == nil {
			// The real cleaner needs a new segment to roll the dirty ones.
			c.Produce(t, rec(topic, 0, []byte("roll"), []byte("x")))
			time.Sleep(2 * time.Second)
		}
	}
	return false
}

// testGroupCommit: --group receives the committed epoch's offsets (past the markers).
func testGroupCommit(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "group", 2, nil)
	tc := c.TxnClient(t, "g-"+topic)
	kafkatest.Txn(t, tc, true, rec(topic, 0, nil, []byte("a")), rec(topic, 1, nil, []byte("b")))
	kafkatest.Txn(t, tc, false, rec(topic, 0, nil, []byte("x")))
	c.WaitStable(t, topic)
	dir := filepath.Join(kafkatest.TempDir(t), "read-kafka")
	cfg := base(c, topic)
	cfg.Group = "grp-" + topic
	if _, err := run(t, cfg, runOpts{dir: dir, commit: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp, err := c.Admin.FetchOffsets(ctx, cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	ends := c.Ends(t, topic)
	for p, end := range ends {
		o, ok := resp.Lookup(topic, p)
		if !ok || o.At != end {
			t.Errorf("group offset of partition %d = %v, want %d (no lag)", p, o.At, end)
		}
	}
	lag, err := c.Admin.Lag(ctx, cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	if l := lag[cfg.Group].Lag.Total(); l != 0 {
		t.Errorf("group lag %d, want 0", l)
	}
}

func testMultiTopicPatternAssign(t *testing.T, c *kafkatest.Cluster) {
	a := c.Topic(t, "multi-a", 2, nil)
	b := c.Topic(t, "multi-b", 1, nil)
	for i := 0; i < 6; i++ {
		c.Produce(t, rec(a, int32(i%2), nil, []byte("a")), rec(b, 0, nil, []byte("b")))
	}
	out, err := run(t, base(c, a, b), runOpts{})
	if err != nil || len(out.Rows) != 12 {
		t.Fatalf("two topics: %d rows, %v", len(out.Rows), err)
	}
	cfg := base(c)
	cfg.Pattern = regexp.QuoteMeta(a) + "|" + regexp.QuoteMeta(b)
	out, err = run(t, cfg, runOpts{})
	if err != nil || len(out.Rows) != 12 {
		t.Fatalf("pattern: %d rows, %v", len(out.Rows), err)
	}
	cfg = base(c)
	cfg.Assign = []string{a + ":1"}
	out, err = run(t, cfg, runOpts{})
	if err != nil || len(out.Rows) != 3 {
		t.Fatalf("assign: %d rows, %v", len(out.Rows), err)
	}
	for _, r := range out.Rows {
		if r.Topic != a || r.Partition != 1 {
			t.Fatalf("assign %s:1 read %v", a, r)
		}
	}
}

func TestFlagValidation(t *testing.T) {
	for _, cfg := range []kafka.Config{
		{},
		{Topics: []string{"a"}, Pattern: "b"},
		{Topics: []string{"a"}, Start: "yesterday"},
		{Topics: []string{"a"}, Until: "tomorrow"},
		{Topics: []string{"a"}, Isolation: "serializable"},
		{Topics: []string{"a"}, OnDataLoss: "ignore"},
		{Assign: []string{"a"}},
		{Topics: []string{"a"}, KeyFormat: "xml"},
		{Topics: []string{"a"}, ValueFormat: "avro"},
		{Topics: []string{"a"}, ValueFormat: "avro", ValueSchema: `{"type":"record","name":"R","fields":[{"name":"x","type":"nope"}]}`},
		{Topics: []string{"a"}, ValueFormat: "json", ValueSchema: "x INT", Registry: schemaregistry.Config{URL: "http://127.0.0.1:1"}},
		{Topics: []string{"a"}, ValueFormat: "avro", Registry: schemaregistry.Config{URL: "127.0.0.1:8081"}},
		{Topics: []string{"a"}, Member: "3/3"},
		{Topics: []string{"a"}, Member: "0/0"},
		{Topics: []string{"a"}, Member: "-1/2"},
		{Topics: []string{"a"}, Member: "1"},
		{Topics: []string{"a"}, Member: "a/b"},
		{Assign: []string{"a:0"}, Member: "0/2"},
	} {
		var ue *stage.UsageError
		if _, err := kafka.New(cfg); !errors.As(err, &ue) {
			t.Errorf("%+v: got %v, want a usage error", cfg, err)
		}
	}
}

// TestColumnsRegistryReader: with an avro value whose reader schema comes from the registry
// when the run opens, New checks the --columns names that do not reach into the value; the
// value's paths wait for its schema (tools/readkafka TestAvroRegistryColumns runs them).
// testStaticMembers: three members (--member I/3) of two topics of 5 and 2 partitions read
// partitions p mod 3 = I, each record once in all; a checkpoint of member 1/3 refuses a
// restart as 1/4 or without --member (exit 2: its positions are another share's).
func testStaticMembers(t *testing.T, c *kafkatest.Cluster) {
	a := c.Topic(t, "member-a", 5, nil)
	b := c.Topic(t, "member-b", 2, nil)
	for i := 0; i < 20; i++ {
		c.Produce(t, rec(a, int32(i%5), nil, []byte("a")), rec(b, int32(i%2), nil, []byte("b")))
	}
	dir := t.TempDir()
	total := 0
	for i := 0; i < 3; i++ {
		cfg := base(c, a, b)
		cfg.Member = fmt.Sprintf("%d/3", i)
		ck := filepath.Join(dir, fmt.Sprintf("m%d", i), "read")
		out, err := run(t, cfg, runOpts{dir: ck, commit: true})
		if err != nil {
			t.Fatalf("member %s: %v", cfg.Member, err)
		}
		pos := walPos(t, ck)
		for _, tp := range pos.Sorted() {
			if tp.Partition%3 != int32(i) {
				t.Errorf("member %s holds a position of partition %s", cfg.Member, tp)
			}
		}
		want := map[string]int{a: (5 + 2 - i) / 3, b: (2 + 2 - i) / 3} // partitions p < 5 (2) with p mod 3 = i
		for topic, n := range want {
			got := 0
			for _, tp := range pos.Sorted() {
				if tp.Topic == topic {
					got++
				}
			}
			if got != n {
				t.Errorf("member %s: %d partitions of %s in its checkpoint, want %d (%v)", cfg.Member, got, topic, n, pos)
			}
		}
		for _, r := range out.Rows {
			if r.Partition%3 != int32(i) {
				t.Errorf("member %s read a record of %s/%d", cfg.Member, r.Topic, r.Partition)
			}
		}
		total += len(out.Rows)
	}
	if total != 40 {
		t.Errorf("the members read %d records in all, want 40", total)
	}
	ck := filepath.Join(dir, "m1", "read")
	for _, m := range []string{"1/4", ""} {
		cfg := base(c, a, b)
		cfg.Member = m
		_, err := run(t, cfg, runOpts{dir: ck})
		var ie *state.IncompatibleError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "member") || stage.ExitCode(err) != stage.ExitUsage {
			t.Errorf("restart of member 1/3's checkpoint with --member %q: %v, want the checkpoint's options refused (exit 2)", m, err)
		}
	}
}

func TestColumnsRegistryReader(t *testing.T) {
	cfg := kafka.Config{Topics: []string{"a"}, ValueFormat: "avro", Registry: schemaregistry.Config{URL: "http://127.0.0.1:1"}}
	cfg.Columns = []string{" value.x", "value.y.*", "offset"}
	if _, err := kafka.New(cfg); err != nil {
		t.Errorf("--columns %s: %v", cfg.Columns, err)
	}
	cfg.Columns = []string{"value.x", "nope"}
	var ue *stage.UsageError
	if _, err := kafka.New(cfg); !errors.As(err, &ue) || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("--columns %s: got %v, want a usage error naming nope", cfg.Columns, err)
	}
}

func TestOffsetsJSON(t *testing.T) {
	o := kafka.Offsets{{Topic: "b", Partition: 10}: 5, {Topic: "b", Partition: 2}: 7, {Topic: "a", Partition: 0}: -2}
	b, _ := json.Marshal(o)
	if string(b) != `{"a":{"0":-2},"b":{"2":7,"10":5}}` {
		t.Fatalf("got %s", b)
	}
	var back kafka.Offsets
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 3 || back[kafka.TP{Topic: "b", Partition: 10}] != 5 {
		t.Fatalf("round trip %v %v", back, err)
	}
	if b, _ := json.Marshal(kafka.Offsets{}); string(b) != "{}" {
		t.Fatalf("empty: %s", b)
	}
}

// testJSONValues: --value-format json with a DDL schema; extra and mistyped fields rescued in
// value._rescued_data, a value that is not JSON rescued whole with its reason and source, a
// tombstone null — nothing silently dropped.
func testJSONValues(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "json", 1, nil)
	for _, v := range [][]byte{
		[]byte(`{"id":1,"user":{"name":"ann"}}`),
		[]byte(`{"id":2,"user":{"name":"bob"},"extra":true}`),
		[]byte(`{"id":"three","user":null}`),
		[]byte(`not json`),
		nil,
	} {
		c.Produce(t, rec(topic, 0, []byte("k"), v))
	}
	cfg := base(c, topic)
	cfg.ValueFormat, cfg.ValueSchema = "json", "id BIGINT, user STRUCT<name: STRING>"
	out, err := run(t, cfg, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := out.Schema.FieldsByName("value"); len(f) != 1 || f[0].Type.String() != "struct<id: int64 nullable, user: struct<name: utf8 nullable> nullable, _rescued_data: utf8 nullable>" {
		t.Fatalf("value column %v", f)
	}
	want := []struct{ value, rescued string }{
		{`{"_rescued_data":null,"id":1,"user":{"name":"ann"}}`, ""},
		{`{"_rescued_data":"{\"extra\":true,\"_file\":\"` + topic + `/0@1\"}","id":2,"user":{"name":"bob"}}`, ""},
		{`{"_rescued_data":"{\"id\":\"three\",\"_file\":\"` + topic + `/0@2\"}","id":null,"user":null}`, ""},
		{"", `{"value":"not json","_error":"value: `},
		{"", ""},
	}
	if len(out.Rows) != len(want) {
		t.Fatalf("%d rows", len(out.Rows))
	}
	for i, w := range want {
		r := out.Rows[i]
		if got := string(r.Value); got != w.value {
			t.Errorf("row %d value %s, want %s", i, got, w.value)
		}
		switch {
		case w.rescued == "" && r.Rescued != nil:
			t.Errorf("row %d rescued %s, want none", i, *r.Rescued)
		case w.rescued != "" && (r.Rescued == nil || !strings.HasPrefix(*r.Rescued, w.rescued) || !strings.Contains(*r.Rescued, topic+"/0@3")):
			t.Errorf("row %d rescued %v, want %s…", i, r.Rescued, w.rescued)
		}
	}
}

// testPatternPicksUpNewTopics: live reading with --pattern reads a matching topic created
// after the start, from its earliest offset; an interrupt ends the run with end=pause.
func testPatternPicksUpNewTopics(t *testing.T, c *kafkatest.Cluster) {
	a := c.Topic(t, "pat", 1, nil)
	c.Produce(t, rec(a, 0, nil, []byte("a")))
	prefix := a[:strings.LastIndexByte(a, '-')]
	cfg := base(c)
	cfg.Until = "never"
	cfg.Pattern = regexp.QuoteMeta(prefix) + "-.*"
	cfg.DiscoveryInterval = 100 * time.Millisecond
	intr := make(chan struct{}, 1)
	done := make(chan struct{})
	var out kafkatest.Output
	var err error
	go func() { out, err = run(t, cfg, runOpts{interupt: intr}); close(done) }()
	time.Sleep(500 * time.Millisecond)
	b := prefix + "-late"
	if r, err := c.Admin.CreateTopic(context.Background(), 1, 1, nil, b); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if c.Real != nil {
		t.Cleanup(func() { c.Admin.DeleteTopic(context.Background(), b) })
	}
	c.ProduceFresh(t, rec(b, 0, nil, []byte("b")))
	time.Sleep(2 * time.Second)
	intr <- struct{}{}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("interrupt did not end the live run")
	}
	if !errors.Is(err, stage.ErrInterrupted) {
		t.Fatalf("got %v, want ErrInterrupted", err)
	}
	var vals []string
	for _, r := range out.Rows {
		vals = append(vals, string(r.Value))
	}
	if fmt.Sprint(vals) != "[a b]" || out.Controls[len(out.Controls)-1] != "end pause" {
		t.Fatalf("rows %v, controls %v", vals, out.Controls)
	}
}

// TestFakeSASL: PLAIN and SCRAM against kfake (the real broker has no PLAIN listener), the
// password from a file or the environment, none at all a usage error.
func TestFakeSASL(t *testing.T) {
	fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "app", "s3cret-plain"),
		kfake.Superuser("SCRAM-SHA-512", "app", "s3cret-plain"), kfake.SeedTopics(1, "secured"))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fc.ListenAddrs()...), kgo.SASL(plain.Auth{User: "app", Pass: "s3cret-plain"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "secured", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("s3cret-plain\n"), 0o600)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		cfg := kafka.Config{Topics: []string{"secured"}, Until: "now"}
		cfg.Conn.Brokers = fc.ListenAddrs()
		cfg.Conn.SASLMechanism, cfg.Conn.SASLUser, cfg.Conn.SASLPasswordFile = mech, "app", pwFile
		out, err := run(t, cfg, runOpts{})
		if err != nil || len(out.Rows) != 1 {
			t.Fatalf("%s: %d rows, %v", mech, len(out.Rows), err)
		}
	}
	t.Setenv("KAFKA_PW_TEST", "s3cret-plain")
	cfg := kafka.Config{Topics: []string{"secured"}, Until: "now"}
	cfg.Conn.Brokers = fc.ListenAddrs()
	cfg.Conn.SASLMechanism, cfg.Conn.SASLUser, cfg.Conn.SASLPasswordEnv = "PLAIN", "app", "KAFKA_PW_TEST"
	if out, err := run(t, cfg, runOpts{}); err != nil || len(out.Rows) != 1 {
		t.Fatalf("password from env: %d rows, %v", len(out.Rows), err)
	}
	// A wrong password is tested on the real broker (kfake drops the connection instead of
	// answering SASL_AUTHENTICATION_FAILED).
	// No password at all is a usage error naming both ways to give one.
	os.Unsetenv("KAFKA_PW_TEST")
	_, err = run(t, cfg, runOpts{})
	var ue *stage.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--sasl-password-file") {
		t.Fatalf("no password: %v", err)
	}
}

// testReplayBeyondTheLog: an uncommitted epoch whose end lies beyond the log (the topic was
// re-created meanwhile) fails with a DataLossError instead of waiting forever.
func testReplayBeyondTheLog(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "beyond", 1, nil)
	for i := 0; i < 10; i++ {
		c.Produce(t, rec(topic, 0, nil, []byte(fmt.Sprint(i))))
	}
	dir := filepath.Join(kafkatest.TempDir(t), "read-kafka")
	if _, err := run(t, base(c, topic), runOpts{dir: dir}); err != nil { // nothing commits
		t.Fatal(err)
	}
	c.Recreate(t, topic, 1)
	for i := 0; i < 3; i++ {
		c.ProduceFresh(t, rec(topic, 0, nil, []byte("new")))
	}
	// The start position (offsets of epoch 0) holds the old topic's ID: the restart refuses the
	// re-created topic at once (testTopicRecreated). Without the ID (a checkpoint written before
	// IDs were recorded, nor in the WAL) the replay finds its end beyond the new log.
	var dl *kafka.DataLossError
	if _, err := run(t, base(c, topic), runOpts{dir: dir}); !errors.As(err, &dl) || dl.CheckpointTopicID.IsZero() {
		t.Fatalf("got %v, want a DataLossError naming the topic IDs", err)
	}
	// --on-data-loss earliest: the uncommitted epoch of the old topic is not replayed; the new
	// topic is read from its start.
	cont := filepath.Join(filepath.Dir(dir), "earliest", "read-kafka")
	copyDir(t, dir, cont)
	cfg := base(c, topic)
	cfg.OnDataLoss = "earliest"
	if out, err := run(t, cfg, runOpts{dir: cont}); err != nil || len(out.Rows) != 3 || string(out.Rows[0].Value) != "new" {
		t.Fatalf("--on-data-loss earliest: %d rows, %v; want the new topic's 3", len(out.Rows), err)
	}
	for n, off := range []int{0, 10} {
		if err := state.WriteJSON(filepath.Join(dir, state.OffsetsDir), state.EpochName(uint64(n))+".json",
			json.RawMessage(fmt.Sprintf(`{%q:{"0":%d}}`, topic, off))); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := run(t, base(c, topic), runOpts{dir: dir}); done <- err }()
	select {
	case err := <-done:
		if !errors.As(err, &dl) || dl.Offset != 10 || dl.End != 3 {
			t.Fatalf("got %v, want a DataLossError at offset 10 beyond the log end 3", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the replay waited for offsets beyond the log")
	}
}

// testCapSpreadOverPartitions (issue #17): --max-records-per-epoch spreads the cap over the
// partitions in proportion to their lag (Spark's maxOffsetsPerTrigger), instead of reading one
// partition after another; the schema declares the partitions with a backlog, and every batch
// names its partition.
func testCapSpreadOverPartitions(t *testing.T, c *kafkatest.Cluster) {
	topic := c.Topic(t, "capspread", 4, nil)
	var recs []*kgo.Record
	for p, n := range []int{40, 20, 10, 0} {
		for i := 0; i < n; i++ {
			recs = append(recs, rec(topic, int32(p), nil, []byte(fmt.Sprint(i))))
		}
	}
	c.Produce(t, recs...)
	cfg := base(c, topic)
	cfg.MaxRecordsPerEpoch = 10
	out, err := run(t, cfg, runOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(codec.Info(out.Schema).Partitions, ","), fmt.Sprintf("%[1]s/0,%[1]s/1,%[1]s/2", topic); got != want {
		t.Errorf("declared partitions %q, want %q (those with a backlog)", got, want)
	}
	perEpoch := []map[int32]int{{}}
	i := 0
	for _, e := range out.Events {
		var n int
		switch {
		case strings.HasPrefix(e, "bad partition tag"):
			t.Error(e)
		case strings.HasPrefix(e, "barrier"):
			perEpoch = append(perEpoch, map[int32]int{})
		default:
			if _, err := fmt.Sscanf(e, "rows %d", &n); err == nil {
				for ; n > 0; n-- {
					perEpoch[len(perEpoch)-1][out.Rows[i].Partition]++
					i++
				}
			}
		}
	}
	// Lags 40, 20, 10: shares 5.71, 2.86, 1.43 of 10; the two offsets left over go to the
	// largest fractions (partitions 1 and 0).
	if got := fmt.Sprint(perEpoch[0]); got != "map[0:6 1:3 2:1]" {
		t.Errorf("epoch 1 read %s per partition, want map[0:6 1:3 2:1]; events %v", got, out.Events)
	}
	if len(out.Rows) != 70 || len(out.Barriers()) != 7 {
		t.Errorf("%d rows in %d epochs, want 70 in 7; events %v", len(out.Rows), len(out.Barriers()), out.Events)
	}
}
