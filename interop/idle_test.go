package interop

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/internal/kafkatest"
)

// deltaWatcher is a delta-rs process that polls table every 100 ms and prints, as JSON lines,
// each row (sensor_id, last_heartbeat_time in µs) when it first sees it, with the wall time.
const deltaWatcher = `
import json, os, sys, time
from deltalake import DeltaTable
root, seen = sys.argv[1], set()
print(json.dumps({"ready": True}), flush=True)
while True:
    if os.path.isdir(os.path.join(root, "_delta_log")):
        try:
            t = DeltaTable(root).to_pyarrow_table().to_pylist()
        except Exception:
            t = []
        for r in t:
            k = r["sensor_id"]
            if k not in seen:
                seen.add(k)
                print(json.dumps({"sensor_id": k, "seen_us": int(time.time() * 1e6),
                                  "last_us": int(r["last_heartbeat_time"].timestamp() * 1e6), "version": DeltaTable(root).version()}), flush=True)
    time.sleep(0.1)
`

// TestHeartbeatAlertsWhileSilent is the processing-time heartbeat monitor of issue #26:
// read-kafka | window session --processing-time | write-delta, with every sensor silent after
// a moment. Each sensor's alert row must be in the table (read by delta-rs) within gap +
// epoch interval + 1 s of its last heartbeat, although no record arrives after it; and the idle
// run must add no empty Delta versions.
func TestHeartbeatAlertsWhileSilent(t *testing.T) {
	p := needPeers(t)
	kc := kafkatest.NewReal(t)
	topic := kc.Topic(t, "heartbeats", 1, nil)
	dir := t.TempDir()
	table := filepath.Join(dir, "sensorAlerts")
	const gap, epoch = 2 * time.Second, time.Second
	pl := start(t, true, nil,
		p.sk("read-kafka", "-b", kc.Brokers[0], "-t", topic, "--start", "latest", "--value-format", "json",
			"--value-schema", "sensor_id BIGINT, sensor_type STRING", "--epoch-interval", epoch.String(),
			"--checkpoint", filepath.Join(dir, "rk")),
		p.sk("window", "session", "--processing-time", "--gap", gap.String(), "--key", "value.sensor_id",
			"--agg", "last(value.sensor_type) as sensor_type, max(timestamp) as last_heartbeat_time",
			"--checkpoint", filepath.Join(dir, "w")),
		p.sk("write-delta", table, "--checkpoint", filepath.Join(dir, "wd")))
	// The first epoch creates the table: read-kafka has resolved --start latest by then.
	waitTable(t, pl, table)
	watch := exec.Command(p.python, "-c", deltaWatcher, table)
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	watch.Stderr = os.Stderr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { watch.Process.Kill(); watch.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Scan() // ready: the interpreter and deltalake are loaded

	// Sensors 4 and 5 stop first, then 1-3; nothing is sent afterwards.
	last := map[int64]time.Time{}
	beat := func(ids ...int64) {
		for _, id := range ids {
			now := time.Now()
			kc.Produce(t, &kgo.Record{Topic: topic, Timestamp: now, Value: []byte(fmt.Sprintf(`{"sensor_id":%d,"sensor_type":"t%d"}`, id, id))})
			last[id] = now
		}
	}
	for i := 0; i < 3; i++ {
		beat(1, 2, 3, 4, 5)
		time.Sleep(200 * time.Millisecond)
	}
	for i := 0; i < 8; i++ {
		beat(1, 2, 3)
		time.Sleep(200 * time.Millisecond)
	}
	bound := gap + epoch + time.Second
	type seen struct {
		SensorID int64 `json:"sensor_id"`
		SeenUs   int64 `json:"seen_us"`
		LastUs   int64 `json:"last_us"`
		Version  int64 `json:"version"`
	}
	got := map[int64]seen{}
	var maxVersion int64
	lineCh := make(chan string)
	go func() {
		for lines.Scan() {
			lineCh <- lines.Text()
		}
		close(lineCh)
	}()
	timeout := time.After(bound + 10*time.Second)
wait:
	for len(got) < len(last) {
		select {
		case l, ok := <-lineCh:
			if !ok {
				break wait
			}
			var s seen
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("watcher: %q: %v", l, err)
			}
			got[s.SensorID] = s
			maxVersion = max(maxVersion, s.Version)
		case <-timeout:
			break wait
		}
	}
	// Stay idle a few more epochs: they must add no Delta versions.
	time.Sleep(4 * epoch)
	pl.interrupt(t, syscall.SIGINT)
	exits := pl.wait(t)
	for id, at := range last {
		s, ok := got[id]
		if !ok {
			t.Errorf("sensor %d: no alert row in the table %v after its last heartbeat (bound %v)\n%s", id, bound+10*time.Second, bound, report(exits))
			continue
		}
		if d := time.UnixMicro(s.SeenUs).Sub(at); d > bound {
			t.Errorf("sensor %d: alert visible %v after its last heartbeat, want ≤ %v", id, d, bound)
		}
		if d := time.UnixMicro(s.LastUs).Sub(at); d < -time.Second || d > time.Second {
			t.Errorf("sensor %d: last_heartbeat_time %v, want its last heartbeat's time %v", id, time.UnixMicro(s.LastUs), at)
		}
	}
	// Version 0 creates the table; at most one commit per session firing moment after it
	// (sensors 4-5, then 1-3, possibly split over two epochs each), none for idle epochs.
	if v := tableVersion(t, p, table); v > "4" || len(v) > 1 {
		t.Errorf("table at version %s after the idle epochs, want at most 4 (no empty commits)", v)
	}
}

// waitTable waits (up to 30 s) for pl's first epoch to create table.
func waitTable(t *testing.T, pl *pipeline, table string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(table, "_delta_log", "00000000000000000000.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			pl.interrupt(t, syscall.SIGINT)
			t.Fatalf("no table after 30 s:\n%s", report(pl.wait(t)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deltaRS runs a delta-rs snippet (argv[1] is table) and returns what it printed. delta-rs'
// Python binding can abort at interpreter exit while its runtime threads shut down, after the
// work is done (delta-io/delta-rs#2184); the snippet therefore ends with os._exit, and a death
// by signal is retried twice, with its stderr logged. Any other failure fails the test with
// stderr.
func deltaRS(t *testing.T, p peers, table, snippet string) string {
	t.Helper()
	code := "import os, sys\nfrom deltalake import DeltaTable\n" + snippet + "\nsys.stdout.flush()\nos._exit(0)\n"
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(p.python, "-c", code, table)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			return strings.TrimSpace(string(out))
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && !ee.Exited() && attempt < 3 {
			t.Logf("delta-rs died (%v), retrying; stderr:\n%s", err, stderr.String())
			continue
		}
		t.Fatalf("delta-rs on %s: %v\nstderr:\n%s", table, err, stderr.String())
	}
}

// tableVersion is the table's version as delta-rs reads it.
func tableVersion(t *testing.T, p peers, table string) string {
	t.Helper()
	return deltaRS(t, p, table, "print(DeltaTable(sys.argv[1]).version())")
}

// hasVersion reports whether table's log holds a commit of version v (a file check: commits
// appear atomically, so no reader process is needed to poll).
func hasVersion(table string, v int) bool {
	_, err := os.Stat(filepath.Join(table, "_delta_log", fmt.Sprintf("%020d.json", v)))
	return err == nil
}

// An idle live read-kafka | write-delta (1 s epochs) writes no empty Delta versions; an idle
// --until now run over the same checkpoint still ends promptly, adding none either (issue #26).
func TestIdleRunsWriteNoEmptyVersions(t *testing.T) {
	p := needPeers(t)
	kc := kafkatest.NewReal(t)
	topic := kc.Topic(t, "idle", 2, nil)
	dir := t.TempDir()
	table := filepath.Join(dir, "t")
	kc.Produce(t, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("a")}, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("b")})
	src := func(extra ...string) []string {
		return p.sk(append([]string{"read-kafka", "-b", kc.Brokers[0], "-t", topic, "--start", "earliest", "--epoch-interval", "1s",
			"--checkpoint", filepath.Join(dir, "rk")}, extra...)...)
	}
	sink := p.sk("write-delta", table, "--checkpoint", filepath.Join(dir, "wd"))
	pl := start(t, true, nil, src(), sink)
	waitTable(t, pl, table)
	time.Sleep(2 * time.Second) // the two rows are committed
	v1 := tableVersion(t, p, table)
	time.Sleep(5 * time.Second) // five idle epochs
	v2 := tableVersion(t, p, table)
	pl.interrupt(t, syscall.SIGINT)
	wantCodes(t, pl.wait(t), 130, 130)
	if v1 != v2 {
		t.Errorf("idle live run: table version %s, then %s after five idle epochs, want no new version", v1, v2)
	}
	began := time.Now()
	_, exits := run(t, nil, src("--until", "now"), sink)
	wantCodes(t, exits, 0, 0)
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("idle --until now run took %v", d)
	}
	if v3 := tableVersion(t, p, table); v3 != v2 {
		t.Errorf("idle --until now run: table version %s, want %s", v3, v2)
	}
}

// An event-time window whose watermark advances through --idle-timeout (a silent Kafka
// partition stops holding it back) fires and commits without waiting for new rows: the
// window's row reaches the table within a few epochs (issue #26).
func TestIdleTimeoutWindowCommits(t *testing.T) {
	p := needPeers(t)
	kc := kafkatest.NewReal(t)
	topic := kc.Topic(t, "idlewm", 2, nil)
	dir := t.TempDir()
	table := filepath.Join(dir, "t")
	t0 := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	// Partition 1 holds the watermark at t0 until it has been silent for 1 s; partition 0's
	// row at t0+10s then moves it past the end of window [t0, t0+5s).
	kc.Produce(t, &kgo.Record{Topic: topic, Partition: 1, Timestamp: t0, Value: []byte("x")},
		&kgo.Record{Topic: topic, Partition: 0, Timestamp: t0, Value: []byte("y")},
		&kgo.Record{Topic: topic, Partition: 0, Timestamp: t0.Add(10 * time.Second), Value: []byte("z")})
	pl := start(t, true, nil,
		p.sk("read-kafka", "-b", kc.Brokers[0], "-t", topic, "--start", "earliest", "--epoch-interval", "1s",
			"--checkpoint", filepath.Join(dir, "rk")),
		p.sk("window", "tumbling", "--time", "timestamp", "--size", "5s", "--idle-timeout", "1s", "--agg", "count",
			"--checkpoint", filepath.Join(dir, "w")),
		p.sk("write-delta", table, "--checkpoint", filepath.Join(dir, "wd")))
	sent := time.Now()
	// The rows arrive in the first epochs; the window fires only after the idle timeout,
	// when no more rows come: the table (created by the first epoch) gets a version 1.
	fired := false
	for time.Since(sent) < 15*time.Second && !fired {
		fired = hasVersion(table, 1)
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(sent)
	pl.interrupt(t, syscall.SIGINT)
	exits := pl.wait(t)
	if !fired {
		t.Fatalf("the window [t0, t0+5s) fired by the idle timeout is not in the table after %v\n%s", took, report(exits))
	}
	if got := deltaRS(t, p, table, "print(DeltaTable(sys.argv[1]).to_pyarrow_table().column('count').to_pylist())"); got != "[2]" {
		t.Fatalf("window counts %s, want [2] (the window of t0 with both partitions' rows)", got)
	}
	t.Logf("committed %v after the rows were sent", took)
}
