package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// Consumer-group mode (--consumer-group, docs/protocol.md §13). The members of a group share
// the topics' partitions by Kafka's group protocol with the cooperative-sticky balancer; each
// partition's progress is a txn action in the progress table (appId GroupInfo.TxnAppID, version =
// the last offset consumed), written by write-delta in the commit of the partition's rows.
//
// The group callbacks run on franz-go's goroutines; they hand their work to the read loop
// (Read) through groupState.events, and a revocation waits until the loop has cut the epoch
// and seen the revoked partitions' txn in the table. Assignments are computed in
// AdjustFetchOffsetsFn, before franz-go fetches the partitions, and poll applies the events
// before it files the fetched records, so no record of a partition arrives before the loop
// knows it.

// DefaultRevokeWait is the default Config.RevokeWait.
const DefaultRevokeWait = 30 * time.Second

// groupState is the consumer-group side of a Source.
type groupState struct {
	table *delta.Table
	info  codec.GroupInfo

	mu     sync.Mutex
	events []groupEvent // from the callbacks, applied by the read loop

	joined   bool          // the first assignment is applied
	cutNow   bool          // a revocation needs the epoch cut now
	cutting  []*revocation // revocations waiting for the cut
	waiting  []*revocation // cut; waiting for the table to hold their txns
	checked  time.Time     // when waiting revocations last read the table
	closing  chan struct{} // closed by Close: callbacks stop waiting
	closeMu  sync.Once
	failed   bool // Read returned an error: Close does not wait for commits
	assigned int  // partitions assigned over the run (for the log)
}

// groupEvent is one callback's news: partitions assigned (with their positions), revoked
// (done is closed once they are released) or lost.
type groupEvent struct {
	assigned []*part
	revoked  []TP
	done     chan struct{}
	lost     bool
	err      error
}

// revocation is a set of revoked partitions on its way out: the txn versions the table must
// reach before done is closed.
type revocation struct {
	parts    []*part
	want     map[TP]int64
	done     chan struct{}
	deadline time.Time
}

func (s *Source) grouped() bool { return s.g != nil }

// appID is the txn appId of tp in the group's flow.
func (s *Source) appID(tp TP) string { return s.g.info.TxnAppID(tp.String()) }

// checkGroupConfig validates the options of consumer-group mode (usage errors).
func checkGroupConfig(cfg *Config) error {
	switch {
	case cfg.ProgressTable == nil:
		return stage.Usagef("--consumer-group needs --progress-table: the Delta table write-delta writes, whose txn actions hold the group's progress")
	case len(cfg.Topics) == 0:
		return stage.Usagef("--consumer-group reads the topics given with -t (not --pattern or --assign)")
	case cfg.Group != "":
		return stage.Usagef("--consumer-group and --group cannot be combined: --group commits a checkpointed run's offsets for monitoring; a group's progress is in --progress-table")
	case cfg.MaxRecordsPerEpoch > 0:
		return stage.Usagef("--max-records-per-epoch is not supported with --consumer-group yet")
	case cfg.BadRecords != "":
		return stage.Usagef("--bad-records-output is not supported with --consumer-group yet (its file is exactly-once only with a checkpoint)")
	case cfg.AppID != "" && len(cfg.Topics) != 1:
		return stage.Usagef("--app-id names the txn appIds <app>-<partition>, which do not name the topic: give exactly one -t topic (got %d)", len(cfg.Topics))
	}
	if cfg.Flow == "" {
		cfg.Flow = cfg.ConsumerGroup
	}
	if cfg.RevokeWait <= 0 {
		cfg.RevokeWait = DefaultRevokeWait
	}
	return nil
}

// checkGroupSpecs refuses --start and --until forms group mode does not support.
func (s *Source) checkGroupSpecs() error {
	if s.start.Kind != StartEarliest && s.start.Kind != StartLatest {
		return stage.Usagef("--consumer-group: --start must be earliest or latest (where a partition without a txn in the progress table starts)")
	}
	if s.until.Kind != UntilNever && s.until.Kind != UntilNow {
		return stage.Usagef("--consumer-group: --until must be never or now (each partition's end is fixed when it is assigned)")
	}
	return nil
}

// groupOpts are the franz-go options of group mode.
func (s *Source) groupOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(s.cfg.ConsumerGroup),
		kgo.ConsumeTopics(s.cfg.Topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {}),
		kgo.AdjustFetchOffsetsFn(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
	}
	if d := s.cfg.SessionTimeout; d > 0 {
		opts = append(opts, kgo.SessionTimeout(d), kgo.HeartbeatInterval(max(d/10, 100*time.Millisecond)))
	}
	return opts
}

// openGroup prepares group mode at Open: the progress table and the schema's SchemaGroup.
func (s *Source) openGroup() {
	s.g.table = delta.OpenTable(s.cfg.ProgressTable, s.env.Mem)
	s.g.info = codec.GroupInfo{Group: s.cfg.ConsumerGroup, Flow: s.cfg.Flow, AppID: s.cfg.AppID, Table: s.cfg.ProgressTable.Location()}
	s.g.closing = make(chan struct{})
	s.schema = codec.WithGroup(s.schema, s.g.info)
}

// txns reads the progress table's txn versions of tps (absent: no txn, or no table yet).
func (s *Source) txns(ctx context.Context, tps []TP) (map[TP]int64, error) {
	snap, err := s.g.table.Snapshot(ctx)
	if errors.Is(err, delta.ErrNotATable) {
		return map[TP]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read-kafka: progress table %s: %w", s.g.info.Table, err)
	}
	out := map[TP]int64{}
	for _, tp := range tps {
		if v, ok := snap.TxnVersion(s.appID(tp)); ok {
			out[tp] = v
		}
	}
	return out, nil
}

// onAssigned (franz-go's AdjustFetchOffsetsFn) positions newly assigned partitions after
// their txn in the progress table (else at --start) and fixes their --until now end.
func (s *Source) onAssigned(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var tps []TP
	for t, ps := range offsets {
		for p := range ps {
			tps = append(tps, TP{t, p})
		}
	}
	sortTPs(tps)
	parts, err := s.assignParts(ctx, tps)
	if err != nil {
		// A context canceled under the lookup means the assignment is void already: the
		// member is leaving (a member of an --until now run that is done) or a new rebalance
		// began, which assigns again. Only other errors fail the run (a member of `run
		// --parallel` exited 1 with "list stable offsets: … context canceled" as it left).
		if ctx.Err() == nil {
			s.post(groupEvent{err: err})
		}
		return nil, err
	}
	out := map[string]map[int32]kgo.Offset{}
	for _, p := range parts {
		if out[p.tp.Topic] == nil {
			out[p.tp.Topic] = map[int32]kgo.Offset{}
		}
		out[p.tp.Topic][p.tp.Partition] = kgo.NewOffset().At(p.pos).WithEpoch(-1)
	}
	s.post(groupEvent{assigned: parts})
	return out, nil
}

// assignParts builds the parts of newly assigned partitions.
func (s *Source) assignParts(ctx context.Context, tps []TP) ([]*part, error) {
	if len(tps) == 0 {
		return nil, nil
	}
	octx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	txns, err := s.txns(octx, tps)
	if err != nil {
		return nil, err
	}
	rs, err := s.ranges(octx, tps)
	if err != nil {
		return nil, s.cfg.Conn.Explain(err)
	}
	reset, err := s.checkGroupTopicIDs(octx, tps, txns)
	if err != nil {
		return nil, err
	}
	var out []*part
	for _, tp := range tps {
		r := rs[tp]
		p := &part{tp: tp, end: -1, hwm: r.end, txn: delta.NoTxn}
		if v, ok := txns[tp]; ok && reset[tp.Topic] {
			p.txn, p.pos = v, r.start // the next commit still compares with the old txn
			if orDefault(s.cfg.OnDataLoss, DataLossFail) == DataLossLatest {
				p.pos = s.stableEnd(r)
			}
		} else if ok {
			p.txn, p.pos = v, v+1
			if err := s.checkRange(p, r); err != nil {
				return nil, err
			}
		} else if s.start.Kind == StartLatest {
			p.pos = s.stableEnd(r)
		} else {
			p.pos = r.start
		}
		if s.until.Kind == UntilNow {
			p.end = max(s.stableEnd(r), p.pos)
		}
		p.epochStart, p.startTxn, p.quietAt = p.pos, p.txn, time.Now()
		out = append(out, p)
	}
	return out, nil
}

// onRevoked hands revoked partitions to the read loop and waits until it released them
// (their last epoch is in the table, or --revoke-wait passed), or the source closes.
func (s *Source) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	var tps []TP
	for t, ps := range revoked {
		for _, p := range ps {
			tps = append(tps, TP{t, p})
		}
	}
	if len(tps) == 0 {
		return
	}
	select {
	case <-s.g.closing:
		return
	default:
	}
	sortTPs(tps)
	done := make(chan struct{})
	s.post(groupEvent{revoked: tps, done: done})
	select {
	case <-done:
	case <-s.g.closing:
	case <-ctx.Done():
	}
}

// onLost tells the read loop that the member lost its partitions.
func (s *Source) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	select {
	case <-s.g.closing:
		return
	default:
	}
	s.post(groupEvent{lost: true})
}

func (s *Source) post(ev groupEvent) {
	s.g.mu.Lock()
	s.g.events = append(s.g.events, ev)
	s.g.mu.Unlock()
}

// applyGroupEvents applies the callbacks' news in the read loop: it adds assigned partitions,
// stops reading revoked ones (asking for a cut when they moved in this epoch) and fails when
// the member lost its partitions.
func (s *Source) applyGroupEvents() error {
	if s.g == nil {
		return nil
	}
	s.g.mu.Lock()
	evs := s.g.events
	s.g.events = nil
	s.g.mu.Unlock()
	for _, ev := range evs {
		switch {
		case ev.err != nil:
			return ev.err
		case ev.lost:
			return fmt.Errorf("read-kafka: consumer group %s: this member lost its partitions (session timeout, or fenced by the group); "+
				"stopping without committing more of them: restart it to rejoin the group", s.cfg.ConsumerGroup)
		case ev.revoked != nil:
			s.revoke(ev)
		default:
			for _, p := range ev.assigned {
				if old := s.parts[p.tp]; old != nil {
					s.remove([]*part{old})
				}
				s.add(p)
				s.g.assigned++
				txn := "none"
				if p.txn != delta.NoTxn {
					txn = fmt.Sprint(p.txn)
				}
				s.log.Info("partition assigned", "topic", p.tp.Topic, "partition", p.tp.Partition, "from", p.pos, "txn", txn, "end", p.end)
			}
			s.g.joined = true
			s.updateLag()
		}
	}
	return nil
}

// revoke stops reading the revoked partitions of ev. When one moved in the current epoch, the
// epoch is cut first; then they wait for the txns of what this run read of them (an epoch
// cut earlier may still be committing), and are released once the table holds them.
func (s *Source) revoke(ev groupEvent) {
	rv := &revocation{done: ev.done}
	for _, tp := range ev.revoked {
		p := s.parts[tp]
		if p == nil {
			continue
		}
		p.revoked, p.pending = true, nil
		rv.parts = append(rv.parts, p)
	}
	moved := false
	for _, p := range rv.parts {
		if p.pos != p.epochStart || s.cur == p {
			moved = true
		}
	}
	names := make([]string, len(rv.parts))
	for i, p := range rv.parts {
		names[i] = p.tp.String()
	}
	// which: the rebalance benchmark (make bench, group) pairs each with the next owner's
	// "partition assigned" line, the pause of a partition that moves.
	s.log.Info("partitions revoked", "partitions", len(rv.parts), "which", strings.Join(names, ","), "cut_epoch", moved)
	if !moved {
		s.awaitTable(rv)
		return
	}
	s.g.cutNow = true
	s.g.cutting = append(s.g.cutting, rv)
}

// awaitTable makes rv wait for the table to hold the txn of everything this run read of its
// partitions (checkReleases), at most --revoke-wait.
func (s *Source) awaitTable(rv *revocation) {
	rv.want = readTxns(rv.parts)
	rv.deadline = time.Now().Add(s.cfg.RevokeWait)
	s.g.waiting = append(s.g.waiting, rv)
	s.g.checked = time.Time{} // look at once
}

// release removes a revocation's partitions and lets its callback return.
func (s *Source) release(rv *revocation) {
	s.remove(rv.parts)
	if rv.done != nil {
		close(rv.done)
	}
}

// remove forgets partitions (resuming a paused fetch, so that a later assignment fetches).
func (s *Source) remove(ps []*part) {
	gone := map[TP]bool{}
	for _, p := range ps {
		if p.paused {
			s.cl.ResumeFetchPartitions(map[string][]int32{p.tp.Topic: {p.tp.Partition}})
			p.paused = false
		}
		delete(s.parts, p.tp)
		gone[p.tp] = true
	}
	out := s.order[:0]
	for _, p := range s.order {
		if !gone[p.tp] {
			out = append(out, p)
		}
	}
	clear(s.order[len(out):])
	s.order = out
	if s.cur != nil && gone[s.cur.tp] {
		s.cur = nil
	}
	s.updateLag()
}

// BarrierOffsets reports the progress of every partition that moved since the last barrier
// (stage.PartitionProgress): {txn: the version the table holds for it before this epoch,
// next: its position}; the next epoch then follows txn = next − 1.
func (s *Source) BarrierOffsets(uint64) string {
	if s.g == nil {
		return ""
	}
	m := map[string]codec.OffsetProgress{}
	for _, p := range s.order {
		if p.pos == p.epochStart {
			continue
		}
		e := codec.OffsetProgress{Next: p.pos}
		if p.txn != delta.NoTxn {
			v := p.txn
			e.Txn = &v
		}
		m[p.tp.String()] = e
		p.txn, p.epochStart = p.pos-1, p.pos
	}
	return codec.FormatOffsets(m)
}

// groupCut follows every cut: revocations waiting for it now wait for the table.
func (s *Source) groupCut() {
	if s.g == nil {
		return
	}
	s.g.cutNow = false
	for _, rv := range s.g.cutting {
		s.awaitTable(rv)
	}
	s.g.cutting = nil
}

// checkReleases releases the waiting revocations whose txns the table holds, or whose
// --revoke-wait passed (with a warning: the next owner may then read their last epoch
// again, and the table's compare-and-set lets only one of the two commits through).
func (s *Source) checkReleases(ctx context.Context) error {
	if s.g == nil || len(s.g.waiting) == 0 || time.Since(s.g.checked) < 100*time.Millisecond {
		return nil
	}
	s.g.checked = time.Now()
	var tps []TP
	for _, rv := range s.g.waiting {
		for _, p := range rv.parts {
			tps = append(tps, p.tp)
		}
	}
	have, err := s.txns(ctx, tps)
	if err != nil {
		return err
	}
	left := s.g.waiting[:0]
	for _, rv := range s.g.waiting {
		switch {
		case reached(have, rv.want):
			s.release(rv)
		case time.Now().After(rv.deadline):
			s.log.Warn("revoked partitions released before their last epoch reached the progress table (--revoke-wait passed); the next owner may read it again, and only one of the two commits is accepted",
				"partitions", len(rv.parts), "waited", s.cfg.RevokeWait)
			s.release(rv)
		default:
			left = append(left, rv)
		}
	}
	s.g.waiting = left
	return nil
}

// awaitOwnCommits waits, at Close, until the table holds the txn of every partition this run
// moved (bounded by --revoke-wait), so that leaving the group hands them over up to date.
func (s *Source) awaitOwnCommits() {
	want := readTxns(s.order)
	if len(want) == 0 {
		return
	}
	tps := make([]TP, 0, len(want))
	for tp := range want {
		tps = append(tps, tp)
	}
	deadline := time.Now().Add(s.cfg.RevokeWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		have, err := s.txns(ctx, tps)
		cancel()
		if err == nil && reached(have, want) {
			return
		}
		if time.Now().After(deadline) {
			s.log.Warn("leaving the consumer group before the last epoch reached the progress table (--revoke-wait passed)", "waited", s.cfg.RevokeWait)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readTxns are the txn versions the table must reach for what this run read of ps.
func readTxns(ps []*part) map[TP]int64 {
	want := map[TP]int64{}
	for _, p := range ps {
		if p.txn != p.startTxn {
			want[p.tp] = p.txn
		}
	}
	return want
}

// reached reports whether the txn versions in have reach every one of want.
func reached(have, want map[TP]int64) bool {
	for tp, v := range want {
		if h, ok := have[tp]; !ok || h < v {
			return false
		}
	}
	return true
}

// groupDone reports whether a bounded group member is done: it joined, releases nothing, and
// every partition it holds reached its end.
func (s *Source) groupDone() bool {
	return s.g.joined && len(s.g.waiting) == 0 && len(s.g.cutting) == 0 && !s.g.cutNow
}

// closeGroup waits for the member's last commits (unless it failed) and stops the
// callbacks from waiting, before the client leaves the group.
func (s *Source) closeGroup() {
	if s.g == nil || s.g.closing == nil {
		return
	}
	if !s.g.failed {
		s.awaitOwnCommits()
	}
	s.g.closeMu.Do(func() { close(s.g.closing) })
	for _, rv := range append(s.g.cutting, s.g.waiting...) {
		close(rv.done)
	}
	s.g.cutting, s.g.waiting = nil, nil
}

// topicIDRecord is the progress table's object that names the topic ID (KIP-516) whose
// offsets the flow's txn versions of topic count, _streamkit/groups/<flow>/topics/<topic>.json:
// a txn action has no room for it, and without it a topic deleted and re-created with a
// longer log would resume at the old offsets and skip the new topic's first records silently.
func (s *Source) topicIDRecord(topic string) string {
	return "_streamkit/groups/" + url.PathEscape(s.g.info.Flow) + "/topics/" + url.PathEscape(topic) + ".json"
}

type topicIDFile struct {
	Topic   string `json:"topic"`
	TopicID string `json:"topic_id"`
}

// checkGroupTopicIDs compares, for the topics of newly assigned partitions tps, the brokers'
// topic ID with the one the progress table records (topicIDRecord; the first member to see a
// topic records it, put-if-absent). A changed ID means the topic was deleted and re-created
// since the txn versions of txns were committed: with --on-data-loss fail (the default) a
// *DataLossError; with earliest or latest the topic's partitions start at the new log's start
// or end (listed in the returned set; their txn stays the one to compare the next commit
// with) and the record names the new ID, with a warning. A broker without topic IDs is not
// checked.
func (s *Source) checkGroupTopicIDs(ctx context.Context, tps []TP, txns map[TP]int64) (map[string]bool, error) {
	if err := s.learnTopicIDs(ctx, topicsOf(tps)); err != nil {
		return nil, s.cfg.Conn.Explain(err)
	}
	st := s.g.table.Store()
	reset := map[string]bool{}
	for _, topic := range topicsOf(tps) {
		now := s.ids[topic]
		if now.IsZero() {
			continue
		}
		name := s.topicIDRecord(topic)
		mine, _ := json.Marshal(topicIDFile{Topic: topic, TopicID: now.String()})
		var rec topicIDFile
		b, err := st.ReadFile(ctx, name)
		if errors.Is(err, fs.ErrNotExist) {
			if err = st.PutIfAbsent(ctx, name, mine); err == nil {
				continue
			} else if errors.Is(err, storage.ErrExist) {
				b, err = st.ReadFile(ctx, name)
			}
		}
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			return nil, fmt.Errorf("read-kafka: progress table %s: topic ID of %s: %w", s.g.info.Table, topic, err)
		}
		was, err := ParseTopicID(rec.TopicID)
		if err != nil || was == now {
			continue
		}
		held := false
		for tp := range txns {
			held = held || tp.Topic == topic
		}
		if held {
			e := &DataLossError{TP: TP{Topic: topic, Partition: -1}, Offset: -1, CheckpointTopicID: was, TopicID: now, CheckpointPath: s.g.info.Table}
			if orDefault(s.cfg.OnDataLoss, DataLossFail) == DataLossFail {
				return nil, e
			}
			reset[topic] = true
			s.log.Warn("DATA LOSS: the topic was deleted and re-created since the progress table's txn versions were committed (its topic ID changed); "+
				"they count the old topic's offsets and are not resumed from, as --on-data-loss says",
				"topic", topic, "table_topic_id", was.String(), "topic_id", now.String(), "on_data_loss", s.cfg.OnDataLoss)
		}
		if err := st.WriteFile(ctx, name, mine); err != nil {
			return nil, fmt.Errorf("read-kafka: progress table %s: record the topic ID of %s: %w", s.g.info.Table, topic, err)
		}
	}
	return reset, nil
}
