package readkafka_test

// read-kafka | window over a backlog spread unevenly over 4 partitions of the real broker
// (issue #17, items 1 and 2): whatever --max-records-per-epoch and --columns say, the window
// must give DuckDB's windows over the same records, and no row may be late.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/state"
)

// backlogRows records are produced, one minute of event time apart, in time order: each
// partition is in order, and partitions get them unevenly (weights 5:3:1:1), so reading one
// partition ahead of another moves its event times ahead of the others'.
const backlogRows = 3000

// produceBacklog creates a 4-partition topic holding backlogRows JSON records
// {"id","ts","k"} and writes the same records as NDJSON to a file for DuckDB.
func produceBacklog(t *testing.T) (c *kafkatest.Cluster, topic, ndjson string) {
	t.Helper()
	c = kafkatest.NewReal(t)
	topic = c.Topic(t, "wm-backlog", 4, nil)
	base := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	weights := []int32{0, 0, 0, 0, 0, 1, 1, 1, 2, 3}
	var recs []*kgo.Record
	var lines bytes.Buffer
	for i := 0; i < backlogRows; i++ {
		v, _ := json.Marshal(map[string]any{"id": i, "ts": base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339), "k": fmt.Sprintf("k%d", i*7%3)})
		recs = append(recs, &kgo.Record{Topic: topic, Partition: weights[(i*31)%len(weights)], Value: v})
		lines.Write(v)
		lines.WriteByte('\n')
	}
	c.Produce(t, recs...)
	ndjson = filepath.Join(t.TempDir(), "backlog.ndjson")
	if err := os.WriteFile(ndjson, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, topic, ndjson
}

// compareWindows checks the window output (an Arrow IPC stream file) against DuckDB's GROUP BY
// over the produced records: the same (window, k, count) rows, all on_time.
const compareWindows = `
import sys, duckdb, pyarrow as pa
out, src = sys.argv[1], sys.argv[2]
with pa.OSFile(out, "rb") as f:
    got = pa.ipc.open_stream(f).read_all()
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.register("got", got)
want = f"""SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS ws, k, count(*) AS n
           FROM read_json('{src}', columns={{'id':'BIGINT','ts':'TIMESTAMP','k':'VARCHAR'}}) GROUP BY ALL"""
have = "SELECT window_start::TIMESTAMP AS ws, k, \"count\" AS n FROM got WHERE emit = 'on_time'"
d = con.execute(f"SELECT count(*) FROM (({want}) EXCEPT ({have})) UNION ALL SELECT count(*) FROM (({have}) EXCEPT ({want}))").fetchall()
other = con.execute("SELECT count(*) FROM got WHERE emit <> 'on_time'").fetchone()[0]
print(f"missing={d[0][0]} extra={d[1][0]} not_on_time={other} windows={con.execute(f'SELECT count(*) FROM ({want})').fetchone()[0]}")
`

// runBacklogWindow runs read-kafka ARGS | [MID |] window tumbling --size 1h over the topic
// (readArgs up to a "|", then the middle stage's) and returns the number of late rows and
// DuckDB's verdict on the windows.
func runBacklogWindow(t *testing.T, c *kafkatest.Cluster, topic, ndjson string, env []string, readArgs ...string) (late int, verdict string) {
	t.Helper()
	bin, py := peertest.Binary(t), peertest.Python(t)
	dir := t.TempDir()
	out, lateFile := filepath.Join(dir, "out.arrows"), filepath.Join(dir, "late.ndjson")
	q := func(args []string) string {
		var b strings.Builder
		for _, a := range args {
			fmt.Fprintf(&b, " %q", a)
		}
		return b.String()
	}
	var mid string
	if i := slices.Index(readArgs, "|"); i >= 0 {
		mid = fmt.Sprintf(" | %q --progress=off%s", bin, q(readArgs[i+1:]))
		readArgs = readArgs[:i]
	}
	read := append([]string{"--progress=off", "read-kafka", "-b", strings.Join(c.Brokers, ","), "-t", topic, "--until", "now", "--end", "final",
		"--value-format", "json", "--value-schema", "id BIGINT, ts TIMESTAMP, k STRING"}, readArgs...)
	timeCol, keyCol := "value.ts", "value.k"
	for _, a := range readArgs {
		if strings.Contains(a, "value.*") {
			timeCol, keyCol = "ts", "k"
		}
	}
	win := []string{"--progress=off", "window", "tumbling", "--size", "1h", "--time", timeCol, "--key", keyCol, "--agg", "count", "--late-output", lateFile}
	pipe := fmt.Sprintf("%q%s%s | %q%s > %q", bin, q(read), mid, bin, q(win), out)
	cmd := exec.Command("bash", "-o", "pipefail", "-c", pipe)
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", pipe, err, b)
	}
	if b, err := os.ReadFile(lateFile); err == nil {
		late = bytes.Count(b, []byte("\n"))
	}
	return late, strings.TrimSpace(string(peertest.RunPython(t, py, compareWindows, out, ndjson)))
}

// TestCappedEpochsNoLateRows (issue #17 item 1): --max-records-per-epoch used to read whole
// partitions one after another, and the window's per-partition watermark counted a partition
// only from its first row, so the partitions read later were mostly late. Now the cap is spread
// over the partitions in proportion to their lag (Spark's maxOffsetsPerTrigger) and the
// partitions read-kafka declares hold the watermark back until they deliver: every cap gives
// the uncapped windows, no row late.
func TestCappedEpochsNoLateRows(t *testing.T) {
	c, topic, ndjson := produceBacklog(t)
	var want string
	for _, n := range []int{0, 1, 7, 500, 1999} {
		late, got := runBacklogWindow(t, c, topic, ndjson, nil, "--max-records-per-epoch", fmt.Sprint(n))
		t.Logf("--max-records-per-epoch %d: late=%d %s", n, late, got)
		if late != 0 || !strings.HasPrefix(got, "missing=0 extra=0 not_on_time=0 ") {
			t.Errorf("--max-records-per-epoch %d: %d late rows, windows vs DuckDB: %s", n, late, got)
		}
		if want == "" {
			want = got
		} else if got != want {
			t.Errorf("--max-records-per-epoch %d: %s, uncapped: %s", n, got, want)
		}
	}

	// The first epoch of a capped run takes from every partition, in proportion to its lag.
	ckpt := t.TempDir()
	runBacklogWindow(t, c, topic, ndjson, []string{"STREAMKIT_CHECKPOINT=" + ckpt}, "--max-records-per-epoch", "500")
	pos, err := state.ReadOffsets(filepath.Join(ckpt, "read-kafka"), 1)
	if err != nil {
		t.Fatal(err)
	}
	var offs map[string]map[string]json.RawMessage // partition → offset, and the topic's "topicId"
	if err := json.Unmarshal(pos, &offs); err != nil {
		t.Fatal(err)
	}
	ends := c.Ends(t, topic)
	total := 0
	for p, end := range ends {
		var got int64
		if err := json.Unmarshal(offs[topic][fmt.Sprint(p)], &got); err != nil {
			t.Fatalf("partition %d: %v: %s", p, err, pos)
		}
		share := 500 * float64(end) / backlogRows
		if float64(got) < share-1 || float64(got) > share+1 {
			t.Errorf("epoch 1 read partition %d up to %d, want its share %.1f of 500 (%d of %d records): %s", p, got, share, end, backlogRows, pos)
		}
		total += int(got)
	}
	if total != 500 {
		t.Errorf("epoch 1 holds %d records, want 500: %s", total, pos)
	}
}

// TestColumnsWithoutTopicKeepPartitionWatermarks (issue #17 item 2): with --columns dropping
// topic (the form in the help), or partition too, the window lost its per-partition watermarks
// and most rows went late. read-kafka now names each batch's partition in its metadata, so the
// watermark is per partition whatever columns are kept.
func TestColumnsWithoutTopicKeepPartitionWatermarks(t *testing.T) {
	c, topic, ndjson := produceBacklog(t)
	for _, args := range [][]string{
		{"--columns", "value.*,partition,offset", "--max-records-per-epoch", "500"},
		{"--columns", "value.*,offset", "--max-records-per-epoch", "500"},
		{"--columns", "value.*,partition,offset", "--batch-rows", "50"},
		// The partition each batch names survives stages that filter and shard the rows.
		{"--columns", "value.*,offset", "--max-records-per-epoch", "500", "|", "dedup", "--key", "id"},
		{"--columns", "value.*,offset", "--max-records-per-epoch", "500", "|", "keyby", "id", "--shards", "2", "--", "dedup", "--key", "id"},
	} {
		late, got := runBacklogWindow(t, c, topic, ndjson, nil, args...)
		t.Logf("%v: late=%d %s", args, late, got)
		if late != 0 || !strings.HasPrefix(got, "missing=0 extra=0 not_on_time=0 ") {
			t.Errorf("%v: %d late rows, windows vs DuckDB: %s", args, late, got)
		}
	}
}
