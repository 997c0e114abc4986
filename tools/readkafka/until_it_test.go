package readkafka_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// untilRecords are records from..to-1 of the window test: id, key k0..k8, event times over
// 6 hours (increasing with id), partition id % 3.
func untilRecords(topic string, from, to, total int) ([]*kgo.Record, string) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	var nd strings.Builder
	for i := from; i < to; i++ {
		ts := t0.Add(time.Duration(i) * 6 * time.Hour / time.Duration(total))
		v := fmt.Sprintf(`{"id":%d,"k":"k%d","ts":%q}`, i, i%9, ts.Format(time.RFC3339Nano))
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(v)})
		nd.WriteString(v + "\n")
	}
	return recs, nd.String()
}

// windowCounts runs script (sh; $SK is the binary) and returns its printed window rows as
// "k window_start" → n, failing t unless it exits 0.
func windowCounts(t *testing.T, script string, env ...string) (map[string]int64, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "set -e; "+script)
	cmd.Env = append(append(os.Environ(), "SK="+peertest.Binary(t)), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, errb.String())
	}
	got := map[string]int64{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var row struct {
			K     string `json:"k"`
			Start string `json:"window_start"`
			N     int64  `json:"n"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %q: %v", script, sc.Text(), err)
		}
		got[row.K+" "+row.Start] += row.N
	}
	return got, errb.String()
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestUntilNowWindowKeepsEveryRow (#24): read-kafka --until now | window tumbling | print
// without checkpoints printed counts summing to 5,000 of 6,000 records: read-kafka ended with
// end=pause although it keeps no checkpoint, and the window dropped its open windows (the last
// hour of each key). Now a source without a checkpoint ends with end=final (--end's default),
// and a window without a checkpoint that receives end=pause fires its open windows as at final.
// The counts sum to 6,000: plain, from NDJSON files via read-files, and with an explicit
// --end pause (the window fires at pause, saying why). With checkpoints on every stage,
// a run, more records, a second run, give the same windows as one run over all the records.
func TestUntilNowWindowKeepsEveryRow(t *testing.T) {
	c := kafkatest.NewReal(t)
	const total = 6000
	topic := c.Topic(t, "until-window", 3, nil)
	recs, nd := untilRecords(topic, 0, total, total)
	c.Produce(t, recs...)
	c.WaitStable(t, topic)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.ndjson"), []byte(nd[:len(nd)/2+strings.Index(nd[len(nd)/2:], "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.ndjson"), []byte(nd[len(nd)/2+strings.Index(nd[len(nd)/2:], "\n")+1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	rk := fmt.Sprintf(`"$SK" --progress off read-kafka -b %s -t %s --start earliest --until now --value-format json `+
		`--value-schema 'id BIGINT, k STRING, ts TIMESTAMP' --columns 'value.*,topic,partition,offset'`, strings.Join(c.Brokers, ","), topic)
	win := ` | "$SK" --progress off window tumbling --size 1h --time ts --key k --agg 'count as n' | "$SK" --progress off print --format json`
	for _, s := range []struct{ name, script string }{
		{"read-kafka", rk + win},
		{"read-kafka --max-records-per-epoch 700", rk + " --max-records-per-epoch 700" + win},
		{"read-kafka --end pause", rk + " --end pause" + win},
		{"read-files", fmt.Sprintf(`"$SK" --progress off read-files --schema 'id BIGINT, k STRING, ts TIMESTAMP' '%s/*.ndjson'`, dir) + win},
	} {
		got, stderr := windowCounts(t, s.script)
		if n := sum(got); n != total {
			t.Errorf("%s: counts sum to %d, want %d\n%s", s.name, n, total, stderr)
		}
		if len(got) != 9*6 {
			t.Errorf("%s: %d windows, want 54", s.name, len(got))
		}
		if s.name == "read-kafka --end pause" && !strings.Contains(stderr, "keeps no checkpoint") {
			t.Errorf("%s: no log line saying why the windows fired at end=pause:\n%s", s.name, stderr)
		}
	}

	// Checkpoints everywhere: run, produce more, run again = one run over everything.
	topic2 := c.Topic(t, "until-window-ck", 3, nil)
	rk2 := strings.ReplaceAll(rk, " -t "+topic+" ", " -t "+topic2+" ")
	first, _ := untilRecords(topic2, 0, total/2, total)
	c.Produce(t, first...)
	c.WaitStable(t, topic2)
	ck := "STREAMKIT_CHECKPOINT=" + filepath.Join(dir, "ck")
	run1, _ := windowCounts(t, rk2+win, ck)
	rest, _ := untilRecords(topic2, total/2, total, total)
	c.Produce(t, rest...)
	c.WaitStable(t, topic2)
	run2, stderr := windowCounts(t, rk2+win, ck)
	if !strings.Contains(stderr, "the next run continues them") {
		t.Errorf("a checkpointed window pausing with open windows does not say so:\n%s", stderr)
	}
	one, _ := windowCounts(t, rk2+win, "STREAMKIT_CHECKPOINT="+filepath.Join(dir, "ck-one"))
	both := map[string]int64{}
	for _, m := range []map[string]int64{run1, run2} {
		for k, v := range m {
			both[k] += v
		}
	}
	if fmt.Sprint(sorted(both)) != fmt.Sprint(sorted(one)) {
		t.Errorf("two runs with checkpoints: %v\none run: %v", sorted(both), sorted(one))
	}
	if sum(one) == 0 {
		t.Error("the checkpointed run printed nothing")
	}
}

func sorted(m map[string]int64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return out
}
