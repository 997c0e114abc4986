package statedump

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkaconn"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/state"
)

// Partition statuses of --offsets --lag.
const (
	StatusOK          = "ok"
	StatusNew         = "not in checkpoint" // on the brokers, not (yet) read by the stage
	StatusDataLoss    = "before log start"  // records were deleted (retention) before they were read
	StatusBeyondEnd   = "beyond log end"    // the topic was re-created or truncated
	StatusRecreated   = "topic re-created"  // the topic's ID differs from the checkpoint's: deleted and re-created
	StatusNoTopic     = "topic not found"
	StatusNoPartition = "partition not found"
)

// sourceStage is the recorded position of one source stage: its offsets WAL entry of the
// committed epoch (of epoch 0, the resolved start, before any commit) and its newest one.
type sourceStage struct {
	name, path, tool string
	meta             state.Metadata
	committed, wal   uint64
	committedPos     json.RawMessage // nil: none recorded
	walPos           json.RawMessage
	errs             []string // corrupt files (path and reason)
}

// sources returns the source stages at path: the stage itself, or every stage under a root
// that has an offsets WAL. A corrupt file is kept in the stage's errs (its epoch is left out);
// errors: a named stage that is not a source, a stage none of whose offsets verify.
func sources(path string) ([]sourceStage, error) {
	var dirs []string
	single := state.IsStageDir(path)
	if single {
		dirs = []string{path}
	} else {
		names, err := state.Stages(path)
		if err != nil {
			return nil, fmt.Errorf("state-dump: %w", err)
		}
		for _, n := range names {
			dirs = append(dirs, state.Join(path, n))
		}
	}
	var out []sourceStage
	for _, d := range dirs {
		s, err := state.Inspect(d)
		if err != nil {
			return nil, fmt.Errorf("state-dump: %w", err)
		}
		src := sourceStage{name: state.Base(d), path: d, committed: s.Committed}
		if s.Meta != nil {
			src.meta, src.tool = *s.Meta, s.Meta.Tool
		}
		src.errs = s.Errors
		for _, e := range s.Epochs {
			if e.Offsets == nil {
				continue
			}
			if e.Epoch == s.Committed {
				src.committedPos = e.Offsets
			}
			if src.walPos == nil || e.Epoch > src.wal {
				src.wal, src.walPos = e.Epoch, e.Offsets
			}
		}
		if src.walPos == nil {
			if len(s.Errors) > 0 {
				return nil, fmt.Errorf("state-dump: %s", strings.Join(s.Errors, "; "))
			}
			if single {
				return nil, stage.Usagef("state-dump: --offsets: %s (%s) is not a source stage: it has no offsets write-ahead log", d, src.tool)
			}
			continue
		}
		out = append(out, src)
	}
	if len(out) == 0 {
		hint := ""
		if _, err := os.Stat(filepath.Join(path, "_delta_log")); err == nil {
			hint = "; it is a Delta table: give --flow FLOW to show a consumer group's progress from its txn actions"
		}
		return nil, fmt.Errorf("state-dump: --offsets: no source stage (one with an offsets write-ahead log) in %s%s", path, hint)
	}
	return out, nil
}

// offsets shows the positions of the source stages at path (--offsets, --lag).
func offsets(ctx context.Context, cfg Config, path string, out io.Writer) error {
	srcs, err := sources(path)
	if err != nil {
		return err
	}
	mem := cfg.Mem
	var kafkas, files, deltas, others []sourceStage
	for _, s := range srcs {
		switch s.tool {
		case "read-kafka":
			kafkas = append(kafkas, s)
		case "read-files":
			files = append(files, s)
		case "read-delta":
			deltas = append(deltas, s)
		default:
			others = append(others, s)
		}
	}
	if cfg.Lag && len(kafkas) == 0 {
		return stage.Usagef("state-dump: --lag compares Kafka positions with the brokers: %s has no read-kafka stage", path)
	}
	type section struct {
		title string
		rec   arrow.RecordBatch
	}
	var secs []section
	defer func() {
		for _, s := range secs {
			s.rec.Release()
		}
	}()
	if len(kafkas) > 0 {
		rec, err := kafkaRows(ctx, mem, cfg, kafkas)
		if err != nil {
			return err
		}
		secs = append(secs, section{"Kafka positions (offsets: the next offset to read)", rec})
	}
	if len(files) > 0 {
		rec, err := filesRows(mem, files)
		if err != nil {
			return err
		}
		secs = append(secs, section{"files", rec})
	}
	if len(deltas) > 0 {
		rec, err := deltaRows(mem, deltas)
		if err != nil {
			return err
		}
		secs = append(secs, section{"Delta tables (positions: the next version to read)", rec})
	}
	if len(others) > 0 {
		secs = append(secs, section{"other sources (positions as recorded)", otherRows(mem, others)})
	}
	if cfg.Format == FormatArrow && len(secs) > 1 {
		return stage.Usagef("state-dump: --offsets --format arrow streams one kind of source; name one stage with --stage")
	}
	var errs []string
	for _, s := range srcs {
		errs = append(errs, s.errs...)
	}
	for i, s := range secs {
		if cfg.Format == FormatTable {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintln(out, styles(cfg.Color).title.Render(s.title))
		} else if cfg.Format == FormatCSV && i > 0 {
			fmt.Fprintln(out)
		}
		if err := emit(cfg, s.rec, out); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		// The positions above come from the files that verify; the others are named here.
		return fmt.Errorf("state-dump: %s", strings.Join(errs, "; "))
	}
	return nil
}

// logRange is a partition's log on the brokers: [start, end) with end the high watermark, and
// the last stable offset (the end a read_committed consumer reaches).
type logRange struct{ start, end, stable int64 }

// brokerRanges lists the log range of every partition of topics on the brokers of conn, and
// the topics' IDs.
func brokerRanges(ctx context.Context, conn kafkaconn.Config, timeout time.Duration, topics []string) (map[kafka.TP]logRange, map[string]bool, map[string]kafka.TopicID, error) {
	opts, err := conn.Opts(slog.Default())
	if err != nil {
		var ue *kafkaconn.UsageError
		if errors.As(err, &ue) {
			return nil, nil, nil, stage.Usagef("state-dump: %s", ue.Msg)
		}
		return nil, nil, nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state-dump: %w", conn.Explain(err))
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		l, err := f(ctx, topics...)
		if err != nil && len(l) == 0 {
			return nil, fmt.Errorf("state-dump: list %s offsets: %w", what, conn.Explain(err))
		}
		return l, nil
	}
	starts, err := list("start", adm.ListStartOffsets)
	if err != nil {
		return nil, nil, nil, err
	}
	ends, err := list("end", adm.ListEndOffsets)
	if err != nil {
		return nil, nil, nil, err
	}
	stables, err := list("stable", adm.ListCommittedOffsets)
	if err != nil {
		return nil, nil, nil, err
	}
	out := map[kafka.TP]logRange{}
	missing := map[string]bool{}
	for _, t := range topics {
		ps, ok := ends[t]
		if !ok {
			missing[t] = true
			continue
		}
		for p, e := range ps {
			if p < 0 {
				missing[t] = true
				continue
			}
			r := logRange{end: e.Offset}
			s, ok1 := starts.Lookup(t, p)
			st, ok2 := stables.Lookup(t, p)
			if e.Err != nil || !ok1 || !ok2 || s.Err != nil || st.Err != nil {
				for _, err := range []error{e.Err, s.Err, st.Err} {
					if err != nil {
						return nil, nil, nil, fmt.Errorf("state-dump: offsets of %s/%d: %w", t, p, conn.Explain(err))
					}
				}
				return nil, nil, nil, fmt.Errorf("state-dump: offsets of %s/%d: not listed by the brokers", t, p)
			}
			r.start, r.stable = s.Offset, st.Offset
			out[kafka.TP{Topic: t, Partition: p}] = r
		}
	}
	// Topic IDs (KIP-516), to tell a topic re-created since the checkpoint.
	ids := map[string]kafka.TopicID{}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state-dump: topic metadata: %w", conn.Explain(err))
	}
	for t, td := range md.Topics {
		if td.Err == nil {
			ids[t] = kafka.TopicID(td.ID)
		}
	}
	return out, missing, ids, nil
}

// kafkaRow is one row of the Kafka section: a stage's recorded offsets of one topic partition.
type kafkaRow struct {
	stage          string
	tp             kafka.TP
	committedEpoch uint64
	walEpoch       uint64
	committed, wal *int64
	isolation      string
	topicID        kafka.TopicID // the committed position's, else the WAL's; zero: not recorded
}

// kafkaRows is the Kafka section: one row per stage and topic partition.
func kafkaRows(ctx context.Context, mem memory.Allocator, cfg Config, srcs []sourceStage) (arrow.RecordBatch, error) {
	rows, topicSet, err := recordedKafkaRows(srcs)
	if err != nil {
		return nil, err
	}
	var ranges map[kafka.TP]logRange
	var missing map[string]bool
	var ids map[string]kafka.TopicID
	if cfg.Lag {
		topics := sortedKeys(topicSet)
		if ranges, missing, ids, err = brokerRanges(ctx, cfg.Conn, cfg.Timeout, topics); err != nil {
			return nil, err
		}
		rows = appendNewPartitions(rows, srcs, ranges)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.stage != b.stage {
			return a.stage < b.stage
		}
		if a.tp.Topic != b.tp.Topic {
			return a.tp.Topic < b.tp.Topic
		}
		return a.tp.Partition < b.tp.Partition
	})
	b := array.NewRecordBuilder(mem, kafkaSchema(cfg.Lag))
	defer b.Release()
	for _, r := range rows {
		appendKafkaRow(b, r)
		if cfg.Lag {
			appendKafkaLag(b, r, ranges, missing, ids)
		}
	}
	return b.NewRecordBatch(), nil
}

// recordedKafkaRows decodes the committed and newest WAL positions of srcs: one row per stage
// and topic partition either names, and the set of the topics they name. Errors: a position
// that is not Kafka offsets JSON.
func recordedKafkaRows(srcs []sourceStage) ([]kafkaRow, map[string]bool, error) {
	var rows []kafkaRow
	topicSet := map[string]bool{}
	for _, s := range srcs {
		var cp, wp kafka.Position
		for _, p := range []struct {
			raw json.RawMessage
			dst *kafka.Position
		}{{s.committedPos, &cp}, {s.walPos, &wp}} {
			if p.raw == nil || string(p.raw) == "null" {
				continue
			}
			if err := json.Unmarshal(p.raw, p.dst); err != nil {
				return nil, nil, fmt.Errorf("state-dump: %s: position is not Kafka offsets JSON: %w", s.path, err)
			}
		}
		c, w := cp.Offsets, wp.Offsets
		tps := map[kafka.TP]bool{}
		for tp := range c {
			tps[tp] = true
		}
		for tp := range w {
			tps[tp] = true
		}
		iso := s.meta.Options["isolation"]
		for tp := range tps {
			r := kafkaRow{stage: s.name, tp: tp, committedEpoch: s.committed, walEpoch: s.wal, isolation: iso, topicID: cp.TopicIDs[tp.Topic]}
			if r.topicID.IsZero() {
				r.topicID = wp.TopicIDs[tp.Topic]
			}
			if v, ok := c[tp]; ok {
				r.committed = &v
			}
			if v, ok := w[tp]; ok {
				r.wal = &v
			}
			rows = append(rows, r)
			topicSet[tp.Topic] = true
		}
	}
	return rows, topicSet, nil
}

// appendNewPartitions appends to rows the partitions on the brokers (ranges) that a stage has
// not recorded although it reads their topic (new partitions), with no offsets.
func appendNewPartitions(rows []kafkaRow, srcs []sourceStage, ranges map[kafka.TP]logRange) []kafkaRow {
	for _, s := range srcs {
		have := map[kafka.TP]bool{}
		stageTopics := map[string]bool{}
		for _, r := range rows {
			if r.stage == s.name {
				have[r.tp] = true
				stageTopics[r.tp.Topic] = true
			}
		}
		for tp := range ranges {
			if stageTopics[tp.Topic] && !have[tp] {
				rows = append(rows, kafkaRow{stage: s.name, tp: tp, committedEpoch: s.committed, walEpoch: s.wal, isolation: s.meta.Options["isolation"]})
			}
		}
	}
	return rows
}

// kafkaSchema is the schema of the Kafka section; lag adds the brokers' log range, the lags
// and the status (columns 8 to 12).
func kafkaSchema(lag bool) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "stage", Type: arrow.BinaryTypes.String},
		{Name: "topic", Type: arrow.BinaryTypes.String},
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "committed_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "committed", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "wal_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "wal", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "topic_id", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if lag {
		fields = append(fields,
			arrow.Field{Name: "log_start", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "log_end", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "lag", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "wal_lag", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "status", Type: arrow.BinaryTypes.String})
	}
	return arrow.NewSchema(fields, nil)
}

// appendOptInt64 appends *v to the Int64 builder f, null when v is nil.
func appendOptInt64(f array.Builder, v *int64) {
	if v == nil {
		f.AppendNull()
	} else {
		f.(*array.Int64Builder).Append(*v)
	}
}

// appendKafkaRow appends the recorded columns (0 to 7) of r to b.
func appendKafkaRow(b *array.RecordBuilder, r kafkaRow) {
	b.Field(0).(*array.StringBuilder).Append(r.stage)
	b.Field(1).(*array.StringBuilder).Append(r.tp.Topic)
	b.Field(2).(*array.Int32Builder).Append(r.tp.Partition)
	b.Field(3).(*array.Uint64Builder).Append(r.committedEpoch)
	appendOptInt64(b.Field(4), r.committed)
	b.Field(5).(*array.Uint64Builder).Append(r.walEpoch)
	appendOptInt64(b.Field(6), r.wal)
	if r.topicID.IsZero() {
		b.Field(7).AppendNull()
	} else {
		b.Field(7).(*array.StringBuilder).Append(r.topicID.String())
	}
}

// appendKafkaLag appends the --lag columns (8 to 12) of r to b: the partition's log range on
// the brokers (ranges; missing names the topics they do not have), the lags of the committed
// and WAL offsets behind the end a reader of r's isolation reaches, and the status.
func appendKafkaLag(b *array.RecordBuilder, r kafkaRow, ranges map[kafka.TP]logRange, missing map[string]bool, ids map[string]kafka.TopicID) {
	lr, ok := ranges[r.tp]
	if !ok {
		for i := 8; i <= 11; i++ {
			b.Field(i).AppendNull()
		}
		st := StatusNoPartition
		if missing[r.tp.Topic] {
			st = StatusNoTopic
		}
		b.Field(12).(*array.StringBuilder).Append(st)
		return
	}
	end := lr.stable
	if r.isolation == kafka.ReadUncommitted {
		end = lr.end
	}
	b.Field(8).(*array.Int64Builder).Append(lr.start)
	b.Field(9).(*array.Int64Builder).Append(end)
	lag := func(pos *int64) *int64 {
		if pos == nil {
			return nil
		}
		v := end - max(*pos, lr.start)
		return &v
	}
	appendOptInt64(b.Field(10), lag(r.committed))
	appendOptInt64(b.Field(11), lag(r.wal))
	st := StatusOK
	switch now := ids[r.tp.Topic]; {
	case !r.topicID.IsZero() && !now.IsZero() && r.topicID != now:
		st = StatusRecreated
	case r.committed == nil && r.wal == nil:
		st = StatusNew
	case r.committed != nil && *r.committed < lr.start || r.wal != nil && *r.wal < lr.start:
		st = StatusDataLoss
	case r.committed != nil && *r.committed > lr.end || r.wal != nil && *r.wal > lr.end:
		st = StatusBeyondEnd
	}
	b.Field(12).(*array.StringBuilder).Append(st)
}

// filesPosition is read-files' position (source/files: the cursor at the end of the epoch and
// the files the epoch read).
type filesPosition struct {
	Next  int   `json:"next"`
	Row   int64 `json:"row"`
	Files []struct {
		Index int    `json:"index"`
		Path  string `json:"path"`
	} `json:"files"`
}

// filesEntry is an entry of read-files' files log (source/files package doc).
type filesEntry struct {
	Path string `json:"path"`
	Skip string `json:"skip,omitempty"`
}

// filesLog reads the files log of a read-files checkpoint directory: the plan records
// files/<seq>.json applied in order (a record replaces the entries from its "first" on).
// A record compacted away while it is listed makes it start over.
func filesLog(path string) ([]filesEntry, error) {
	dir := state.Join(path, "files")
	for try := 0; ; try++ {
		seqs, err := state.Epochs(path, "files")
		if err != nil {
			return nil, err
		}
		var entries []filesEntry
		gone := false
		for _, n := range seqs {
			var rec struct {
				First   int          `json:"first"`
				Entries []filesEntry `json:"entries"`
			}
			p := state.Join(dir, state.EpochName(n)+".json")
			if err := state.ReadJSON(p, &rec); err != nil {
				if errors.Is(err, os.ErrNotExist) && try < retries {
					gone = true
					break
				}
				return nil, err
			}
			if rec.First < 0 || rec.First > len(entries) {
				return nil, &state.CorruptError{Path: p, Reason: fmt.Sprintf("record starts at entry %d, the log before it has %d", rec.First, len(entries))}
			}
			entries = append(entries[:rec.First], rec.Entries...)
		}
		if !gone {
			return entries, nil
		}
	}
}

// filesRows is the read-files section: one row per stage.
func filesRows(mem memory.Allocator, srcs []sourceStage) (arrow.RecordBatch, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "stage", Type: arrow.BinaryTypes.String},
		{Name: "committed_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "files_read", Type: arrow.PrimitiveTypes.Int64},
		{Name: "reading", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "last_file", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "wal_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "files_read_wal", Type: arrow.PrimitiveTypes.Int64},
		{Name: "pending", Type: arrow.PrimitiveTypes.Int64},
		{Name: "skipped", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, s := range srcs {
		log, err := filesLog(s.path)
		if err != nil {
			return nil, fmt.Errorf("state-dump: files log of %s: %w", s.path, err)
		}
		var c, w filesPosition
		for _, p := range []struct {
			raw json.RawMessage
			dst *filesPosition
		}{{s.committedPos, &c}, {s.walPos, &w}} {
			if p.raw == nil || string(p.raw) == "null" {
				continue
			}
			if err := json.Unmarshal(p.raw, p.dst); err != nil {
				return nil, fmt.Errorf("state-dump: %s: position is not a read-files position: %w", s.path, err)
			}
		}
		read := func(next int) int64 {
			n := int64(0)
			for i := 0; i < next && i < len(log); i++ {
				if log[i].Skip == "" {
					n++
				}
			}
			return n
		}
		skipped := int64(0)
		for _, e := range log {
			if e.Skip != "" {
				skipped++
			}
		}
		b.Field(0).(*array.StringBuilder).Append(s.name)
		b.Field(1).(*array.Uint64Builder).Append(s.committed)
		b.Field(2).(*array.Int64Builder).Append(read(c.Next))
		if c.Row > 0 && c.Next < len(log) {
			b.Field(3).(*array.StringBuilder).Append(log[c.Next].Path + " from row " + strconv.FormatInt(c.Row, 10))
		} else {
			b.Field(3).AppendNull()
		}
		last := ""
		for i := min(c.Next, len(log)) - 1; i >= 0; i-- {
			if log[i].Skip == "" {
				last = log[i].Path
				break
			}
		}
		if last == "" {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append(last)
		}
		b.Field(5).(*array.Uint64Builder).Append(s.wal)
		b.Field(6).(*array.Int64Builder).Append(read(w.Next))
		from := w.Next
		if w.Row > 0 {
			from++ // the file being read counts as read
		}
		b.Field(7).(*array.Int64Builder).Append(read(len(log)) - read(from))
		b.Field(8).(*array.Int64Builder).Append(skipped)
	}
	return b.NewRecordBatch(), nil
}

// deltaPosition is read-delta's position (source/delta): the next table version to read, or
// the place inside the initial snapshot of a version.
type deltaPosition struct {
	Version *int64 `json:"version"`
	Initial bool   `json:"initial"`
	File    int    `json:"file"`
	Row     int64  `json:"row"`
}

// latestVersion is the newest commit of the Delta table at table (the highest
// _delta_log/<20 digits>.json), -1 when it has none or cannot be listed.
func latestVersion(table string) int64 {
	ents, err := os.ReadDir(filepath.Join(table, "_delta_log"))
	if err != nil {
		return -1
	}
	latest := int64(-1)
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || len(stem) != 20 {
			continue
		}
		if v, err := strconv.ParseInt(stem, 10, 64); err == nil && v > latest {
			latest = v
		}
	}
	return latest
}

// deltaRows is the read-delta section: one row per stage, with the table's newest version and
// how many of its commits the committed position has not started.
func deltaRows(mem memory.Allocator, srcs []sourceStage) (arrow.RecordBatch, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "stage", Type: arrow.BinaryTypes.String},
		{Name: "table", Type: arrow.BinaryTypes.String},
		{Name: "committed_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "committed", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "wal_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "wal", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "table_version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "versions_unread", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, s := range srcs {
		table := s.meta.Options["table"]
		var c deltaPosition
		if s.committedPos != nil && string(s.committedPos) != "null" {
			if err := json.Unmarshal(s.committedPos, &c); err != nil {
				return nil, fmt.Errorf("state-dump: %s: position is not a read-delta position: %w", s.path, err)
			}
		}
		b.Field(0).(*array.StringBuilder).Append(s.name)
		b.Field(1).(*array.StringBuilder).Append(table)
		b.Field(2).(*array.Uint64Builder).Append(s.committed)
		for i, raw := range []json.RawMessage{s.committedPos, s.walPos} {
			f := b.Field(3 + 2*i).(*array.StringBuilder)
			if p := positionText("read-delta", raw); p != "" {
				f.Append(p)
			} else {
				f.AppendNull()
			}
			if i == 0 {
				b.Field(4).(*array.Uint64Builder).Append(s.wal)
			}
		}
		latest := latestVersion(table)
		if table == "" || latest < 0 {
			b.Field(6).AppendNull()
			b.Field(7).AppendNull()
			continue
		}
		b.Field(6).(*array.Int64Builder).Append(latest)
		if c.Version == nil {
			b.Field(7).AppendNull()
			continue
		}
		// Versions after the position's (the position's own too, unless it is an initial
		// snapshot being read: its commits are in that snapshot).
		unread := latest - *c.Version + 1
		if c.Initial {
			unread--
		}
		b.Field(7).(*array.Int64Builder).Append(max(unread, 0))
	}
	return b.NewRecordBatch(), nil
}

// otherRows is the section of other sources: the positions as recorded (JSON text).
func otherRows(mem memory.Allocator, srcs []sourceStage) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "stage", Type: arrow.BinaryTypes.String},
		{Name: "tool", Type: arrow.BinaryTypes.String},
		{Name: "committed_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "committed", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "wal_epoch", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "wal", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	str := func(f array.Builder, raw json.RawMessage) {
		if raw == nil {
			f.AppendNull()
		} else {
			f.(*array.StringBuilder).Append(string(raw))
		}
	}
	for _, s := range srcs {
		b.Field(0).(*array.StringBuilder).Append(s.name)
		b.Field(1).(*array.StringBuilder).Append(s.tool)
		b.Field(2).(*array.Uint64Builder).Append(s.committed)
		str(b.Field(3), s.committedPos)
		b.Field(4).(*array.Uint64Builder).Append(s.wal)
		str(b.Field(5), s.walPos)
	}
	return b.NewRecordBatch()
}
