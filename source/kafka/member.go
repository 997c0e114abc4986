package kafka

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Member is a static share of the partitions (--member I/N): member I of N reads partition p
// of every topic it reads exactly when p mod N = I. The rule depends on nothing but p, so the
// members need no coordination, each partition has exactly one member whatever the topic's
// partition count, and a partition added later goes to the member the rule names without
// moving any other (docs/protocol.md §13, "Static members"). The zero Member (N = 0) is no
// member: every partition.
type Member struct{ I, N int32 }

// ParseMember parses --member "I/N" (0 ≤ I < N); the errors name the flag.
func ParseMember(s string) (Member, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.ParseInt(strings.TrimSpace(is), 10, 32)
	n, err2 := strconv.ParseInt(strings.TrimSpace(ns), 10, 32)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Member{}, fmt.Errorf("--member %q: want I/N, member I of N (e.g. 0/3, 1/3 and 2/3 for three members)", s)
	case n < 1:
		return Member{}, fmt.Errorf("--member %q: the member count N must be ≥ 1", s)
	case i < 0 || i >= n:
		return Member{}, fmt.Errorf("--member %q: the member index I must be in 0..%d (members are numbered from 0)", s, n-1)
	}
	return Member{I: int32(i), N: int32(n)}, nil
}

// On reports whether m is set (--member given).
func (m Member) On() bool { return m.N > 0 }

// Has reports whether partition p is member m's: p mod N = I (always true for no member).
func (m Member) Has(p int32) bool { return m.N == 0 || p%m.N == m.I }

// String is the "I/N" form (the checkpoint's "member" option); "" for no member.
func (m Member) String() string {
	if m.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", m.I, m.N)
}

// filter keeps the partitions of tps that are m's.
func (m Member) filter(tps []TP) []TP {
	if !m.On() {
		return tps
	}
	out := tps[:0:0]
	for _, tp := range tps {
		if m.Has(tp.Partition) {
			out = append(out, tp)
		}
	}
	return out
}

// tpList is tps as "topic/p,topic/q" for a log line.
func tpList(tps []TP) string {
	names := make([]string, len(tps))
	for i, tp := range tps {
		names[i] = tp.String()
	}
	return strings.Join(names, ",")
}

// warnEmpty warns, per topic of all, when none of its partitions is in mine (m's share): a
// topic with fewer partitions than members leaves some members without any until partitions
// are added.
func (m Member) warnEmpty(log *slog.Logger, all, mine []TP) {
	count := map[string]int{}
	for _, tp := range all {
		count[tp.Topic]++
	}
	for _, tp := range mine {
		delete(count, tp.Topic)
	}
	for _, t := range topicsOf(all) {
		if n, ok := count[t]; ok {
			log.Warn("this member reads no partition of the topic: it has fewer partitions than --member's index needs", "topic", t, "partitions", n, "member", m.String())
		}
	}
}
