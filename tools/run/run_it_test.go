package run_test

// `streamkit run --parallel N` against the real broker: N members of one consumer-group
// pipeline share a topic's partitions, and run merges their progress and exit codes. They
// skip without the broker unless STREAMKIT_REQUIRE_PEERS=1.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/deltatest"
	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/storage"
)

// rig is one test's topic, group and table.
type rig struct {
	t        *testing.T
	c        *kafkatest.Cluster
	topic    string
	parts    int32
	table    string
	produced int
}

func newRig(t *testing.T, parts int32) *rig {
	c := kafkatest.NewReal(t)
	return &rig{t: t, c: c, topic: c.Topic(t, "run", parts, nil), parts: parts, table: filepath.Join(t.TempDir(), "table")}
}

// produce writes n more records {"id":i}, round robin over the partitions.
func (r *rig) produce(n int) {
	recs := make([]*kgo.Record, 0, n)
	for i := r.produced; i < r.produced+n; i++ {
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: int32(i) % r.parts, Value: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	r.c.Produce(r.t, recs...)
	r.produced += n
}

// pipeline is the members' group pipeline; extra are read-kafka options.
func (r *rig) pipeline(extra string) string {
	return fmt.Sprintf(`streamkit read-kafka -b %s -t %s --consumer-group g-%s --progress-table %s --value-format json --value-schema 'id BIGINT' --columns 'value.*,partition,offset' --epoch-interval 300ms --session-timeout 6s --revoke-wait 10s %s | streamkit write-delta %s`,
		r.c.Brokers[0], r.topic, r.topic, r.table, extra, r.table)
}

// runCmd is a running `streamkit --progress=json run --parallel N -- PIPELINE`, its stderr
// collected line by line.
type runCmd struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	err  bytes.Buffer
	done chan struct{}
	code int
	mark string // an environment entry of run and its members alone
}

func start(t *testing.T, n int, args ...string) *runCmd {
	t.Helper()
	bin := peertest.Binary(t)
	rc := &runCmd{done: make(chan struct{})}
	rc.cmd = exec.Command(bin, append([]string{"--progress=json", "run", "--parallel", strconv.Itoa(n)}, args...)...)
	// The members find `streamkit` on the PATH that run gives them: its own directory first.
	rc.mark = fmt.Sprintf("STREAMKIT_RUN_TEST=%d-%d", os.Getpid(), time.Now().UnixNano())
	rc.cmd.Env = append(os.Environ(), "STREAMKIT_CHECKPOINT=", rc.mark)
	rc.cmd.Dir = t.TempDir()
	var out bytes.Buffer
	rc.cmd.Stdout = &out
	pr, err := rc.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			rc.mu.Lock()
			rc.err.Write(sc.Bytes())
			rc.err.WriteByte('\n')
			rc.mu.Unlock()
		}
		rc.cmd.Wait()
		rc.code = rc.cmd.ProcessState.ExitCode()
		if out.Len() > 0 {
			rc.mu.Lock()
			fmt.Fprintf(&rc.err, "STDOUT: %q\n", out.String())
			rc.mu.Unlock()
		}
		close(rc.done)
	}()
	t.Cleanup(func() {
		select {
		case <-rc.done:
		default:
			rc.cmd.Process.Kill()
			<-rc.done
		}
	})
	return rc
}

func (rc *runCmd) stderr() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.err.String()
}

func (rc *runCmd) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-rc.done:
	case <-time.After(d):
		t.Fatalf("run did not exit within %s; stderr:\n%s", d, rc.stderr())
	}
	return rc.code
}

// progress are the members' forwarded progress lines of stage.
type progress struct {
	Member     *int   `json:"member"`
	Stage      string `json:"stage"`
	RecordsIn  int64  `json:"records_in"`
	Partitions *int64 `json:"partitions"`
	Event      string `json:"event"`
	ExitCode   int    `json:"exit_code"`
}

func (rc *runCmd) lines(t *testing.T) []progress {
	var out []progress
	for _, l := range strings.Split(rc.stderr(), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var p progress
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("stderr line %q: %v", l, err)
		}
		out = append(out, p)
	}
	return out
}

// held reports, per member, the most partitions its read-kafka's progress showed.
func (rc *runCmd) held(t *testing.T) map[int]int64 {
	m := map[int]int64{}
	for _, p := range rc.lines(t) {
		if p.Member != nil && p.Stage == "read-kafka" && p.Partitions != nil {
			m[*p.Member] = max(m[*p.Member], *p.Partitions)
		}
	}
	return m
}

// rows returns the ids in the table, a missing table being empty.
func (r *rig) rows() []string {
	mem := memory.NewGoAllocator()
	store, err := storage.Open(context.Background(), r.table, storage.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	tbl := delta.OpenTable(store, mem)
	if _, err := tbl.Snapshot(context.Background()); err != nil {
		return nil
	}
	ids, _ := deltatest.IDRowsOf(r.t, mem, tbl)
	return ids
}

// exactlyOnce asserts that the table holds every produced record once, read by streamkit and
// by delta-rs.
func (r *rig) exactlyOnce() {
	r.t.Helper()
	ids := r.rows()
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for i := 0; i < r.produced; i++ {
		if k := seen[strconv.Itoa(i)]; k != 1 {
			r.t.Fatalf("record %d is in the table %d times (%d rows, %d produced)", i, k, len(ids), r.produced)
		}
	}
	if len(ids) != r.produced {
		r.t.Fatalf("the table holds %d rows, want %d", len(ids), r.produced)
	}
	out := peertest.RunPython(r.t, peertest.Python(r.t), `
import sys, json
from deltalake import DeltaTable
ids = DeltaTable(sys.argv[1]).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
print(json.dumps({"rows": len(ids), "distinct": len(set(ids)), "max": max(ids)}))
`, r.table)
	var got struct{ Rows, Distinct, Max int }
	if err := json.Unmarshal(out, &got); err != nil {
		r.t.Fatalf("delta-rs: %v: %s", err, out)
	}
	if got.Rows != r.produced || got.Distinct != r.produced || got.Max != r.produced-1 {
		r.t.Fatalf("delta-rs reads %+v, want %d rows, all distinct, ids 0..%d", got, r.produced, r.produced-1)
	}
}

// waitRows waits until the table holds n rows, failing when run exits first.
func (r *rig) waitRows(rc *runCmd, n int, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if ids := r.rows(); len(ids) >= n {
			return
		}
		select {
		case <-rc.done:
			r.t.Fatalf("run exited (%d) before the table held %d rows; stderr:\n%s", rc.code, n, rc.stderr())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the table holds %d rows after %s, want %d; stderr:\n%s", len(r.rows()), d, n, rc.stderr())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRunParallelGroup: run --parallel 3 of read-kafka --consumer-group | write-delta on a
// 6-partition topic while records keep coming: every member holds partitions (its progress,
// forwarded with its member index, says so), the table ends with every record exactly once
// (streamkit and delta-rs), and SIGINT to run stops every member (each exits 130, as run does)
// with no process of theirs left.
func TestRunParallelGroup(t *testing.T) {
	r := newRig(t, 6)
	r.produce(3000)
	rc := start(t, 3, "--", r.pipeline(""))
	r.waitRows(rc, 1000, 90*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for len(rc.held(t)) < 3 || minHeld(rc.held(t)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not every member held partitions within 60 s: %v; stderr:\n%s", rc.held(t), rc.stderr())
		}
		r.produce(300)
		time.Sleep(500 * time.Millisecond)
	}
	r.produce(3000)
	r.waitRows(rc, r.produced, 90*time.Second)
	rc.cmd.Process.Signal(syscall.SIGINT)
	if code := rc.wait(t, 90*time.Second); code != 130 {
		t.Fatalf("run after SIGINT: exit %d, want 130; stderr:\n%s", code, rc.stderr())
	}
	exits := map[int]int{}
	for _, p := range rc.lines(t) {
		if p.Event == "exit" {
			exits[*p.Member] = p.ExitCode
		}
	}
	if len(exits) != 3 || exits[0] != 130 || exits[1] != 130 || exits[2] != 130 {
		t.Errorf("members' exits %v, want 130 for each of 0, 1, 2", exits)
	}
	if left := leftovers(t, rc.mark); len(left) > 0 {
		t.Errorf("processes of the members still running after run exited: %v", left)
	}
	if strings.Contains(rc.stderr(), "STDOUT:") {
		t.Errorf("run wrote to stdout:\n%s", rc.stderr())
	}
	t.Logf("partitions held per member: %v", rc.held(t))
	r.exactlyOnce()
}

func minHeld(m map[int]int64) int64 {
	lo := int64(-1)
	for _, v := range m {
		if lo < 0 || v < lo {
			lo = v
		}
	}
	return lo
}

// leftovers lists the processes that still carry run's test mark in their environment (the
// members inherit it): none may outlive run.
func leftovers(t *testing.T, mark string) []string {
	t.Helper()
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		left = append(left, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '})))
	}
	return left
}

// TestRunParallelMemberFails: one of two members fails (exit 3) after a while; run stops the
// other (SIGINT: it finishes its epoch, exit 130) and exits 3 naming member 1 and quoting its
// last stderr line. What was committed is in the table once.
func TestRunParallelMemberFails(t *testing.T) {
	r := newRig(t, 4)
	r.produce(2000)
	script := `if [ "$STREAMKIT_MEMBER" = 1 ]; then sleep 4; echo "member one gives up" >&2; exit 3; fi; ` + r.pipeline("")
	rc := start(t, 2, "--grace", "20s", "--", script)
	code := rc.wait(t, 90*time.Second)
	out := rc.stderr()
	if code != 3 || !strings.Contains(out, "run: member 1 of 2 failed (exit 3)") || !strings.Contains(out, "member one gives up") {
		t.Fatalf("run with a failing member: exit %d, want 3 naming member 1 and its last line; stderr:\n%s", code, out)
	}
	exits := map[int]int{}
	for _, p := range rc.lines(t) {
		if p.Event == "exit" {
			exits[*p.Member] = p.ExitCode
		}
	}
	if exits[0] != 130 || exits[1] != 3 {
		t.Fatalf("members' exits %v, want member 0 stopped (130) and member 1 failed (3); stderr:\n%s", exits, out)
	}
	if left := leftovers(t, rc.mark); len(left) > 0 {
		t.Errorf("processes of the members still running after run exited: %v", left)
	}
	ids := r.rows()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s is in the table twice", id)
		}
		seen[id] = true
	}
	if len(ids) == 0 {
		t.Fatalf("member 0 committed nothing in 4 s; stderr:\n%s", out)
	}
}
