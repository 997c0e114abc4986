package parallel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSnapshot(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`{"time":"2026-12-02T05:08:49Z","stage":"read-kafka","records_in":5,"records_out":5,"rate_in":1.5,"epoch":2,"committed":1,"partitions":3,"lag":7,"bad_records":0}`, true},
		{`{"time":"2026-12-02T05:08:49Z","level":"INFO","msg":"records_in counted","stage":"read-kafka"}`, false}, // a JSON log line
		{`time=2026-12-02T05:08:49Z level=INFO msg="records_in":1`, false},
		{`{"stage":"x","records_in":`, false},
	} {
		s, ok := parseSnapshot([]byte(c.line))
		if ok != c.ok {
			t.Errorf("parseSnapshot(%s) = %v, want %v", c.line, ok, c.ok)
		}
		if ok && (s.Stage != "read-kafka" || *s.RecordsIn != 5 || *s.Partitions != 3 || *s.Lag != 7 || s.Committed != 1) {
			t.Errorf("parseSnapshot(%s) = %+v", c.line, s)
		}
	}
}

func TestWithMember(t *testing.T) {
	for in, want := range map[string]string{
		`{"stage":"a","records_in":1}`: `{"member":2,"stage":"a","records_in":1}`,
		`{}`:                           `{"member":2}`,
	} {
		got := string(withMember([]byte(in), 2))
		if got != want+"\n" {
			t.Errorf("withMember(%s) = %q, want %q", in, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("withMember(%s) = %q is not JSON", in, got)
		}
	}
}

func TestMemberEnv(t *testing.T) {
	env := memberEnv([]string{"A=1", "PATH=/usr/bin", "STREAMKIT_MEMBER=9"}, 1, 3)
	exe, _ := os.Executable()
	for _, want := range []string{"A=1", "STREAMKIT_MEMBER=1", "STREAMKIT_MEMBERS=3", "STREAMKIT_PROGRESS=json",
		"PATH=" + filepath.Dir(exe) + string(os.PathListSeparator) + "/usr/bin"} {
		if !slices.Contains(env, want) {
			t.Errorf("memberEnv lacks %q: %v", want, env)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(env), func(s string) bool { return !strings.HasPrefix(s, "STREAMKIT_MEMBER=") })); n != 1 {
		t.Errorf("memberEnv has %d STREAMKIT_MEMBER entries, want 1: %v", n, env)
	}
	// A progress mode the user set is kept.
	if env := memberEnv([]string{"STREAMKIT_PROGRESS=off"}, 0, 1); slices.Contains(env, "STREAMKIT_PROGRESS=json") || !slices.Contains(env, "STREAMKIT_PROGRESS=off") {
		t.Errorf("memberEnv overrode STREAMKIT_PROGRESS=off: %v", env)
	}
}

func TestTotals(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	s := &supervisor{members: []*member{
		{stages: []*stageStat{{name: "read-kafka", snap: snapshot{Stage: "read-kafka", RecordsIn: i(10), RateIn: 5, Partitions: i(2), Lag: i(3)}}}},
		{stages: []*stageStat{{name: "read-kafka", snap: snapshot{Stage: "read-kafka", RecordsIn: i(20), RateIn: 7, Partitions: i(1), Lag: i(4)}}}},
		{exited: true, stages: []*stageStat{{name: "read-kafka", snap: snapshot{Stage: "read-kafka", RecordsIn: i(30), RateIn: 9, Partitions: i(5)}}}},
	}}
	tot := s.totals()
	if len(tot) != 1 || *tot[0].RecordsIn != 60 || tot[0].RateIn != 12 || *tot[0].Partitions != 3 || *tot[0].Lag != 7 {
		t.Errorf("totals = %+v: want 60 records, 12/s, 3 partitions, lag 7 (an exited member counts in records only)", tot)
	}
}
