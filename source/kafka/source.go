// Package kafka is read-kafka's source: a stage.Source that reads Kafka topic partitions with
// franz-go into Arrow batches shaped as Spark's Kafka source rows, with positions (offsets per
// partition) that make every epoch replayable.
//
// Positions. The position of a partition is the next offset to read: one past the last record
// emitted, the last transaction marker passed, or the last offset known to hold nothing
// visible (records of aborted transactions, offsets removed by compaction). Transaction
// markers are consumed (franz-go's KeepControlRecords) and never emitted, so under
// read_committed an epoch may end on a marker and a consumer group commit leaves no lag of 1.
// A partition whose next visible record lies beyond the offset it must reach (an --until end,
// or a replayed epoch's end) jumps to that offset; one with nothing at all after its position
// is probed with a single Fetch (franz-go's ProcessFetchPartition tells how far the invisible
// offsets reach), so compacted topics and trailing markers never stall a bounded run.
//
// Replays. Read with a limit reads each partition up to exactly the limit's offset, keeping
// later records buffered for the next epoch, so epochs reproduce record for record.
//
// Data loss. A position outside the log — before its start (retention, DeleteRecords) or after
// its end (the topic was re-created) — fails with a *DataLossError naming the topic, the
// partition and both ranges, unless --on-data-loss earliest|latest says where to go instead
// (Spark's failOnDataLoss=false continues at the earliest available offset). Positions record
// each topic's ID (Position, topicid.go), so a topic deleted and re-created under the same name
// is data loss as well, whatever its new log's length.
package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/kafkaconn"
	"github.com/streamkit/streamkit/internal/schemaregistry"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// Isolation levels of --isolation.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// Choices of --on-data-loss.
const (
	DataLossFail     = "fail"
	DataLossEarliest = "earliest"
	DataLossLatest   = "latest"
)

// Config are read-kafka's options.
type Config struct {
	Conn kafkaconn.Config
	// Exactly one of Topics (-t, repeatable), Pattern (--pattern, a Go regexp matched against
	// whole topic names; internal topics starting with "__" are never matched) or Assign
	// (--assign topic:0,2) selects the partitions. With Topics and Pattern, partitions and
	// topics that appear while reading live are picked up (from their earliest offset).
	Topics  []string
	Pattern string
	Assign  []string
	// Member (--member I/N, see ParseMember) reads, of the partitions Topics or Pattern
	// select, only those whose number p has p mod N = I, also among partitions discovered
	// later; "" reads them all. It is recorded in the checkpoint (StateOptions), so a restart
	// with another I/N, or none, is refused.
	Member string
	// Start is where a run without a checkpoint starts (--start, default earliest); see
	// ParseStart. A checkpoint's position always wins.
	Start string
	// Until is where reading ends (--until, default never); see ParseUntil.
	Until string
	// Isolation is read_committed (default) or read_uncommitted.
	Isolation string
	// OnDataLoss is fail (default), earliest or latest; see the package doc.
	OnDataLoss string
	// Group, when set, receives the offsets of every epoch the sink commits (consumer group
	// offset commit, for lag monitoring); the checkpoint stays the source of truth.
	Group string
	// GroupCommitWait bounds how long a run waits at its end for the sink to commit the last
	// epoch before committing it to Group (default 10 s).
	GroupCommitWait time.Duration
	// MaxRecordsPerEpoch caps the records of one epoch (0: no cap); Spark's maxOffsetsPerTrigger.
	MaxRecordsPerEpoch int64
	// KeyFormat and ValueFormat decode key and value: binary (default), string, json or avro.
	KeyFormat, ValueFormat string
	// KeySchema and ValueSchema are the schemas of json keys and values (codec/schema.Load:
	// Spark DDL, JSON Schema, Avro or Spark JSON: inline, @file, or the path of an existing
	// file when the text is not valid DDL), or the Avro reader schemas
	// of avro keys and values (inline JSON, @file or a file path).
	KeySchema, ValueSchema string
	// Registry is the schema registry of --key-format/--value-format avro in the Confluent wire
	// format (--schema-registry); URL "" means plain Avro binary with the given schema.
	Registry schemaregistry.Config
	// OnSchemaMismatch is what an avro key or value does whose writer schema the reader schema
	// cannot resolve: SchemaMismatchFail (default) or SchemaMismatchRescue; see avro.go.
	OnSchemaMismatch string
	// BadRecords is the --bad-records-output file (JSON lines: topic, partition, offset, timestamp,
	// reason, raw key and value) that receives every record whose key or value did not decode,
	// besides its _rescued_data; "" keeps them in _rescued_data only.
	BadRecords string
	// Columns, when set (--columns), are the output columns in order, like Spark's
	// select("v.*", "partition", "offset"): names of the full schema (key, value, topic,
	// partition, offset, timestamp, timestampType, headers) or key.* / value.* to flatten a json
	// or avro key or value into its members. _rescued_data is always kept (see projection).
	Columns []string
	// DiscoveryInterval is how often live reading looks for new partitions and topics
	// (default 10 s).
	DiscoveryInterval time.Duration
	// FetchMaxPartitionBytes bounds the bytes fetched per partition per request (default
	// DefaultFetchMaxPartitionBytes).
	FetchMaxPartitionBytes int32
	// ProbeAfter is how long a partition short of its bounded end stays silent before it is
	// probed for trailing invisible offsets (default 500 ms).
	ProbeAfter time.Duration
	// Timeout bounds start-up requests (metadata, offsets); default 30 s.
	Timeout time.Duration

	// ConsumerGroup, when set (--consumer-group), joins this Kafka consumer group with the
	// cooperative-sticky balancer and reads the partitions of Topics assigned to this member,
	// each resumed from its txn in ProgressTable (group.go, docs/protocol.md §13).
	ConsumerGroup string
	// ProgressTable is the opened root of the Delta table whose txn actions hold the group's
	// progress (--progress-table: the table write-delta writes). Group mode only.
	ProgressTable storage.Store
	// Flow names the group's txn appIds, "<flow>-<topic>-<partition>" (--flow; default
	// ConsumerGroup).
	Flow string
	// AppID, when set (--app-id), names the txn appIds "<app>-<partition>" instead, as
	// kafka-delta-ingest's --app_id does; it needs exactly one topic (codec.GroupInfo.AppID).
	AppID string
	// RevokeWait bounds how long a revoked partition (and a member leaving) waits for its last
	// epoch's txn in the progress table (default DefaultRevokeWait).
	RevokeWait time.Duration
	// SessionTimeout is the group session timeout (--session-timeout; 0: franz-go's 45 s): a
	// member silent this long loses its partitions to the others.
	SessionTimeout time.Duration
}

// StateOptions are the options that shape the checkpoint (metadata.json): a restart with other
// values is refused.
func (c *Config) StateOptions() map[string]string {
	opts := map[string]string{
		"isolation":    c.isolation(),
		"key-format":   orDefault(c.KeyFormat, FormatBinary),
		"value-format": orDefault(c.ValueFormat, FormatBinary),
		"key-schema":   c.KeySchema,
		"value-schema": c.ValueSchema,
	}
	if c.Member != "" { // only when set: checkpoints written without it stay compatible
		if m, err := ParseMember(c.Member); err == nil {
			opts["member"] = m.String()
		}
	}
	return opts
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (c *Config) isolation() string { return orDefault(c.Isolation, ReadCommitted) }

// DataLossError reports a position outside its partition's log, or a checkpointed topic that
// was deleted and re-created (CheckpointTopicID set: the position belongs to another log).
type DataLossError struct {
	TP             TP
	Offset         int64 // the position that is no longer readable
	Start, End     int64 // the log: [Start, End)
	CheckpointPath string
	// CheckpointTopicID and TopicID: the topic's ID in the checkpoint and on the brokers now,
	// when they differ (topicid.go); zero otherwise.
	CheckpointTopicID, TopicID TopicID
}

func (e *DataLossError) Error() string {
	if !e.CheckpointTopicID.IsZero() {
		return e.recreated()
	}
	why := "records before offset %d were deleted (retention or DeleteRecords)"
	at := e.Start
	if e.Offset > e.End {
		why, at = "the partition ends at offset %d (the topic was re-created or truncated)", e.End
	}
	return fmt.Sprintf("read-kafka: data loss on topic %s partition %d: position %d is outside the log [%d, %d): "+why+
		"; --on-data-loss earliest continues at %d, --on-data-loss latest at %d (records in between are skipped)",
		e.TP.Topic, e.TP.Partition, e.Offset, e.Start, e.End, at, e.Start, e.End)
}

// part is the state of one assigned partition.
type part struct {
	tp      TP
	pos     int64         // next offset to read
	end     int64         // exclusive end of a bounded run, -1 live
	pending []*kgo.Record // fetched, offset ≥ pos, not yet emitted
	paused  bool
	hwm     int64 // latest high watermark seen, -1 unknown
	// Group mode (group.go): txn is the txn version the table holds (or will hold once the
	// last barrier commits) for the partition, delta.NoTxn for none; startTxn the one it had
	// when assigned; epochStart the position at the start of the current epoch; revoked that
	// the partition was revoked and is read no more.
	txn, startTxn int64
	epochStart    int64
	revoked       bool
	quietAt       time.Time // when records last arrived or pos last moved
	probedAt      time.Time
	probePos      int64 // pos at the last probe
}

// Source is the read-kafka stage.Source.
type Source struct {
	cfg     Config
	start   Start
	until   Until
	pattern *regexp.Regexp
	assign  []TP
	member  Member // --member: the static share of the partitions (member.go)
	iso     kgo.IsolationLevel
	keyC    fieldCodec
	valC    fieldCodec
	reg     *schemaregistry.Client
	env     *stage.Env
	log     *slog.Logger
	cl      *kgo.Client
	adm     *kadm.Client
	parts   map[TP]*part
	order   []*part
	rr      int
	schema  *arrow.Schema
	full    *arrow.Schema // every column (schemaFor); schema is its --columns projection
	proj    *projection   // nil without --columns
	b       *builder
	cur     *part // the partition of the rows in b: a batch holds one partition's rows
	inEpoch int64
	// capEnd are the epoch's end offsets under --max-records-per-epoch when the backlog is
	// larger than the cap (nil otherwise): the cap spread over the partitions in proportion to
	// their lag, as Spark's maxOffsetsPerTrigger (KafkaMicroBatchStream.rateLimit).
	capEnd   map[TP]int64
	limitRaw []byte
	limit    Offsets
	lastDisc time.Time
	ids      map[string]TopicID // topic IDs of the topics read (topicid.go)
	g        *groupState        // consumer-group mode (group.go), nil otherwise
}

var (
	_ stage.Source            = (*Source)(nil)
	_ stage.EpochLimiter      = (*Source)(nil)
	_ stage.CommitObserver    = (*Source)(nil)
	_ stage.PartitionProgress = (*Source)(nil)
)

// New validates cfg and returns a source; nothing connects before Open. Errors are usage
// errors (bad flag values and combinations).
func New(cfg Config) (*Source, error) {
	s := &Source{cfg: cfg, parts: map[TP]*part{}, ids: map[string]TopicID{}}
	modes := 0
	if len(cfg.Topics) > 0 {
		modes++
	}
	if cfg.Pattern != "" {
		modes++
		re, err := regexp.Compile("^(?:" + cfg.Pattern + ")$")
		if err != nil {
			return nil, stage.Usagef("--pattern: %v", err)
		}
		s.pattern = re
	}
	if len(cfg.Assign) > 0 {
		modes++
		a, err := ParseAssign(cfg.Assign)
		if err != nil {
			return nil, stage.Usagef("%v", err)
		}
		s.assign = a
	}
	if modes != 1 {
		return nil, stage.Usagef("give exactly one of -t/--topic, --pattern or --assign")
	}
	if cfg.Member != "" {
		m, err := ParseMember(cfg.Member)
		switch {
		case err != nil:
			return nil, stage.Usagef("%v", err)
		case cfg.ConsumerGroup != "":
			return nil, stage.Usagef("--member and --consumer-group cannot be combined: --member is a static share of the partitions with a checkpoint of its own; --consumer-group lets the group assign them")
		case len(cfg.Assign) > 0:
			return nil, stage.Usagef("--member and --assign cannot be combined: both choose the partitions (--member I/N reads partitions p mod N = I of the -t or --pattern topics)")
		}
		s.member = m
	}
	if cfg.ConsumerGroup != "" {
		if err := checkGroupConfig(&s.cfg); err != nil {
			return nil, err
		}
		s.g = &groupState{}
	} else if cfg.ProgressTable != nil || cfg.Flow != "" || cfg.AppID != "" || cfg.SessionTimeout != 0 {
		return nil, stage.Usagef("--progress-table, --flow, --app-id and --session-timeout need --consumer-group")
	}
	var err error
	if s.start, err = ParseStart(cfg.Start); err != nil {
		return nil, stage.Usagef("%v", err)
	}
	if s.until, err = ParseUntil(cfg.Until); err != nil {
		return nil, stage.Usagef("%v", err)
	}
	if s.g != nil {
		if err := s.checkGroupSpecs(); err != nil {
			return nil, err
		}
	}
	switch cfg.isolation() {
	case ReadCommitted:
		s.iso = kgo.ReadCommitted()
	case ReadUncommitted:
		s.iso = kgo.ReadUncommitted()
	default:
		return nil, stage.Usagef("--isolation must be read_committed or read_uncommitted, got %q", cfg.Isolation)
	}
	switch orDefault(cfg.OnDataLoss, DataLossFail) {
	case DataLossFail, DataLossEarliest, DataLossLatest:
	default:
		return nil, stage.Usagef("--on-data-loss must be fail, earliest or latest, got %q", cfg.OnDataLoss)
	}
	if cfg.MaxRecordsPerEpoch < 0 {
		return nil, stage.Usagef("--max-records-per-epoch must be ≥ 0, got %d", cfg.MaxRecordsPerEpoch)
	}
	if cfg.Registry.URL != "" {
		if cfg.KeyFormat != FormatAvro && cfg.ValueFormat != FormatAvro {
			return nil, stage.Usagef("--schema-registry needs --value-format avro or --key-format avro")
		}
		if s.reg, err = schemaregistry.New(cfg.Registry); err != nil {
			return nil, stage.Usagef("%v", err)
		}
	}
	if s.keyC, err = codecFor(cfg.KeyFormat, cfg.KeySchema, "--key-format", s.reg); err != nil {
		return nil, stage.Usagef("%v", err)
	}
	if s.valC, err = codecFor(cfg.ValueFormat, cfg.ValueSchema, "--value-format", s.reg); err != nil {
		return nil, stage.Usagef("%v", err)
	}
	if err := setOnSchemaMismatch(cfg.OnSchemaMismatch, s.keyC, s.valC); err != nil {
		return nil, stage.Usagef("%v", err)
	}
	if s.cfg.DiscoveryInterval <= 0 {
		s.cfg.DiscoveryInterval = 10 * time.Second
	}
	if s.cfg.FetchMaxPartitionBytes <= 0 {
		s.cfg.FetchMaxPartitionBytes = DefaultFetchMaxPartitionBytes
	}
	if s.cfg.ProbeAfter <= 0 {
		s.cfg.ProbeAfter = 500 * time.Millisecond
	}
	if s.cfg.Timeout <= 0 {
		s.cfg.Timeout = 30 * time.Second
	}
	if s.cfg.GroupCommitWait <= 0 {
		s.cfg.GroupCommitWait = 10 * time.Second
	}
	if err := s.setSchema(schemaFor(s.keyC, s.valC, s.keyC.decodes() || s.valC.decodes())); err != nil {
		return nil, err
	}
	return s, nil
}

// setSchema sets the full schema and the output schema (its --columns projection). While an
// avro key or value still waits for its reader schema from the registry (resolveAvro, at
// Open), its column is a binary placeholder: the --columns names that reach into it (key.*,
// value.NAME...) are compiled once the schema is known, the others are checked now, so that
// most usage errors come before connecting.
func (s *Source) setSchema(full *arrow.Schema) error {
	s.full, s.schema, s.proj = full, full, nil
	if len(s.cfg.Columns) == 0 {
		return nil
	}
	cols, final := s.cfg.Columns, true
	for _, pc := range []struct {
		c    fieldCodec
		name string
	}{{s.keyC, ColKey}, {s.valC, ColValue}} {
		if a, ok := pc.c.(*avroCodec); ok && a.reader == nil {
			cols, final = slices.DeleteFunc(slices.Clone(cols), func(c string) bool {
				return strings.HasPrefix(strings.TrimSpace(c), pc.name+".")
			}), false
		}
	}
	p, err := newProjection(full, cols)
	if err != nil {
		return stage.Usagef("%v", err)
	}
	if final {
		s.proj, s.schema = p, p.schema
	}
	return nil
}

// Schema is the output schema.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// Bounded reports whether the run ends by itself (--until other than never).
func (s *Source) Bounded() bool { return s.until.Kind != UntilNever }

// Open connects, resolves the partitions and their start positions (committed: the position
// of the newest committed epoch, or nil for --start), checks them against the log and starts
// fetching.
func (s *Source) Open(ctx context.Context, env *stage.Env, committed stage.Position) (*arrow.Schema, error) {
	s.env, s.log = env, env.Log
	if s.log == nil {
		s.log = slog.Default()
	}
	opts, err := s.cfg.Conn.Opts(s.log)
	if err != nil {
		return nil, usage(err)
	}
	opts = append(opts,
		kgo.FetchIsolationLevel(s.iso),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(s.cfg.FetchMaxPartitionBytes),
		kgo.BrokerMaxReadBytes(256<<20),
	)
	if s.g != nil {
		opts = append(opts, s.groupOpts()...)
	}
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, usage(err)
	}
	s.adm = kadm.NewClient(s.cl)
	octx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if s.g != nil {
		// The group assigns the partitions (onAssigned); nothing is read before.
		if err := s.resolveAvro(octx, nil); err != nil {
			return nil, err
		}
		if s.b, err = newBuilder(env.Mem, s.full, s.keyC, s.valC); err != nil {
			return nil, err
		}
		s.b.log = s.log.Warn
		s.openGroup()
		return s.schema, nil
	}

	var pos Position
	if committed != nil {
		if err := json.Unmarshal(committed, &pos); err != nil {
			return nil, fmt.Errorf("read-kafka: checkpoint position %s: %w", committed, err)
		}
	}
	tps, err := s.discover(octx)
	if err != nil {
		return nil, s.cfg.Conn.Explain(err)
	}
	if s.member.On() {
		s.log.Info("static member: reading partitions p mod N = I", "member", s.member.String(), "partitions", tpList(tps))
	}
	if err := s.checkTopicIDs(octx, tps, pos); err != nil {
		return nil, err
	}
	if err := s.resolveStarts(octx, tps, pos.Offsets); err != nil {
		return nil, err
	}
	if err := s.resolveEnds(octx); err != nil {
		return nil, err
	}
	if err := s.resolveAvro(octx, tps); err != nil {
		return nil, err
	}
	if s.b, err = newBuilder(env.Mem, s.full, s.keyC, s.valC); err != nil {
		return nil, err
	}
	s.b.log = s.log.Warn
	if s.cfg.BadRecords != "" {
		if !s.full.HasField(ColRescued) {
			return nil, stage.Usagef("--bad-records-output needs a decoding --key-format or --value-format (string, json or avro)")
		}
		start := map[TP]int64{}
		for _, p := range s.order {
			start[p.tp] = p.pos
		}
		if s.b.badFile, err = openBadFile(s.cfg.BadRecords, start); err != nil {
			return nil, err
		}
	}
	s.consume(s.order...)
	s.lastDisc = time.Now()
	s.updateLag()
	s.schema = s.declarePartitions(s.schema)
	return s.schema, nil
}

// declarePartitions lists in the schema metadata (codec.SchemaPartitions) the partitions with
// records to read at the start, so that a stage generating per-partition watermarks waits for
// each of them (a backlog read one partition after another, e.g. under
// --max-records-per-epoch, then makes no row late). Partitions without a backlog count from
// their first record, as before, so an empty partition does not stall a live pipeline.
func (s *Source) declarePartitions(sc *arrow.Schema) *arrow.Schema {
	info := codec.Info(sc)
	info.Partitions = nil
	for _, p := range s.order {
		if p.pos < s.bound(p) {
			info.Partitions = append(info.Partitions, p.tp.String())
		}
	}
	return codec.WithInfo(sc, info)
}

// bound is the offset a partition's known records reach: its bounded end, else the latest
// high watermark (-1 when unknown).
func (s *Source) bound(p *part) int64 {
	if p.end >= 0 {
		return p.end
	}
	return p.hwm
}

// resolveAvro takes the reader schema of avro keys and values without a schema file from the
// registry (subject <topic>-key / <topic>-value), finds the registry id of a reader schema
// file, and fixes the output schema.
func (s *Source) resolveAvro(ctx context.Context, tps []TP) error {
	var topics []string
	if s.pattern == nil && s.assign == nil {
		topics = append(topics, s.cfg.Topics...)
	} else {
		topics = topicsOf(tps)
	}
	changed := false
	for _, c := range []fieldCodec{s.keyC, s.valC} {
		if a, ok := c.(*avroCodec); ok {
			if err := a.resolveReader(ctx, topics); err != nil {
				return err
			}
			changed = true
		}
	}
	if changed {
		return s.setSchema(schemaFor(s.keyC, s.valC, true))
	}
	return nil
}

func usage(err error) error {
	var ue *kafkaconn.UsageError
	if errors.As(err, &ue) {
		return stage.Usagef("read-kafka: %v", ue.Msg)
	}
	return err
}

// discover returns the partitions the subscription covers now, sorted.
func (s *Source) discover(ctx context.Context) ([]TP, error) {
	if s.assign != nil {
		return s.assign, nil
	}
	// A direct request: kadm's Metadata may answer from the client's cache (up to the
	// metadata min age), which would hide topics created moments ago.
	req := kmsg.NewPtrMetadataRequest()
	if s.pattern == nil {
		for _, t := range s.cfg.Topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, err
	}
	var out []TP
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		name := *t.Topic
		if s.pattern != nil && (t.IsInternal || strings.HasPrefix(name, "__") || !s.pattern.MatchString(name)) {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.LeaderNotAvailable) {
				continue
			}
			return nil, fmt.Errorf("topic %s: %w", name, err)
		}
		for _, p := range t.Partitions {
			out = append(out, TP{name, p.Partition})
		}
	}
	sortTPs(out)
	if s.pattern == nil {
		have := map[string]bool{}
		for _, tp := range out {
			have[tp.Topic] = true
		}
		for _, t := range s.cfg.Topics {
			if !have[t] && s.lastDisc.IsZero() {
				s.log.Warn("topic does not exist (yet)", "topic", t)
			}
		}
	}
	mine := s.member.filter(out)
	if s.member.On() && s.lastDisc.IsZero() {
		s.member.warnEmpty(s.log, out, mine)
	}
	return mine, nil
}

func topicsOf(tps []TP) []string {
	seen := map[string]bool{}
	var out []string
	for _, tp := range tps {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			out = append(out, tp.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// logRange is the readable range of a partition's log: [start, end) with end the high
// watermark, and the last stable offset.
type logRange struct{ start, end, stable int64 }

func (s *Source) ranges(ctx context.Context, tps []TP) (map[TP]logRange, error) {
	out := map[TP]logRange{}
	if len(tps) == 0 {
		return out, nil
	}
	topics := topicsOf(tps)
	starts, err := s.adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := s.adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	stable := ends
	if s.cfg.isolation() == ReadCommitted {
		if stable, err = s.adm.ListCommittedOffsets(ctx, topics...); err == nil {
			err = stable.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("list stable offsets: %w", err)
		}
	}
	for _, tp := range tps {
		st, ok1 := starts.Lookup(tp.Topic, tp.Partition)
		en, ok2 := ends.Lookup(tp.Topic, tp.Partition)
		sb, ok3 := stable.Lookup(tp.Topic, tp.Partition)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("partition %s: no offsets listed (does it exist?)", tp)
		}
		out[tp] = logRange{start: st.Offset, end: en.Offset, stable: sb.Offset}
	}
	return out, nil
}

// resolveStarts sets the start position of every partition: the checkpoint's when it has one
// (checked against the log), else --start.
func (s *Source) resolveStarts(ctx context.Context, tps []TP, pos Offsets) error {
	all := append([]TP(nil), tps...)
	// A checkpointed partition of a subscribed topic that no longer exists (the topic was
	// deleted) is data loss; partitions of topics no longer subscribed are simply not read.
	for _, tp := range pos.Sorted() {
		if !s.member.Has(tp.Partition) {
			// metadata.json's "member" option refuses another I/N first; this catches a
			// position the checkpoint should not hold at all.
			return fmt.Errorf("read-kafka: the checkpoint holds a position of partition %s, which --member %s does not read (p mod %d ≠ %d): "+
				"it was written by another member or member count; changing the member count needs a new checkpoint for every member",
				tp, s.member, s.member.N, s.member.I)
		}
		if s.assign == nil && s.subscribed(tp.Topic) && !containsTP(tps, tp) {
			if orDefault(s.cfg.OnDataLoss, DataLossFail) == DataLossFail {
				return fmt.Errorf("read-kafka: data loss on topic %s partition %d: the checkpoint holds position %d but the partition no longer exists (topic deleted?); --on-data-loss earliest|latest drops it",
					tp.Topic, tp.Partition, pos[tp])
			}
			s.log.Warn("data loss: checkpointed partition no longer exists; dropped as --on-data-loss says",
				"topic", tp.Topic, "partition", tp.Partition, "position", pos[tp])
		}
	}
	sortTPs(all)
	rs, err := s.ranges(ctx, all)
	if err != nil {
		return s.cfg.Conn.Explain(err)
	}
	var byTime kadm.ListedOffsets
	if pos == nil && s.start.Kind == StartTime {
		if byTime, err = s.adm.ListOffsetsAfterMilli(ctx, s.start.Time.UnixMilli(), topicsOf(all)...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return s.cfg.Conn.Explain(fmt.Errorf("list offsets after %s: %w", s.start.Time.Format(time.RFC3339), err))
		}
	}
	for _, tp := range all {
		r := rs[tp]
		p := &part{tp: tp, end: -1, hwm: r.end}
		checked := false
		switch {
		case pos != nil:
			if off, ok := pos[tp]; ok && off == OffsetEarliest { // a re-created topic (checkTopicIDs)
				p.pos = r.start
			} else if ok && off == OffsetLatest {
				p.pos = s.stableEnd(r)
			} else if ok {
				p.pos, checked = off, true
			} else {
				p.pos = r.start // a partition new since the checkpoint
			}
		case s.start.Kind == StartEarliest:
			p.pos = r.start
		case s.start.Kind == StartLatest:
			p.pos = s.stableEnd(r)
		case s.start.Kind == StartLastN:
			p.pos = max(r.start, s.stableEnd(r)-s.start.N)
		case s.start.Kind == StartTime:
			o, _ := byTime.Lookup(tp.Topic, tp.Partition)
			p.pos = o.Offset
			if p.pos < 0 {
				p.pos = s.stableEnd(r)
			}
		case s.start.Kind == StartOffset:
			off, ok := s.start.Offsets[tp]
			switch {
			case !ok || off == OffsetEarliest:
				p.pos = r.start
			case off == OffsetLatest:
				p.pos = s.stableEnd(r)
			default:
				p.pos, checked = off, true
			}
		}
		if checked {
			if err := s.checkRange(p, r); err != nil {
				return err
			}
		}
		s.add(p)
	}
	return nil
}

func (s *Source) subscribed(topic string) bool {
	if s.pattern != nil {
		return s.pattern.MatchString(topic)
	}
	for _, t := range s.cfg.Topics {
		if t == topic {
			return true
		}
	}
	return false
}

func containsTP(tps []TP, tp TP) bool {
	for _, x := range tps {
		if x == tp {
			return true
		}
	}
	return false
}

// stableEnd is where a reader of the configured isolation level sees the log end: the last
// stable offset under read_committed, the high watermark otherwise.
func (s *Source) stableEnd(r logRange) int64 {
	if s.cfg.isolation() == ReadCommitted {
		return r.stable
	}
	return r.end
}

// checkRange applies --on-data-loss when p.pos lies outside the log r.
func (s *Source) checkRange(p *part, r logRange) error {
	if p.pos >= r.start && p.pos <= r.end {
		return nil
	}
	e := &DataLossError{TP: p.tp, Offset: p.pos, Start: r.start, End: r.end}
	if s.env != nil && s.env.Dir != nil {
		e.CheckpointPath = s.env.Dir.Path
	}
	to := r.start
	switch orDefault(s.cfg.OnDataLoss, DataLossFail) {
	case DataLossFail:
		return e
	case DataLossLatest:
		to = r.end
	}
	s.log.Warn("data loss: position outside the log, continuing as --on-data-loss says",
		"topic", p.tp.Topic, "partition", p.tp.Partition, "position", p.pos, "log_start", r.start, "log_end", r.end,
		"on_data_loss", s.cfg.OnDataLoss, "continue_at", to)
	p.pos = to
	return nil
}

func (s *Source) add(p *part) {
	s.parts[p.tp] = p
	s.order = append(s.order, p)
	sort.Slice(s.order, func(i, j int) bool {
		a, b := s.order[i].tp, s.order[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
}

// resolveEnds fixes the end of every partition for a bounded run.
func (s *Source) resolveEnds(ctx context.Context) error {
	if s.until.Kind == UntilNever {
		return nil
	}
	tps := make([]TP, 0, len(s.order))
	for _, p := range s.order {
		tps = append(tps, p.tp)
	}
	rs, err := s.ranges(ctx, tps)
	if err != nil {
		return s.cfg.Conn.Explain(err)
	}
	var byTime kadm.ListedOffsets
	if s.until.Kind == UntilTime {
		if byTime, err = s.adm.ListOffsetsAfterMilli(ctx, s.until.Time.UnixMilli(), topicsOf(tps)...); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return s.cfg.Conn.Explain(fmt.Errorf("list offsets after %s: %w", s.until.Time.Format(time.RFC3339), err))
		}
	}
	for _, p := range s.order {
		r := rs[p.tp]
		end := s.stableEnd(r)
		switch s.until.Kind {
		case UntilTime:
			if o, ok := byTime.Lookup(p.tp.Topic, p.tp.Partition); ok && o.Offset >= 0 {
				end = min(end, o.Offset)
			}
		case UntilOffsets:
			if o, ok := s.until.Offsets[p.tp]; ok && o >= 0 {
				end = min(end, o)
			}
		}
		p.end = max(end, p.pos)
	}
	return nil
}

// consume starts fetching ps at their positions (those not yet at their end).
func (s *Source) consume(ps ...*part) {
	m := map[string]map[int32]kgo.Offset{}
	for _, p := range ps {
		if p.end >= 0 && p.pos >= p.end {
			continue
		}
		if m[p.tp.Topic] == nil {
			m[p.tp.Topic] = map[int32]kgo.Offset{}
		}
		m[p.tp.Topic][p.tp.Partition] = kgo.NewOffset().At(p.pos)
		p.quietAt = time.Now()
	}
	if len(m) > 0 {
		s.cl.AddConsumePartitions(m)
	}
}

// Position returns the next offset of every assigned partition as Spark offsets JSON, with the
// topic IDs (the JSON form of Position).
func (s *Source) Position() stage.Position {
	o := make(Offsets, len(s.order))
	for _, p := range s.order {
		o[p.tp] = p.pos
	}
	b, _ := Position{Offsets: o, TopicIDs: s.ids}.MarshalJSON()
	return b
}

// EpochFull reports that --max-records-per-epoch is reached: the epoch's records, or every
// partition's share of the cap (capEnd); in group mode also that a revocation needs the epoch
// cut.
func (s *Source) EpochFull() bool {
	if s.g != nil && s.g.cutNow {
		return true
	}
	if s.cfg.MaxRecordsPerEpoch <= 0 {
		return false
	}
	if s.inEpoch >= s.cfg.MaxRecordsPerEpoch {
		return true
	}
	if s.capEnd == nil {
		return false
	}
	for tp, end := range s.capEnd {
		if p := s.parts[tp]; p != nil && p.pos < end {
			return false
		}
	}
	return true
}

// EpochCut starts a new epoch's count; the next Read spreads the cap afresh.
func (s *Source) EpochCut() {
	s.inEpoch, s.capEnd = 0, nil
	s.groupCut()
}

// spreadCap sets capEnd at the start of an epoch under --max-records-per-epoch N: when the
// partitions' lag (bound − position) adds up to more than N, each partition may read
// N × lag / total offsets in this epoch (Spark's maxOffsetsPerTrigger rule), the remainder of
// the integer division going one offset each to the largest fractions (ties: partition order),
// so the shares add up to exactly N. A backlog is then read evenly across partitions instead
// of one partition after another. The epoch's end position goes to the offsets WAL as usual,
// so a replay is identical. With less lag than N the cap only counts records.
func (s *Source) spreadCap() {
	n := s.cfg.MaxRecordsPerEpoch
	if n <= 0 || s.capEnd != nil || s.inEpoch > 0 {
		return
	}
	lag := make([]int64, len(s.order))
	var total int64
	for i, p := range s.order {
		if b := s.bound(p); b > p.pos {
			lag[i] = b - p.pos
			total += lag[i]
		}
	}
	if total <= n {
		return
	}
	type share struct {
		i    int
		frac uint64
	}
	shares := make([]share, 0, len(s.order))
	s.capEnd = make(map[TP]int64, len(s.order))
	left := n
	for i, p := range s.order {
		if lag[i] == 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(n), uint64(lag[i]))
		q, r := bits.Div64(hi, lo, uint64(total)) // hi < total: lag[i] ≤ total, n < 2^63
		s.capEnd[p.tp] = p.pos + int64(q)
		left -= int64(q)
		shares = append(shares, share{i, r})
	}
	sort.SliceStable(shares, func(a, b int) bool { return shares[a].frac > shares[b].frac })
	for _, sh := range shares[:left] { // left < len(shares): each share lost less than 1
		s.capEnd[s.order[sh.i].tp]++
	}
}

// CommitWait is how long the end of a run waits for the sink's last commit (with --group).
func (s *Source) CommitWait() time.Duration {
	if s.cfg.Group == "" {
		return 0
	}
	return s.cfg.GroupCommitWait
}

// Committed commits the committed epoch's offsets to --group (a warning when that fails: the
// group is for monitoring only).
func (s *Source) Committed(ctx context.Context, epoch uint64, pos stage.Position) error {
	if s.cfg.Group == "" {
		return nil
	}
	var o Offsets
	if err := json.Unmarshal(pos, &o); err != nil {
		return fmt.Errorf("read-kafka: position of epoch %d: %w", epoch, err)
	}
	offs := kadm.Offsets{}
	for tp, off := range o {
		offs.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: off, LeaderEpoch: -1,
			Metadata: fmt.Sprintf("streamkit epoch %d", epoch)})
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.adm.CommitOffsets(cctx, s.cfg.Group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		s.log.Warn("could not commit offsets to the consumer group (the checkpoint is unaffected)", "group", s.cfg.Group,
			"epoch", epoch, "err", s.cfg.Conn.Explain(err))
		return nil
	}
	s.log.Debug("committed offsets to the consumer group", "group", s.cfg.Group, "epoch", epoch)
	return nil
}

// Close stops fetching and closes the connections; in group mode it first waits for the last
// epoch's txns in the progress table, then leaves the group.
func (s *Source) Close() error {
	s.closeGroup()
	var err error
	if s.b != nil {
		err = s.b.badFile.close()
		s.b.release()
		s.b = nil
	}
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	return err
}

// target is the offset p must reach in the current Read: the limit's, the bounded end, or -1
// (no bound).
func (s *Source) target(p *part) int64 {
	if s.limit != nil {
		if v, ok := s.limit[p.tp]; ok {
			return v
		}
		return p.pos // not in this epoch
	}
	return p.end
}

// Read returns the next batch; see stage.Source.
func (s *Source) Read(ctx context.Context, limit stage.Position) (arrow.RecordBatch, error) {
	rec, err := s.read(ctx, limit)
	if err != nil && err != io.EOF && s.g != nil {
		s.g.failed = true
	}
	return rec, err
}

func (s *Source) read(ctx context.Context, limit stage.Position) (arrow.RecordBatch, error) {
	if s.g != nil {
		if err := s.applyGroupEvents(); err != nil {
			return nil, err
		}
		if err := s.checkReleases(ctx); err != nil {
			return nil, err
		}
		if s.g.cutNow {
			return nil, nil
		}
	}
	if err := s.setLimit(ctx, limit); err != nil {
		return nil, err
	}
	maxRows := s.env.BatchRows
	if maxRows <= 0 {
		maxRows = 64 * 1024
	}
	if limit == nil && s.cfg.MaxRecordsPerEpoch > 0 {
		s.spreadCap()
		if s.EpochFull() {
			return nil, nil
		}
		maxRows = int(min(int64(maxRows), s.cfg.MaxRecordsPerEpoch-s.inEpoch))
	}
	linger := s.env.Linger
	if linger <= 0 {
		linger = 100 * time.Millisecond
	}
	deadline := time.Now().Add(linger)
	for {
		full, err := s.drain(maxRows)
		if err != nil {
			return nil, err
		}
		if full || limit == nil && s.capEnd != nil && s.EpochFull() {
			return s.flush(limit)
		}
		if s.done() {
			if rec, err := s.flush(limit); rec != nil || err != nil {
				return rec, err
			}
			return nil, io.EOF
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return s.flush(limit)
		}
		if err := s.maybeDiscover(ctx); err != nil {
			return nil, err
		}
		if err := s.maybeProbe(ctx); err != nil {
			return nil, err
		}
		if err := s.poll(ctx, min(wait, s.cfg.ProbeAfter)); err != nil {
			return nil, err
		}
		if s.g != nil {
			if s.g.cutNow {
				return s.flush(limit)
			}
			if err := s.checkReleases(ctx); err != nil {
				return nil, err
			}
		}
	}
}

// flush returns the batch built so far, after making its --bad-records-output lines durable.
func (s *Source) flush(limit stage.Position) (arrow.RecordBatch, error) {
	if err := s.b.badFile.sync(); err != nil {
		return nil, err
	}
	rec := s.b.finish()
	if rec != nil && s.proj != nil {
		out := s.proj.apply(s.env.Mem, rec)
		rec.Release()
		rec = out
	}
	if rec != nil {
		rec = codec.WithPartition(rec, s.cur.tp.String())
	}
	s.cur = nil
	if rec != nil && limit == nil {
		s.inEpoch += rec.NumRows()
	}
	if s.b.bad > 0 && s.env.Stats != nil {
		s.env.Stats.Reject(stage.RescuedRow, s.b.bad)
		s.b.bad = 0
	}
	s.updateLag()
	return rec, nil
}

func (s *Source) updateLag() {
	if s.env == nil || s.env.Stats == nil {
		return
	}
	if s.g != nil {
		held := int64(0)
		for _, p := range s.order {
			if !p.revoked {
				held++
			}
		}
		s.env.Stats.Partitions.Store(held)
	}
	var lag int64
	for _, p := range s.order {
		if p.hwm < 0 {
			s.env.Stats.Lag.Store(-1)
			return
		}
		lag += max(0, p.hwm-p.pos)
	}
	s.env.Stats.Lag.Store(lag)
}

// setLimit parses a replay limit (cached) and assigns partitions it names that are not read yet.
func (s *Source) setLimit(ctx context.Context, limit stage.Position) error {
	if limit == nil {
		s.limit, s.limitRaw = nil, nil
		return nil
	}
	if s.limit != nil && string(limit) == string(s.limitRaw) {
		return nil
	}
	var lp Position
	if err := json.Unmarshal(limit, &lp); err != nil {
		return fmt.Errorf("read-kafka: offsets WAL position %s: %w", limit, err)
	}
	if err := s.checkLimitIDs(lp); err != nil {
		return err
	}
	o := lp.Offsets
	s.limit, s.limitRaw = o, append(s.limitRaw[:0], limit...)
	var missing []TP
	for tp := range o {
		if s.parts[tp] == nil {
			missing = append(missing, tp)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sortTPs(missing)
	return s.addPartitions(ctx, missing)
}

// addPartitions assigns new partitions from their earliest offset.
func (s *Source) addPartitions(ctx context.Context, tps []TP) error {
	octx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	rs, err := s.ranges(octx, tps)
	if err != nil {
		return s.cfg.Conn.Explain(err)
	}
	if err := s.learnTopicIDs(octx, topicsOf(tps)); err != nil {
		return s.cfg.Conn.Explain(err)
	}
	var ps []*part
	for _, tp := range tps {
		p := &part{tp: tp, pos: rs[tp].start, end: -1, hwm: rs[tp].end}
		s.log.Info("reading new partition", "topic", tp.Topic, "partition", tp.Partition, "from", p.pos)
		s.add(p)
		ps = append(ps, p)
	}
	s.consume(ps...)
	return nil
}

// maybeDiscover looks for new partitions while reading live.
func (s *Source) maybeDiscover(ctx context.Context) error {
	if s.until.Kind != UntilNever || s.limit != nil || s.assign != nil || s.g != nil || time.Since(s.lastDisc) < s.cfg.DiscoveryInterval {
		return nil
	}
	s.lastDisc = time.Now()
	dctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	tps, err := s.discover(dctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if kafkaconn.Fatal(err) {
			return s.cfg.Conn.Explain(err)
		}
		s.log.Warn("partition discovery failed; retrying later", "err", err)
		return nil
	}
	var missing []TP
	for _, tp := range tps {
		if s.parts[tp] == nil {
			missing = append(missing, tp)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return s.addPartitions(ctx, missing)
}

// done reports whether every partition reached its target (never in live reading).
func (s *Source) done() bool {
	if s.g != nil && !s.groupDone() {
		return false
	}
	for _, p := range s.order {
		if p.revoked {
			continue
		}
		t := s.target(p)
		if t < 0 || p.pos < t {
			return false
		}
	}
	return true
}

// drainTarget is the offset drain may read p up to: target, lowered to p's share of the
// epoch's cap (capEnd; a partition without a share waits for the next epoch).
func (s *Source) drainTarget(p *part) int64 {
	t := s.target(p)
	if s.capEnd == nil || s.limit != nil {
		return t
	}
	c, ok := s.capEnd[p.tp]
	if !ok {
		c = p.pos
	}
	if t < 0 {
		return c
	}
	return min(t, c)
}

// drain moves pending records below their partition's target into the batch, up to maxRows.
// A batch holds the records of one partition (codec.KeyPartition names it): full reports that
// the batch is complete, because it has maxRows rows or another partition has records to add.
func (s *Source) drain(maxRows int) (full bool, err error) {
	n := len(s.order)
	if n == 0 {
		return false, nil
	}
	s.rr = (s.rr + 1) % n
	for i := 0; i < n; i++ {
		p := s.order[(s.rr+i)%n]
		if p.revoked {
			continue
		}
		t := s.drainTarget(p)
		j := 0
		for ; j < len(p.pending); j++ {
			r := p.pending[j]
			if r.Offset < p.pos {
				continue
			}
			if t >= 0 && r.Offset >= t {
				// Everything between pos and the next visible record is invisible.
				p.pos = max(p.pos, t)
				break
			}
			if s.b.rows >= maxRows {
				full = true
				break
			}
			if r.Attrs.IsControl() {
				p.pos = r.Offset + 1
				continue // a transaction marker: consumed, never emitted
			}
			if s.cur != p && s.b.rows > 0 {
				full = true // the next batch starts with this partition
				break
			}
			if err := s.b.add(r); err != nil {
				return false, fmt.Errorf("read-kafka: topic %s partition %d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			s.cur = p
			p.pos = r.Offset + 1
		}
		if j > 0 {
			clear(p.pending[:j])
			p.pending = p.pending[j:]
			if len(p.pending) == 0 {
				p.pending = nil
			}
			p.quietAt = time.Now()
		}
		s.flowControl(p, t)
		if s.b.rows >= maxRows {
			return true, nil
		}
	}
	return full, nil
}

// DefaultFetchMaxPartitionBytes is the default Config.FetchMaxPartitionBytes: 2 MiB. Fetched
// records stay in memory until they are batched, so this bounds read-kafka's resident memory:
// reading make bench's W3 topic (2 partitions, 2M JSON records) peaked at 217 MiB RSS with
// 8 MiB, 137 MiB with 2 MiB and 119 MiB with 1 MiB, for the same CPU time within noise (1 MiB
// cost ~5% more).
const DefaultFetchMaxPartitionBytes = 2 << 20

// maxPending is how many fetched records a partition may buffer before it is paused: one
// default batch (--batch-rows). A buffered record pins its kgo.Record (~180 bytes) and its
// value, so when downstream is the bottleneck 256Ki records per partition held ~170 MiB of
// heap for make bench's W3 (2 partitions, ~150-byte JSON values), doubled in the RSS by GOGC.
const maxPending = 64 * 1024

// flowControl pauses a partition that reached the end of a bounded run or buffers too much,
// and resumes it when it has room again.
func (s *Source) flowControl(p *part, t int64) {
	finished := p.end >= 0 && p.pos >= p.end && s.limit == nil
	want := finished || len(p.pending) >= maxPending
	if want == p.paused {
		return
	}
	m := map[string][]int32{p.tp.Topic: {p.tp.Partition}}
	if want {
		s.cl.PauseFetchPartitions(m)
		if finished {
			p.pending = nil
		}
	} else {
		s.cl.ResumeFetchPartitions(m)
	}
	p.paused = want
}

// poll waits up to d for fetched records and files them under their partitions.
func (s *Source) poll(ctx context.Context, d time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, d)
	fs := s.cl.PollFetches(pctx)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if fs.IsClientClosed() {
		return errors.New("read-kafka: client closed")
	}
	// Assignments first: the records of a newly assigned partition need its part.
	if err := s.applyGroupEvents(); err != nil {
		return err
	}
	var ferr error
	fs.EachError(func(topic string, partition int32, err error) {
		if ferr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		p := s.parts[TP{topic, partition}]
		switch {
		case p != nil && errors.Is(err, kerr.OffsetOutOfRange):
			ferr = s.outOfRange(ctx, p)
		case kafkaconn.Fatal(err) || errors.Is(err, kerr.UnknownTopicID):
			ferr = s.cfg.Conn.Explain(fmt.Errorf("fetch topic %s partition %d: %w", topic, partition, err))
		default:
			s.log.Warn("fetch error (retrying)", "topic", topic, "partition", partition, "err", err)
		}
	})
	if ferr != nil {
		return ferr
	}
	now := time.Now()
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		p := s.parts[TP{ftp.Topic, ftp.Partition}]
		if p == nil || p.revoked {
			return
		}
		if ftp.HighWatermark >= 0 {
			p.hwm = ftp.HighWatermark
		}
		if len(ftp.Records) == 0 {
			return
		}
		last := p.pos - 1
		if n := len(p.pending); n > 0 {
			last = p.pending[n-1].Offset
		}
		for _, r := range ftp.Records {
			if r.Offset > last {
				p.pending = append(p.pending, r)
				last = r.Offset
			}
		}
		p.quietAt = now
	})
	return nil
}

// outOfRange handles a fetch answered with OFFSET_OUT_OF_RANGE for p.
func (s *Source) outOfRange(ctx context.Context, p *part) error {
	next := p.pos
	if n := len(p.pending); n > 0 {
		next = p.pending[n-1].Offset + 1
	}
	octx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	rs, err := s.ranges(octx, []TP{p.tp})
	if err != nil {
		return s.cfg.Conn.Explain(err)
	}
	r := rs[p.tp]
	probe := &part{tp: p.tp, pos: next}
	if err := s.checkRange(probe, r); err != nil {
		return err
	}
	if probe.pos != next && len(p.pending) == 0 {
		p.pos = probe.pos
	}
	s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{p.tp.Topic: {p.tp.Partition: {Epoch: -1, Offset: probe.pos}}})
	return nil
}

// maybeProbe probes partitions that are short of their target and silent: their remaining
// offsets may all be invisible (aborted records, compaction), which no fetch will ever return.
func (s *Source) maybeProbe(ctx context.Context) error {
	now := time.Now()
	for _, p := range s.order {
		t := s.drainTarget(p)
		if p.revoked || t < 0 || p.pos >= t || len(p.pending) > 0 || now.Sub(p.quietAt) < s.cfg.ProbeAfter {
			continue
		}
		if p.probePos == p.pos && now.Sub(p.probedAt) < 4*s.cfg.ProbeAfter {
			continue
		}
		p.probedAt, p.probePos = now, p.pos
		if err := s.probe(ctx, p, t); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var dl *DataLossError
			if errors.As(err, &dl) {
				return err
			}
			s.log.Debug("probe failed", "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
		}
	}
	return nil
}

// probe fetches p once from its position and moves the position over offsets that hold no
// visible record, never past t.
func (s *Source) probe(ctx context.Context, p *part, t int64) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	md, err := s.adm.Metadata(pctx, p.tp.Topic)
	if err != nil {
		return err
	}
	td, ok := md.Topics[p.tp.Topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("no metadata for topic %s", p.tp.Topic)
	}
	pd, ok := td.Partitions[p.tp.Partition]
	if !ok || pd.Leader < 0 {
		return fmt.Errorf("no leader for %s", p.tp)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 4 << 20
	req.IsolationLevel = 0
	if s.cfg.isolation() == ReadCommitted {
		req.IsolationLevel = 1
	}
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = p.tp.Topic
	rt.TopicID = td.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.FetchOffset = p.pos
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = 4 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(pctx, s.cl.Broker(int(pd.Leader)))
	if err != nil {
		return err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rpr := &resp.Topics[i].Partitions[j]
			if rpr.Partition != p.tp.Partition {
				continue
			}
			if rpr.ErrorCode != 0 {
				return kerr.ErrorForCode(rpr.ErrorCode)
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				KeepControlRecords: true,
				Offset:             p.pos,
				IsolationLevel:     s.iso,
				Topic:              p.tp.Topic,
				Partition:          p.tp.Partition,
			}, rpr, kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return fp.Err
			}
			if len(fp.Records) > 0 {
				next = fp.Records[0].Offset // visible records come through the consumer
			} else if next == p.pos && rpr.HighWatermark >= 0 && rpr.HighWatermark < t && p.pos >= rpr.HighWatermark {
				// The target (a replayed epoch's end) lies beyond the log: the topic was
				// re-created or truncated since the epoch was read.
				r := logRange{start: rpr.LogStartOffset, end: rpr.HighWatermark}
				probe := &part{tp: p.tp, pos: t}
				if err := s.checkRange(probe, r); err != nil {
					return err
				}
				next = t // --on-data-loss: the epoch ends where it was recorded
			}
			if next > p.pos {
				s.log.Debug("probe: offsets without visible records", "topic", p.tp.Topic, "partition", p.tp.Partition,
					"from", p.pos, "to", min(next, t))
				p.pos = min(next, t)
				p.quietAt = time.Now()
			}
			return nil
		}
	}
	return nil
}
