// Package kafka is write-kafka's sink: a stage.Operator that produces each row of its input as
// one Kafka record with franz-go (idempotent producer, acks=all).
//
// Rows map to records as in Spark's Kafka sink: the key, value, headers and timestamp come from
// the columns named by Config (by default the columns "key", "value", "headers" and
// "timestamp" when the input has them, as read-kafka writes them), the topic from -t or the
// "topic" column. Binary and string columns are written as their bytes; a column of another
// type (a struct, a number) is written as its JSON (codec/textout, spelled as Spark's
// to_json). With ValueFormat json the value is the JSON object of the whole row. A null key or value is written as a null key or value (a
// tombstone), an empty one as empty. A topic that does not exist is created by the broker when
// it allows auto-creation (auto.create.topics.enable), as with Kafka's own producers; otherwise
// the sink fails saying that the topic must be created (ensureTopic, missingTopic).
//
// Delivery. On barrier n the sink flushes every record of epoch n and fails if any was not
// acknowledged; the stage then writes commit markers (at-least-once: a crash replays
// uncommitted epochs). With a transactional id, epoch n is one Kafka transaction: records are
// produced inside it, and on barrier n the sink commits the transaction together with a
// consumer group offset (group = the transactional id, the output topic's partition 0,
// offset = n) that records the last epoch in Kafka. After a crash between the transaction
// commit and the commit markers, a replayed epoch n whose number is at most that offset is
// produced again and aborted, so read_committed consumers see every epoch exactly once. A topic
// that did not exist when the sink opened holds no transaction: its last epoch is none.
package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/codec/textout"
	"github.com/streamkit/streamkit/internal/kafkaconn"
	"github.com/streamkit/streamkit/internal/schemaregistry"
	"github.com/streamkit/streamkit/stage"
)

// Value formats of --value-format.
const (
	FormatColumn = ""     // the value column's bytes (default)
	FormatJSON   = "json" // the whole row as a JSON object
)

// None disables a default column (--key none, --headers none, --timestamp none).
const None = "none"

// What --pre-epoch-timestamp does with a timestamp before 1970-01-01T00:00:00Z. Kafka
// timestamps are milliseconds since the epoch; -1 means "no timestamp" and the Java producer
// refuses any negative one (KIP-32: "Timestamp should always be non-negative or null").
const (
	PreEpochFail = "fail" // stop, naming the row (default)
	PreEpochNow  = "now"  // produce the record without a timestamp: the producer stamps its clock, as for null
)

// Config are write-kafka's options.
type Config struct {
	Conn kafkaconn.Config
	// Topic receives every record (-t); when empty, each row's "topic" column names it.
	Topic string
	// Key, Value, Headers, Timestamp name the columns (dot paths) records take their key,
	// value, headers (list<struct<key, value>>) and timestamp from. "" picks the column of
	// that name ("key", …) when the input has one; None disables it.
	Key, Value, Headers, Timestamp string
	// ValueFormat is "" (the value column), json (the whole row as a JSON object) or avro (the
	// value column, or without --value the whole row, as Avro; see FormatAvro).
	ValueFormat string
	// KeyFormat is "" (the key column's bytes) or avro (the key column as Avro).
	KeyFormat string
	// KeySchema and ValueSchema are the Avro writer schemas (inline JSON, @file or a file
	// path); "" derives them from the Arrow types.
	KeySchema, ValueSchema string
	// Registry, when its URL is set, registers the Avro schemas under <topic>-key and
	// <topic>-value and writes the Confluent wire format.
	Registry schemaregistry.Config
	// PreEpochTimestamp is PreEpochFail ("" is the same) or PreEpochNow: what a timestamp
	// before 1970 does, which Kafka cannot store.
	PreEpochTimestamp string
	// TransactionalID makes every epoch one Kafka transaction (see the package doc).
	TransactionalID string
	// TransactionTimeout is the broker-side timeout of a transaction (default 60 s); an epoch
	// must finish within it.
	TransactionTimeout time.Duration
	// Timeout bounds start-up requests and the flush of one epoch (default 2 min).
	Timeout time.Duration
	// MaxBufferedRecords bounds records waiting for acknowledgement (default 1,000,000).
	MaxBufferedRecords int
}

// StateOptions shape the checkpoint: the output topic and transactional id.
func (c *Config) StateOptions() map[string]string {
	return map[string]string{"topic": c.Topic, "transactional-id": c.TransactionalID}
}

// Sink is the write-kafka operator.
type Sink struct {
	cfg     Config
	log     *slog.Logger
	cl      *kgo.Client
	adm     *kadm.Client
	cols    columns
	inTxn   bool
	txnRows int64
	// kafkaEpoch is the last epoch committed in Kafka (transactions), 0 when none.
	kafkaEpoch uint64
	in         *arrow.Schema // the input schema (its streamkit metadata)
	sawBarrier bool
	topicID    [16]byte // of cfg.Topic, for TxnOffsetCommit v6+
	errMu      sync.Mutex
	err        error
	produced   atomic.Int64
	rows       int64 // input rows before the current batch, for errors naming a row
	stats      *stage.Stats
	reg        *schemaregistry.Client
	keyAvro    *avroOut
	valAvro    *avroOut
}

var _ stage.Operator = (*Sink)(nil)

// New validates cfg; nothing connects before Open.
func New(cfg Config) (*Sink, error) {
	switch cfg.ValueFormat {
	case FormatColumn, FormatJSON, FormatAvro:
	default:
		return nil, stage.Usagef("--value-format must be json or avro (or omitted: the value column), got %q", cfg.ValueFormat)
	}
	switch cfg.KeyFormat {
	case FormatColumn, FormatAvro:
	default:
		return nil, stage.Usagef("--key-format must be avro (or omitted: the key column), got %q", cfg.KeyFormat)
	}
	switch cfg.PreEpochTimestamp {
	case "", PreEpochFail, PreEpochNow:
	default:
		return nil, stage.Usagef("--pre-epoch-timestamp must be fail or now, got %q", cfg.PreEpochTimestamp)
	}
	if cfg.ValueSchema != "" && cfg.ValueFormat != FormatAvro || cfg.KeySchema != "" && cfg.KeyFormat != FormatAvro {
		return nil, stage.Usagef("--key-schema/--value-schema are Avro writer schemas: they need --key-format/--value-format avro")
	}
	var reg *schemaregistry.Client
	if cfg.Registry.URL != "" {
		if cfg.ValueFormat != FormatAvro && cfg.KeyFormat != FormatAvro {
			return nil, stage.Usagef("--schema-registry needs --value-format avro or --key-format avro")
		}
		if cfg.Topic == "" {
			return nil, stage.Usagef("--schema-registry needs -t: schemas are registered under the subject <topic>-value")
		}
		var err error
		if reg, err = schemaregistry.New(cfg.Registry); err != nil {
			return nil, stage.Usagef("write-kafka: %v", err)
		}
	}
	if cfg.TransactionalID != "" && cfg.Topic == "" {
		return nil, stage.Usagef("--transactional-id needs -t: the last epoch written is recorded under the topic's partition 0")
	}
	if cfg.TransactionTimeout <= 0 {
		cfg.TransactionTimeout = 60 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.MaxBufferedRecords <= 0 {
		cfg.MaxBufferedRecords = 1_000_000
	}
	return &Sink{cfg: cfg, reg: reg}, nil
}

// columns are the resolved input columns (nil paths: absent).
type columns struct {
	key, value, headers, ts, topic *codec.Path
	row                            bool // value = JSON of the row
	avroRow                        bool // value = Avro of the row
	names                          [][]byte
}

func resolve(in *arrow.Schema, flag, name, def string) (*codec.Path, error) {
	if name == None {
		return nil, nil
	}
	if name == "" {
		if len(in.FieldIndices(def)) == 0 {
			return nil, nil
		}
		name = def
	}
	p, err := codec.ResolvePath(in, name)
	if err != nil {
		return nil, stage.Usagef("write-kafka: %s: %v", flag, err)
	}
	return &p, nil
}

// Open resolves the columns, connects and, with transactions, fences older producers of the
// same transactional id and reads the last epoch committed in Kafka.
func (s *Sink) Open(ctx context.Context, env *stage.Env, in *arrow.Schema) (*arrow.Schema, error) {
	env.MarkSink()
	s.log, s.stats, s.in = env.Log, env.Stats, in
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	c := &s.cols
	if c.key, err = resolve(in, "--key", s.cfg.Key, "key"); err != nil {
		return nil, err
	}
	if s.cfg.ValueFormat == FormatAvro && s.cfg.Value == "" {
		c.avroRow = true
		if s.valAvro, err = newAvroOut(ctx, "value", s.cfg.ValueSchema, arrow.StructOf(in.Fields()...), s.cfg.Topic, s.reg); err != nil {
			return nil, err
		}
	} else if s.cfg.ValueFormat == FormatJSON {
		c.row = true
		for _, f := range in.Fields() {
			b, _ := json.Marshal(f.Name)
			c.names = append(c.names, b)
		}
	} else {
		if c.value, err = resolve(in, "--value", s.cfg.Value, "value"); err != nil {
			return nil, err
		}
		if c.value == nil {
			return nil, stage.Usagef("write-kafka: the input has no value column: give --value COL, or --value-format json to write whole rows")
		}
		if s.cfg.ValueFormat == FormatAvro {
			if s.valAvro, err = newAvroOut(ctx, "value", s.cfg.ValueSchema, c.value.Field.Type, s.cfg.Topic, s.reg); err != nil {
				return nil, err
			}
		}
	}
	if s.cfg.KeyFormat == FormatAvro {
		if c.key == nil {
			return nil, stage.Usagef("write-kafka: --key-format avro needs a key column (--key COL)")
		}
		if s.keyAvro, err = newAvroOut(ctx, "key", s.cfg.KeySchema, c.key.Field.Type, s.cfg.Topic, s.reg); err != nil {
			return nil, err
		}
	}
	if c.headers, err = resolve(in, "--headers", s.cfg.Headers, "headers"); err != nil {
		return nil, err
	}
	if c.headers != nil {
		if err := checkHeaders(c.headers.Field.Type); err != nil {
			if s.cfg.Headers == "" {
				c.headers = nil // a column merely named headers, of another shape: not ours
			} else {
				return nil, stage.Usagef("write-kafka: --headers %s: %v", s.cfg.Headers, err)
			}
		}
	}
	if c.ts, err = resolve(in, "--timestamp", s.cfg.Timestamp, "timestamp"); err != nil {
		return nil, err
	}
	if c.ts != nil {
		if _, ok := c.ts.Field.Type.(*arrow.TimestampType); !ok {
			if s.cfg.Timestamp == "" {
				c.ts = nil
			} else {
				return nil, stage.Usagef("write-kafka: --timestamp %s is %s, not a timestamp", s.cfg.Timestamp, c.ts.Field.Type)
			}
		}
	}
	if s.cfg.Topic == "" {
		if c.topic, err = resolve(in, "-t", "", "topic"); err != nil {
			return nil, err
		}
		if c.topic == nil || c.topic.Field.Type.ID() != arrow.STRING {
			return nil, stage.Usagef("write-kafka: give -t TOPIC (the input has no string column \"topic\")")
		}
	}

	opts, err := s.cfg.Conn.Opts(s.log)
	if err != nil {
		var ue *kafkaconn.UsageError
		if errors.As(err, &ue) {
			return nil, stage.Usagef("write-kafka: %v", ue.Msg)
		}
		return nil, err
	}
	opts = append(opts,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(s.cfg.MaxBufferedRecords),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordRetries(math.MaxInt32),
		// As Kafka's producers: a missing topic is created when the broker allows it.
		kgo.AllowAutoTopicCreation(),
	)
	if s.cfg.Topic != "" {
		opts = append(opts, kgo.DefaultProduceTopic(s.cfg.Topic))
	}
	if s.cfg.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(s.cfg.TransactionalID), kgo.TransactionTimeout(s.cfg.TransactionTimeout))
	}
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	s.adm = kadm.NewClient(s.cl)
	octx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	existed := false
	if s.cfg.Topic != "" {
		if existed, err = s.ensureTopic(octx); err != nil {
			return nil, err
		}
	} else if _, err := s.adm.BrokerMetadata(octx); err != nil {
		return nil, s.cfg.Conn.Explain(err)
	}
	if s.cfg.TransactionalID != "" {
		// InitProducerID fences an older producer of this id and completes its open transaction.
		if _, _, err := s.cl.ProducerID(octx); err != nil {
			return nil, s.cfg.Conn.Explain(fmt.Errorf("init transactional producer %s: %w", s.cfg.TransactionalID, err))
		}
		// A topic created just now holds no transaction of this id: no epoch to recover.
		if existed {
			if s.kafkaEpoch, err = s.lastEpoch(octx); err != nil {
				return nil, s.cfg.Conn.Explain(err)
			}
		}
		if s.kafkaEpoch > 0 {
			s.log.Info("last epoch committed in Kafka", "transactional_id", s.cfg.TransactionalID, "epoch", s.kafkaEpoch)
		}
		// Kafka can be at most one epoch ahead of the checkpoint (a crash between the
		// transaction commit and the commit markers). Further ahead, the checkpoint is not the
		// one these transactions came from: replayed epochs would be aborted as duplicates.
		if s.kafkaEpoch > env.Committed+1 {
			return nil, fmt.Errorf("write-kafka: transactional id %s committed epoch %d in Kafka, but this checkpoint is at epoch %d: "+
				"the checkpoint was reset or another flow uses the same id; use a new --transactional-id (or the original checkpoint)",
				s.cfg.TransactionalID, s.kafkaEpoch, env.Committed)
		}
	}
	return nil, nil
}

// ensureTopic looks up -t and, when it does not exist, asks the broker to create it as Kafka's
// producers do (a metadata request allowing auto-creation; the broker creates it with its
// num.partitions and default.replication.factor when auto.create.topics.enable is true, the
// default), then waits until every partition of the new topic has a leader. It records the topic ID and reports
// whether the topic existed before. A broker that refuses to create it makes the error of
// missingTopic.
func (s *Sink) ensureTopic(ctx context.Context) (existed bool, err error) {
	topic := s.cfg.Topic
	refused := 0
	for attempt, wait := 0, 50*time.Millisecond; ; attempt, wait = attempt+1, min(2*wait, time.Second) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = attempt > 0 // the first request only looks
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return false, s.cfg.Conn.Explain(fmt.Errorf("topic %s: %w", topic, err))
		}
		var terr error = kerr.UnknownTopicOrPartition
		partitions, ready := 0, false
		for _, t := range resp.Topics {
			if t.Topic == nil || *t.Topic != topic {
				continue
			}
			terr, partitions, ready = kerr.ErrorForCode(t.ErrorCode), len(t.Partitions), len(t.Partitions) > 0
			for _, p := range t.Partitions {
				ready = ready && p.ErrorCode == 0 && p.Leader >= 0
			}
			if terr == nil {
				s.topicID = t.TopicID
			}
		}
		if attempt == 0 {
			existed = !errors.Is(terr, kerr.UnknownTopicOrPartition)
		}
		switch {
		case terr == nil && (ready || existed): // leaders of an existing topic are the producer's business
			if !existed {
				s.log.Info("created the topic (broker auto-creation)", "topic", topic, "partitions", partitions)
			}
			return existed, nil
		case errors.Is(terr, kerr.UnknownTopicOrPartition):
			if attempt > 0 {
				// An auto-creating broker answers LEADER_NOT_AVAILABLE while it creates the
				// topic; UNKNOWN_TOPIC_OR_PARTITION again means it will not create it.
				if refused++; refused == 3 {
					return false, s.missingTopic(topic, terr)
				}
			}
		case terr != nil && !kerr.IsRetriable(terr):
			return false, s.cfg.Conn.Explain(fmt.Errorf("topic %s: %w", topic, terr))
		}
		if attempt == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return false, s.cfg.Conn.Explain(fmt.Errorf("topic %s: waiting for its partitions to have leaders: %w", topic, ctx.Err()))
		case <-time.After(wait):
		}
	}
}

// missingTopic is the error of a topic that does not exist and that the broker did not create.
func (s *Sink) missingTopic(topic string, err error) error {
	return fmt.Errorf("write-kafka: topic %s does not exist and the broker did not create it (auto.create.topics.enable=false, "+
		"or this user may not create topics): create it first, e.g. kafka-topics.sh --bootstrap-server %s --create --topic %s "+
		"--partitions 1: %w", topic, strings.Join(s.cfg.Conn.Brokers, ","), topic, err)
}

// checkHeaders accepts list<struct<key: string|binary, value: binary|string>> (also large
// and view variants of list).
func checkHeaders(t arrow.DataType) error {
	lt, ok := t.(arrow.ListLikeType)
	if !ok {
		return fmt.Errorf("is %s, want list<struct<key string, value binary>>", t)
	}
	st, ok := lt.Elem().(*arrow.StructType)
	if !ok || st.NumFields() < 2 {
		return fmt.Errorf("is %s, want list<struct<key string, value binary>>", t)
	}
	if _, ok := st.FieldByName("key"); !ok {
		return fmt.Errorf("is %s: no key field", t)
	}
	if _, ok := st.FieldByName("value"); !ok {
		return fmt.Errorf("is %s: no value field", t)
	}
	return nil
}

// lastEpoch reads the epoch recorded by the last committed transaction. Retriable broker
// errors (a coordinator still loading or moving, as on a freshly started cluster) are retried
// for up to lastEpochRetryFor: guessing "no epoch" would re-commit replayed epochs.
func (s *Sink) lastEpoch(ctx context.Context) (uint64, error) {
	deadline := time.Now().Add(lastEpochRetryFor)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		n, err := s.lastEpochOnce(ctx)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return n, err
		}
		s.log.Debug("retrying the last-epoch lookup", "error", err, "wait", wait)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// lastEpochRetryFor bounds the retries of lastEpoch.
const lastEpochRetryFor = 30 * time.Second

func (s *Sink) lastEpochOnce(ctx context.Context) (uint64, error) {
	resp, err := s.adm.FetchOffsetsForTopics(ctx, s.cfg.TransactionalID, s.cfg.Topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, nil // no transaction committed an epoch yet
	}
	if err != nil {
		return 0, fmt.Errorf("read the last epoch of transactional id %s: %w", s.cfg.TransactionalID, err)
	}
	o, ok := resp.Lookup(s.cfg.Topic, 0)
	if !ok || o.At < 0 || errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if o.Err != nil {
		return 0, fmt.Errorf("read the last epoch of transactional id %s: %w", s.cfg.TransactionalID, o.Err)
	}
	return uint64(o.At), nil
}

func (s *Sink) fail(err error) {
	s.errMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.errMu.Unlock()
}

func (s *Sink) firstErr() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Process produces one record per row. The batch stays retained until all its records are
// acknowledged (records point into its buffers).
func (s *Sink) Process(ctx context.Context, rec arrow.RecordBatch, _ stage.Emit) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if err := s.firstErr(); err != nil {
		return err
	}
	if s.cfg.TransactionalID != "" && !s.inTxn {
		if err := s.cl.BeginTransaction(); err != nil {
			return fmt.Errorf("write-kafka: begin transaction: %w", err)
		}
		s.inTxn, s.txnRows = true, 0
	}
	c := &s.cols
	var key, val, topic, hdrs, ts arrow.Array
	var keyCol, valCol codec.Column // null tests through null parent structs
	if c.key != nil {
		keyCol = c.key.Column(rec)
		key = keyCol.Arr
	}
	if c.value != nil {
		valCol = c.value.Column(rec)
		val = valCol.Arr
	}
	if c.topic != nil {
		topic = c.topic.Column(rec).Arr
	}
	if c.headers != nil {
		hdrs = c.headers.Column(rec).Arr
	}
	if c.ts != nil {
		ts = c.ts.Column(rec).Arr
	}
	var tsUnit arrow.TimeUnit
	var tsv []arrow.Timestamp
	if ts != nil {
		tsUnit = ts.DataType().(*arrow.TimestampType).Unit
		tsv = ts.(*array.Timestamp).TimestampValues()
		if err := s.checkTimestamps(ts, tsv, keyCol, key); err != nil {
			return err
		}
	}
	hr, err := newHeaderReader(hdrs)
	if err != nil {
		return err
	}
	var keys, vals [][]byte // Avro encodings
	if s.keyAvro != nil {
		if keys, err = s.keyAvro.encodeAll(key, n, keyCol.IsNull); err != nil {
			return err
		}
	}
	if s.valAvro != nil {
		if c.avroRow {
			sa := array.RecordToStructArray(rec)
			vals, err = s.valAvro.encodeAll(sa, n, nil)
			sa.Release()
		} else {
			vals, err = s.valAvro.encodeAll(val, n, valCol.IsNull)
		}
		if err != nil {
			return err
		}
	}
	var pending atomic.Int64
	pending.Store(int64(n))
	rec.Retain()
	promise := func(r *kgo.Record, err error) {
		if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
			s.fail(s.missingTopic(r.Topic, err))
		} else if err != nil {
			s.fail(fmt.Errorf("write-kafka: produce to %s: %w", r.Topic, s.cfg.Conn.Explain(err)))
		}
		if pending.Add(-1) == 0 {
			rec.Release()
		}
	}
	recs := make([]kgo.Record, n)
	for i := 0; i < n; i++ {
		r := &recs[i]
		if keys != nil {
			r.Key = keys[i]
		} else if key != nil && !keyCol.IsNull(i) {
			r.Key = s.bytesOf(key, i)
		}
		if vals != nil {
			r.Value = vals[i]
		} else if c.row {
			r.Value = s.rowJSON(rec, i)
		} else if !valCol.IsNull(i) {
			r.Value = s.bytesOf(val, i)
		}
		if topic != nil {
			if topic.IsNull(i) {
				promise(r, fmt.Errorf("row %d: null topic", i))
				continue
			}
			r.Topic = topic.(*array.String).Value(i)
		}
		if hr != nil {
			r.Headers = hr.headers(i)
		}
		if ts != nil && ts.IsValid(i) && tsv[i] >= 0 { // before 1970 (PreEpochNow): no timestamp
			r.Timestamp = time.UnixMilli(kafkaMillis(int64(tsv[i]), tsUnit))
		}
		s.cl.Produce(ctx, r, promise)
	}
	s.txnRows += int64(n)
	s.rows += int64(n)
	s.produced.Add(int64(n))
	return nil
}

// kafkaMillis converts v in unit to the milliseconds of a Kafka timestamp directly, truncated
// toward the past, not through nanoseconds (arrow.Timestamp.ToTime), which overflow int64
// after 2262-04-11 and would turn a later instant into a wrong, possibly negative one.
func kafkaMillis(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1000 // |v| < 2^63/1000 s is ±292 million years
	case arrow.Microsecond:
		return codec.FloorDiv(v, 1000)
	case arrow.Nanosecond:
		return codec.FloorDiv(v, 1_000_000)
	}
	return v
}

// maxKafkaMillis is the latest Kafka timestamp the client can carry: franz-go encodes a
// record's time.Time through UnixNano, which overflows int64 after 2262-04-11T23:47:16.854Z.
const maxKafkaMillis = math.MaxInt64 / int64(time.Millisecond)

// checkTimestamps refuses, before any record of the batch is produced, a timestamp before
// 1970-01-01T00:00:00Z (a negative Kafka timestamp; -1 means none), unless
// --pre-epoch-timestamp now, and always one after maxKafkaMillis (it would reach the broker as a
// wrong, negative timestamp). The error names the row (0-based in the input), its key and its
// timestamp.
func (s *Sink) checkTimestamps(ts arrow.Array, v []arrow.Timestamp, keyCol codec.Column, key arrow.Array) error {
	tt := ts.DataType().(*arrow.TimestampType)
	for i, t := range v {
		if ts.IsNull(i) {
			continue
		}
		late := t > 0 && (tt.Unit == arrow.Second && int64(t) > maxKafkaMillis/1000 || kafkaMillis(int64(t), tt.Unit) > maxKafkaMillis)
		if !late && (t >= 0 || s.cfg.PreEpochTimestamp == PreEpochNow) {
			continue
		}
		what := ""
		if key != nil && !keyCol.IsNull(i) {
			what = fmt.Sprintf(" (key %s)", textout.AppendJSON(nil, key, i))
		}
		if late {
			return fmt.Errorf("write-kafka: row %d%s: timestamp %s (column %s) is after 2262-04-11T23:47:16.854Z, the latest "+
				"a Kafka record can carry here (the client encodes it as int64 nanoseconds); use --timestamp none or another column",
				s.rows+int64(i), what, textout.AppendTimestamp(nil, int64(t), tt), s.cols.ts.Name)
		}
		return fmt.Errorf("write-kafka: row %d%s: timestamp %s (column %s) is before 1970-01-01T00:00:00Z: "+
			"Kafka timestamps are milliseconds since the epoch and cannot be negative (-1 means none); "+
			"use --pre-epoch-timestamp now to let the producer stamp such records, or --timestamp none or another column",
			s.rows+int64(i), what, textout.AppendTimestamp(nil, int64(t), tt), s.cols.ts.Name)
	}
	return nil
}

// bytesOf returns the bytes of row i of a: binary and string values as they are (no copy),
// anything else as JSON.
func (s *Sink) bytesOf(a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.Binary:
		return nonNil(a.Value(i))
	case *array.String:
		o := a.ValueOffsets() // ValueBytes starts at the first value's offset
		return nonNil(a.ValueBytes()[o[i]-o[0] : o[i+1]-o[0]])
	case *array.LargeBinary:
		return nonNil(a.Value(i))
	case *array.LargeString:
		return nonNil([]byte(a.Value(i)))
	case *array.BinaryView:
		return nonNil(a.Value(i))
	case *array.StringView:
		return nonNil([]byte(a.Value(i)))
	case *array.FixedSizeBinary:
		return nonNil(a.Value(i))
	}
	return textout.AppendJSON(nil, a, i)
}

// nonNil keeps an empty value empty (a nil slice would be produced as null).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// rowJSON encodes row i as a JSON object of its columns (codec/textout) as Spark's to_json
// does: null fields, at the top and inside structs, are left out (ignoreNullFields), so a
// row without rescued data carries no "_rescued_data":null.
func (s *Sink) rowJSON(rec arrow.RecordBatch, i int) []byte {
	b := make([]byte, 0, 64)
	b = append(b, '{')
	first := true
	for c, col := range rec.Columns() {
		if col.IsNull(i) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, s.cols.names[c]...)
		b = append(b, ':')
		b = textout.AppendJSONOmitNull(b, col, i)
	}
	return append(b, '}')
}

// headerReader reads the headers of each row from a list<struct<key, value>> column.
type headerReader struct {
	list     array.ListLike
	st       *array.Struct
	key, val arrow.Array
}

func newHeaderReader(a arrow.Array) (*headerReader, error) {
	if a == nil {
		return nil, nil
	}
	l, ok := a.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("write-kafka: headers column is %s", a.DataType())
	}
	st, ok := l.ListValues().(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("write-kafka: headers column is %s", a.DataType())
	}
	stt := st.DataType().(*arrow.StructType)
	ki, _ := stt.FieldIdx("key")
	vi, _ := stt.FieldIdx("value")
	return &headerReader{list: l, st: st, key: st.Field(ki), val: st.Field(vi)}, nil
}

func (h *headerReader) headers(i int) []kgo.RecordHeader {
	if h.list.IsNull(i) {
		return nil
	}
	start, end := h.list.ValueOffsets(i)
	if end <= start {
		return nil
	}
	out := make([]kgo.RecordHeader, 0, end-start)
	for j := int(start); j < int(end); j++ {
		if h.st.IsNull(j) {
			continue
		}
		var hd kgo.RecordHeader
		if h.key.IsValid(j) {
			hd.Key = string(rawBytes(h.key, j))
		}
		if h.val.IsValid(j) {
			hd.Value = nonNil(rawBytes(h.val, j))
		}
		out = append(out, hd)
	}
	return out
}

func rawBytes(a arrow.Array, i int) []byte {
	switch a := a.(type) {
	case *array.Binary:
		return a.Value(i)
	case *array.String:
		return []byte(a.Value(i))
	case *array.LargeBinary:
		return a.Value(i)
	case *array.LargeString:
		return []byte(a.Value(i))
	}
	return []byte(a.ValueStr(i))
}

// Watermark is forwarded by nobody: a sink has no output.
func (s *Sink) Watermark(context.Context, time.Time, stage.Emit) error { return nil }

// Barrier makes epoch n durable in Kafka: flush, then (transactions) commit it with its epoch
// number, or abort it when Kafka already holds epoch n.
func (s *Sink) Barrier(ctx context.Context, n uint64, _ stage.Emit) error {
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if !s.sawBarrier && s.cfg.TransactionalID != "" {
		// Epochs up to Kafka's are aborted as replays: only a replayable stream may be.
		if err := stage.RequireReplayable("write-kafka", s.in, "run write-kafka without --transactional-id "+
			"(every record is then written, at least once)"); err != nil {
			if s.inTxn {
				s.inTxn = false
				if aerr := s.cl.EndTransaction(fctx, kgo.TryAbort); aerr != nil {
					s.log.Warn("abort transaction failed", "err", aerr)
				}
			}
			return err
		}
	}
	s.sawBarrier = true
	if err := s.cl.Flush(fctx); err != nil {
		return fmt.Errorf("write-kafka: flush epoch %d: %w", n, err)
	}
	if err := s.firstErr(); err != nil {
		if s.inTxn {
			s.inTxn = false
			if aerr := s.cl.EndTransaction(fctx, kgo.TryAbort); aerr != nil {
				s.log.Warn("abort transaction failed", "err", aerr)
			}
		}
		return err
	}
	if !s.inTxn {
		return nil
	}
	s.inTxn = false
	if n <= s.kafkaEpoch {
		s.log.Info("epoch already committed in Kafka: aborting its replay", "epoch", n, "kafka_epoch", s.kafkaEpoch)
		if err := s.cl.EndTransaction(fctx, kgo.TryAbort); err != nil {
			return fmt.Errorf("write-kafka: abort replayed epoch %d: %w", n, err)
		}
		return nil
	}
	if err := s.commitEpochOffset(fctx, n); err != nil {
		if aerr := s.cl.EndTransaction(fctx, kgo.TryAbort); aerr != nil {
			s.log.Warn("abort transaction failed", "err", aerr)
		}
		return fmt.Errorf("write-kafka: record epoch %d in the transaction: %w", n, s.cfg.Conn.Explain(err))
	}
	if err := s.cl.EndTransaction(fctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("write-kafka: commit transaction of epoch %d: %w", n, s.cfg.Conn.Explain(err))
	}
	s.kafkaEpoch = n
	return nil
}

// commitEpochOffset adds the offset commit "epoch n" (group = transactional id, the output
// topic's partition 0) to the open transaction.
func (s *Sink) commitEpochOffset(ctx context.Context, n uint64) error {
	id, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	txn := s.cfg.TransactionalID
	if s.topicID == ([16]byte{}) {
		md, err := s.adm.Metadata(ctx, s.cfg.Topic)
		if err != nil {
			return err
		}
		t, ok := md.Topics[s.cfg.Topic]
		if !ok || t.Err != nil {
			return fmt.Errorf("topic %s: no metadata", s.cfg.Topic)
		}
		s.topicID = t.ID
	}
	err = retryConcurrent(ctx, func() error {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = txn, id, epoch, txn
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	return retryConcurrent(ctx, func() error {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txn, txn, id, epoch
		req.Generation, req.MemberID = -1, ""
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic, t.TopicID = s.cfg.Topic, s.topicID
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 0, int64(n), -1
		meta := fmt.Sprintf("streamkit write-kafka epoch %d", n)
		p.Metadata = &meta
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("TxnOffsetCommit: %w", err)
				}
			}
		}
		return nil
	})
}

// retryConcurrent retries fn while the coordinator answers with a retriable error
// (CONCURRENT_TRANSACTIONS while the previous transaction completes, coordinator moves).
func retryConcurrent(ctx context.Context, fn func() error) error {
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		var ke *kerr.Error
		if err == nil || !errors.As(err, &ke) || !ke.Retriable || attempt == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// End flushes what is left (records after the last barrier are at-least-once: they have no
// epoch, so they are flushed and not committed; an open transaction is aborted).
func (s *Sink) End(ctx context.Context, _ codec.EndKind, _ stage.Emit) error {
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if s.inTxn {
		s.inTxn = false
		return s.cl.EndTransaction(fctx, kgo.TryAbort)
	}
	if err := s.cl.Flush(fctx); err != nil {
		return fmt.Errorf("write-kafka: flush: %w", err)
	}
	return s.firstErr()
}

// Produced returns the number of records handed to the producer.
func (s *Sink) Produced() int64 { return s.produced.Load() }

// Close aborts an open transaction (best effort: a killed process leaves it to the next
// producer of the same id, which fences and aborts it) and closes the client.
func (s *Sink) Close() error {
	if s.cl != nil && s.inTxn {
		// Best effort: the next producer of this id would abort it anyway (fencing).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.cl.AbortBufferedRecords(ctx)
		s.cl.EndTransaction(ctx, kgo.TryAbort)
		cancel()
		s.inTxn = false
	}
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	return nil
}
