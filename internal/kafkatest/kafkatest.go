// Package kafkatest runs read-kafka and write-kafka tests against either franz-go's in-process
// kfake cluster (fast unit tests) or the real Kafka broker of scripts/kafka.sh
// (peertest.Kafka), and decodes streamkit output streams into plain Go rows for comparisons.
package kafkatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/kafkaconn"
	"github.com/streamkit/streamkit/internal/peertest"
)

// Cluster is a Kafka cluster under test.
type Cluster struct {
	Brokers []string
	// Conn connects over PLAINTEXT.
	Conn kafkaconn.Config
	// Fake is the kfake cluster, nil on the real broker.
	Fake *kfake.Cluster
	// Real is the real broker, nil on kfake.
	Real *peertest.KafkaBroker
	// Client is an idempotent producer / admin client; Admin wraps it.
	Client *kgo.Client
	Admin  *kadm.Client
}

// NewFake starts an in-process kfake cluster (closed with the test).
func NewFake(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	fc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fc.Close)
	c := &Cluster{Brokers: fc.ListenAddrs(), Fake: fc}
	c.init(t)
	return c
}

// NewReal returns the real broker (skips or fails like peertest.Kafka).
func NewReal(t testing.TB) *Cluster {
	t.Helper()
	b := peertest.Kafka(t)
	c := &Cluster{Brokers: []string{b.Plaintext}, Real: b}
	c.init(t)
	return c
}

func (c *Cluster) init(t testing.TB) {
	c.Conn = kafkaconn.Config{Brokers: c.Brokers}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.Client, c.Admin = cl, kadm.NewClient(cl)
}

var topicSeq atomic.Int64

// Topic creates a topic with a unique name starting with prefix and returns the name.
// configs are topic configs (e.g. cleanup.policy=compact).
func (c *Cluster) Topic(t testing.TB, prefix string, partitions int32, configs map[string]*string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, topicSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Admin.CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	// Wait until the partitions have leaders, so the first produce does not race creation.
	for i := 0; i < 100; i++ {
		md, err := c.Admin.Metadata(ctx, name)
		if err == nil {
			if td, ok := md.Topics[name]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ok := true
				for _, p := range td.Partitions {
					ok = ok && p.Leader >= 0
				}
				if ok {
					break
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.deleteAfter(t, name)
	return name
}

// deleteAfter deletes topic name from the real broker when the test ends.
func (c *Cluster) deleteAfter(t testing.TB, name string) {
	if c.Real != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.Admin.DeleteTopic(ctx, name)
		})
	}
}

// MissingTopic returns a unique topic name starting with prefix that does not exist yet (a test
// of auto-creation); on the real broker it is deleted after the test if something created it.
func (c *Cluster) MissingTopic(t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, topicSeq.Add(1))
	c.deleteAfter(t, name)
	return name
}

// Produce writes recs synchronously (failing the test on any error).
func (c *Cluster) Produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// ProduceFresh writes recs with a new client (after a topic was re-created: a client caches
// topic IDs).
func (c *Cluster) ProduceFresh(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := cl.ProduceSync(ctx, recs...).FirstErr()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("produce: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Recreate deletes topic and creates it again with partitions (retrying while the deletion is
// still under way), so it gets a new topic ID and its offsets start again at 0. Produce to it
// with ProduceFresh.
func (c *Cluster) Recreate(t testing.TB, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Admin.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	for {
		r, err := c.Admin.CreateTopic(ctx, partitions, 1, nil, topic)
		if err == nil && r.Err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("re-create topic %s: %v %v", topic, err, r.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TopicID returns topic's ID (KIP-516) on the brokers now, from a direct metadata request (a
// client's cache may still hold a deleted topic's ID).
func (c *Cluster) TopicID(t testing.TB, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.Client)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, resp)
	}
	return resp.Topics[0].TopicID
}

// TxnClient returns a transactional producer with id.
func (c *Cluster) TxnClient(t testing.TB, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.TransactionalID(id), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Txn produces recs in one transaction, committed or aborted.
func Txn(t testing.TB, cl *kgo.Client, commit bool, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce in transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction: %v", err)
	}
}

// Ends returns the high watermark of every partition of topic.
func (c *Cluster) Ends(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := c.Admin.ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// WaitStable waits until no transaction is open or completing on topic (last stable offset =
// high watermark on every partition): a transaction coordinator writes the markers after
// EndTransaction returns.
func (c *Cluster) WaitStable(t testing.TB, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		hw, err1 := c.Admin.ListEndOffsets(ctx, topic)
		lso, err2 := c.Admin.ListCommittedOffsets(ctx, topic)
		stable := err1 == nil && err2 == nil
		if stable {
			hw.Each(func(o kadm.ListedOffset) {
				if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
					stable = false
				}
			})
		}
		if stable {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s: transactions still open after 30s", topic)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Consume reads every record of topic (read_committed unless uncommitted) with a plain
// franz-go consumer, until the partitions stay quiet for a second.
func (c *Cluster) Consume(t testing.TB, topic string, uncommitted bool) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadCommitted()
	if uncommitted {
		iso = kgo.ReadUncommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	quiet := time.Now()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && time.Since(quiet) < time.Second; {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		if n := len(fs.Records()); n > 0 {
			out = append(out, fs.Records()...)
			quiet = time.Now()
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// Header is one record header; a nil Value is a null header value.
type Header struct {
	Key   string
	Value []byte
}

// Row is one row of read-kafka's output; nil Key/Value are nulls.
type Row struct {
	Key, Value    []byte
	KeyS, ValueS  *string // string-format columns (nil: null or not a string column)
	Topic         string
	Partition     int32
	Offset        int64
	Timestamp     time.Time
	TimestampType int32
	Headers       []Header
	HeadersNull   bool
	Rescued       *string
}

func (r Row) String() string {
	return fmt.Sprintf("%s/%d@%d key=%s value=%s ts=%s/%d headers=%v", r.Topic, r.Partition, r.Offset, show(r.Key), show(r.Value),
		r.Timestamp.Format(time.RFC3339Nano), r.TimestampType, r.Headers)
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// Output is a decoded streamkit stream.
type Output struct {
	Schema   *arrow.Schema
	Rows     []Row
	Controls []string // "barrier 1", "end pause", in order, interleaved as "rows N" markers
	Events   []string // rows counts and controls in stream order, e.g. "rows 3", "barrier 1"
}

// Barriers returns the epochs of the barriers seen.
func (o Output) Barriers() []string {
	var out []string
	for _, c := range o.Controls {
		if strings.HasPrefix(c, "barrier ") {
			out = append(out, c)
		}
	}
	return out
}

// Decode reads a streamkit stream fully.
func Decode(t testing.TB, r io.Reader) Output {
	t.Helper()
	out, err := DecodeErr(r)
	if err != nil {
		t.Fatalf("decode stream: %v", err)
	}
	return out
}

// DecodeErr reads a streamkit stream fully, returning what it read before an error.
func DecodeErr(r io.Reader) (Output, error) {
	mem := memory.NewGoAllocator()
	rd, err := codec.NewReader(r, mem)
	if err != nil {
		return Output{}, err
	}
	defer rd.Release()
	out := Output{Schema: rd.Schema()}
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if m.Control != nil {
			var s string
			switch m.Control.Kind {
			case codec.Barrier:
				s = fmt.Sprintf("barrier %d", m.Control.Epoch)
			case codec.End:
				s = "end " + m.Control.End.String()
			default:
				s = m.Control.String()
			}
			out.Controls = append(out.Controls, s)
			out.Events = append(out.Events, s)
			continue
		}
		out.Events = append(out.Events, fmt.Sprintf("rows %d", m.Batch.NumRows()))
		out.Rows = append(out.Rows, Rows(m.Batch)...)
		m.Batch.Release()
	}
}

// Rows converts a read-kafka batch to rows.
func Rows(rec arrow.RecordBatch) []Row {
	s := rec.Schema()
	col := func(name string) arrow.Array {
		if idx := s.FieldIndices(name); len(idx) > 0 {
			return rec.Column(idx[0])
		}
		return nil
	}
	key, val := col("key"), col("value")
	topic, part, off := col("topic"), col("partition"), col("offset")
	ts, tst, hdrs, resc := col("timestamp"), col("timestampType"), col("headers"), col("_rescued_data")
	out := make([]Row, rec.NumRows())
	for i := range out {
		r := &out[i]
		r.Key, r.KeyS = bytesAt(key, i)
		r.Value, r.ValueS = bytesAt(val, i)
		if topic != nil {
			r.Topic = topic.(*array.String).Value(i)
		}
		if part != nil {
			r.Partition = part.(*array.Int32).Value(i)
		}
		if off != nil {
			r.Offset = off.(*array.Int64).Value(i)
		}
		if ts != nil {
			r.Timestamp = ts.(*array.Timestamp).Value(i).ToTime(arrow.Microsecond).UTC()
		}
		if tst != nil {
			r.TimestampType = tst.(*array.Int32).Value(i)
		}
		if hdrs != nil {
			l := hdrs.(*array.List)
			if l.IsNull(i) {
				r.HeadersNull = true
			} else {
				st := l.ListValues().(*array.Struct)
				hk, hv := st.Field(0).(*array.String), st.Field(1).(*array.Binary)
				a, b := l.ValueOffsets(i)
				for j := int(a); j < int(b); j++ {
					h := Header{Key: hk.Value(j)}
					if hv.IsValid(j) {
						h.Value = append([]byte{}, hv.Value(j)...)
					}
					r.Headers = append(r.Headers, h)
				}
			}
		}
		if resc != nil && resc.IsValid(i) {
			v := resc.(*array.String).Value(i)
			r.Rescued = &v
		}
	}
	return out
}

func bytesAt(a arrow.Array, i int) ([]byte, *string) {
	if a == nil || a.IsNull(i) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Binary:
		return append([]byte{}, a.Value(i)...), nil
	case *array.String:
		v := a.Value(i)
		return []byte(v), &v
	}
	b, err := json.Marshal(a.GetOneForMarshal(i)) // struct columns (json formats) as JSON
	if err != nil {
		return []byte(a.ValueStr(i)), nil
	}
	return b, nil
}

// SortRows orders rows by topic, partition and offset.
func SortRows(rows []Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
}

// SameRecord compares a row with a franz-go record: key, value (null vs empty), topic,
// partition, offset, timestamp (ms) and headers (order, repeats, null values).
func SameRecord(row Row, r *kgo.Record) error {
	var diffs []string
	if !sameBytes(row.Key, r.Key) {
		diffs = append(diffs, fmt.Sprintf("key %s vs %s", show(row.Key), show(r.Key)))
	}
	if !sameBytes(row.Value, r.Value) {
		diffs = append(diffs, fmt.Sprintf("value %s vs %s", show(row.Value), show(r.Value)))
	}
	if row.Topic != r.Topic || row.Partition != r.Partition || row.Offset != r.Offset {
		diffs = append(diffs, fmt.Sprintf("at %s/%d@%d vs %s/%d@%d", row.Topic, row.Partition, row.Offset, r.Topic, r.Partition, r.Offset))
	}
	if row.Timestamp.UnixMilli() != r.Timestamp.UnixMilli() {
		diffs = append(diffs, fmt.Sprintf("timestamp %s vs %s", row.Timestamp, r.Timestamp))
	}
	if len(row.Headers) != len(r.Headers) {
		diffs = append(diffs, fmt.Sprintf("headers %v vs %v", row.Headers, r.Headers))
	} else {
		for i, h := range r.Headers {
			if row.Headers[i].Key != h.Key || !sameBytes(row.Headers[i].Value, h.Value) {
				diffs = append(diffs, fmt.Sprintf("header %d: %q=%s vs %q=%s", i, row.Headers[i].Key, show(row.Headers[i].Value), h.Key, show(h.Value)))
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s", strings.Join(diffs, "; "))
	}
	return nil
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// TempDir returns a directory for checkpoints that survives the test when STREAMKIT_KEEP is set.
func TempDir(t testing.TB) string {
	if os.Getenv("STREAMKIT_KEEP") != "" {
		d, err := os.MkdirTemp("", "streamkit-kafka-")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kept: %s", d)
		return d
	}
	return t.TempDir()
}

// KcatConsume reads every record of topic with kcat (an independent librdkafka consumer) and
// returns them as rows (key and value bytes exact, null vs empty kept; headers as kcat prints
// them, a "NULL" value read as null). extra are more kcat arguments (security settings).
func KcatConsume(t testing.TB, kcat string, brokers []string, topic string, extra ...string) []Row {
	t.Helper()
	args := append([]string{"-C", "-b", strings.Join(brokers, ","), "-t", topic, "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%p %o %T %K %S %h\x1e\n%k%s\n"}, extra...)
	cmd := exec.Command(kcat, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, stderr.String())
	}
	var rows []Row
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\x1e\n"))
		if i < 0 {
			t.Fatalf("kcat output: no record header in %q", out)
		}
		head := string(out[:i])
		out = out[i+2:]
		var r Row
		var kl, vl int
		fields := strings.SplitN(head, " ", 6)
		if len(fields) < 5 {
			t.Fatalf("kcat record header %q", head)
		}
		var ms int64
		fmt.Sscan(fields[0], &r.Partition)
		fmt.Sscan(fields[1], &r.Offset)
		fmt.Sscan(fields[2], &ms)
		fmt.Sscan(fields[3], &kl)
		fmt.Sscan(fields[4], &vl)
		r.Topic = topic
		r.Timestamp = time.UnixMilli(ms).UTC()
		if len(fields) == 6 && fields[5] != "" {
			for _, h := range strings.Split(fields[5], ",") {
				k, v, _ := strings.Cut(h, "=")
				hd := Header{Key: k, Value: []byte(v)}
				if v == "NULL" {
					hd.Value = nil
				}
				r.Headers = append(r.Headers, hd)
			}
		}
		if kl >= 0 {
			r.Key = append([]byte{}, out[:kl]...)
			out = out[kl:]
		}
		if vl >= 0 {
			r.Value = append([]byte{}, out[:vl]...)
			out = out[vl:]
		}
		if len(out) == 0 || out[0] != '\n' {
			t.Fatalf("kcat output: record %s@%d not followed by a newline", topic, r.Offset)
		}
		out = out[1:]
		rows = append(rows, r)
	}
	SortRows(rows)
	return rows
}

// SameRow compares key, value (null vs empty), timestamp (ms), headers and, unless
// ignoreOffsets, partition and offset.
func SameRow(a, b Row, ignoreOffsets bool) error {
	var diffs []string
	if !sameBytes(a.Key, b.Key) {
		diffs = append(diffs, fmt.Sprintf("key %s vs %s", show(a.Key), show(b.Key)))
	}
	if !sameBytes(a.Value, b.Value) {
		diffs = append(diffs, fmt.Sprintf("value %s vs %s", show(a.Value), show(b.Value)))
	}
	if !ignoreOffsets && (a.Partition != b.Partition || a.Offset != b.Offset) {
		diffs = append(diffs, fmt.Sprintf("at %d@%d vs %d@%d", a.Partition, a.Offset, b.Partition, b.Offset))
	}
	if a.Timestamp.UnixMilli() != b.Timestamp.UnixMilli() {
		diffs = append(diffs, fmt.Sprintf("timestamp %s vs %s", a.Timestamp, b.Timestamp))
	}
	if fmt.Sprint(a.Headers) != fmt.Sprint(b.Headers) {
		diffs = append(diffs, fmt.Sprintf("headers %v vs %v", a.Headers, b.Headers))
	} else {
		for i := range a.Headers {
			if !sameBytes(a.Headers[i].Value, b.Headers[i].Value) {
				diffs = append(diffs, fmt.Sprintf("header %d: %s vs %s", i, show(a.Headers[i].Value), show(b.Headers[i].Value)))
			}
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s", strings.Join(diffs, "; "))
	}
	return nil
}
