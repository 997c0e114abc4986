package statedump

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// groupOffsets shows a consumer group's progress kept in a Delta table (docs/protocol.md §13):
// one row per txn appId "<flow>-<topic>-<partition>" of cfg.Flow (or "<app>-<partition>" of
// cfg.AppID, partitions of cfg.Topic), its committed offset being
// the txn version + 1 (the next offset to read) and its committed_epoch the table version.
// With --lag the brokers' log ranges and the lag are added as for a checkpoint, and
// partitions of those topics without a txn yet show as "not in checkpoint".
func groupOffsets(ctx context.Context, cfg Config, path string, out io.Writer) error {
	store, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	snap, err := delta.OpenTable(store, cfg.Mem).Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	kind, id, prefix, form := "flow", cfg.Flow, cfg.Flow+"-", "<topic>-<partition>"
	if cfg.AppID != "" {
		kind, id, prefix, form = "app id", cfg.AppID, cfg.AppID+"-", "<partition>"
	}
	var rows []kafkaRow
	topics := map[string]bool{}
	for app, tx := range snap.Txns() {
		rest, ok := strings.CutPrefix(app, prefix)
		topic, part := cfg.Topic, rest
		if cfg.AppID == "" {
			i := strings.LastIndexByte(rest, '-')
			if i <= 0 {
				continue
			}
			topic, part = rest[:i], rest[i+1:]
		}
		if !ok {
			continue
		}
		p, err := strconv.ParseInt(part, 10, 32)
		if err != nil || p < 0 {
			continue
		}
		next := tx.Version + 1
		tp := kafka.TP{Topic: topic, Partition: int32(p)}
		rows = append(rows, kafkaRow{stage: "table", tp: tp, committedEpoch: uint64(snap.Version()), committed: &next,
			walEpoch: uint64(snap.Version()), wal: &next})
		topics[tp.Topic] = true
	}
	if len(rows) == 0 {
		return stage.Usagef("state-dump: table %s holds no txn of %s %q (appIds %s%s)", store.Location(), kind, id, prefix, form)
	}
	var ranges map[kafka.TP]logRange
	var missing map[string]bool
	var ids map[string]kafka.TopicID
	if cfg.Lag {
		if ranges, missing, ids, err = brokerRanges(ctx, cfg.Conn, cfg.Timeout, sortedKeys(topics)); err != nil {
			return err
		}
		have := map[kafka.TP]bool{}
		for _, r := range rows {
			have[r.tp] = true
		}
		for tp := range ranges {
			if !have[tp] {
				rows = append(rows, kafkaRow{stage: "table", tp: tp, committedEpoch: uint64(snap.Version()), walEpoch: uint64(snap.Version())})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].tp, rows[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	b := array.NewRecordBuilder(cfg.Mem, kafkaSchema(cfg.Lag))
	defer b.Release()
	for _, r := range rows {
		appendKafkaRow(b, r)
		if cfg.Lag {
			appendKafkaLag(b, r, ranges, missing, ids)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if cfg.Format == FormatTable {
		fmt.Fprintln(out, styles(cfg.Color).title.Render(fmt.Sprintf("Kafka positions of %s %s in table %s, version %d (offsets: the next offset to read)",
			kind, id, store.Location(), snap.Version())))
	}
	return emit(cfg, rec, out)
}
