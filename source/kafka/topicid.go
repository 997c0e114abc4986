package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// learnTopicIDs asks the brokers for the topic IDs (KIP-516) of topics and keeps them in s.ids,
// for the positions the source writes (Position.TopicIDs). A topic the brokers do not know, or
// give no ID (a broker before Kafka 2.8), is left without one.
func (s *Source) learnTopicIDs(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("topic IDs: %w", err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || kerr.ErrorForCode(t.ErrorCode) != nil || TopicID(t.TopicID).IsZero() {
			continue
		}
		s.ids[*t.Topic] = TopicID(t.TopicID)
	}
	return nil
}

// checkTopicIDs compares the topic IDs of the checkpoint's position with the brokers' for the
// topics about to be read (tps). A topic whose ID changed was deleted and re-created since the
// checkpoint: its offsets start again, so the checkpoint's offsets point into another log and
// would silently skip the new topic's first records. That is data loss: with --on-data-loss
// fail (the default) a *DataLossError naming the topic and both IDs; with earliest or latest
// the topic's partitions start at the new log's start or end (pos.Offsets is changed to the
// OffsetEarliest / OffsetLatest marks that resolveStarts reads), with a warning. A position
// without IDs (written before they were recorded) is not checked.
func (s *Source) checkTopicIDs(ctx context.Context, tps []TP, pos Position) error {
	if err := s.learnTopicIDs(ctx, topicsOf(tps)); err != nil {
		return s.cfg.Conn.Explain(err)
	}
	for _, topic := range topicsOf(tps) {
		was, now := pos.TopicIDs[topic], s.ids[topic]
		if was.IsZero() || now.IsZero() || was == now {
			continue
		}
		e := &DataLossError{TP: TP{Topic: topic, Partition: -1}, CheckpointTopicID: was, TopicID: now, Offset: -1}
		if s.env != nil && s.env.Dir != nil {
			e.CheckpointPath = s.env.Dir.Path
		}
		mark, at := int64(OffsetEarliest), "the new topic's earliest offset"
		switch orDefault(s.cfg.OnDataLoss, DataLossFail) {
		case DataLossFail:
			return e
		case DataLossLatest:
			mark, at = OffsetLatest, "the new topic's end"
		}
		var old []any
		for _, tp := range pos.Offsets.Sorted() {
			if tp.Topic == topic {
				old = append(old, tp.Partition, pos.Offsets[tp])
				delete(pos.Offsets, tp)
			}
		}
		for _, tp := range tps {
			if tp.Topic == topic {
				pos.Offsets[tp] = mark
			}
		}
		s.log.Warn("DATA LOSS: the topic was deleted and re-created since the checkpoint (its topic ID changed); "+
			"the checkpoint's offsets belong to the old topic and are dropped, as --on-data-loss says",
			"topic", topic, "checkpoint_topic_id", was.String(), "topic_id", now.String(), "checkpoint_offsets", fmt.Sprint(old),
			"on_data_loss", s.cfg.OnDataLoss, "continue_at", at)
	}
	return nil
}

// checkLimitIDs checks a replayed epoch's end position (lp, from the offsets WAL) against the
// topic IDs being read: an epoch read from a topic since deleted and re-created cannot be
// replayed (its offsets belong to the old log). With --on-data-loss fail that is a
// *DataLossError; otherwise the topic's partitions leave the epoch (they stay where
// checkTopicIDs put them) with a warning.
func (s *Source) checkLimitIDs(lp Position) error {
	for topic, was := range lp.TopicIDs {
		now := s.ids[topic]
		if was.IsZero() || now.IsZero() || was == now {
			continue
		}
		if orDefault(s.cfg.OnDataLoss, DataLossFail) == DataLossFail {
			return &DataLossError{TP: TP{Topic: topic, Partition: -1}, Offset: -1, CheckpointTopicID: was, TopicID: now}
		}
		for tp := range lp.Offsets {
			if tp.Topic == topic {
				delete(lp.Offsets, tp)
			}
		}
		s.log.Warn("DATA LOSS: an uncommitted epoch read the topic before it was deleted and re-created; its records of the topic are not replayed, as --on-data-loss says",
			"topic", topic, "checkpoint_topic_id", was.String(), "topic_id", now.String(), "on_data_loss", s.cfg.OnDataLoss)
	}
	return nil
}

// recreated is the message of a DataLossError for a re-created topic.
func (e *DataLossError) recreated() string {
	return fmt.Sprintf("read-kafka: data loss on topic %s: the topic was deleted and re-created since the checkpoint: "+
		"the checkpoint's offsets belong to topic ID %s, the topic now has topic ID %s, whose offsets start again "+
		"(continuing at the checkpoint's offsets would skip the new topic's first records without a word); "+
		"--on-data-loss earliest reads the new topic from its earliest offset, --on-data-loss latest from its end",
		e.TP.Topic, e.CheckpointTopicID, e.TopicID)
}
