package readkafka_test

// Consumer-group mode against the real broker (docs/protocol.md §13): members of one group
// each run `read-kafka --consumer-group | write-delta TABLE`; they join, leave, are killed and
// paused, and the table ends up with every record exactly once and every partition's txn at
// its end. They skip without the broker unless STREAMKIT_REQUIRE_PEERS=1.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/deltatest"
	"github.com/streamkit/streamkit/internal/kafkatest"
	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// groupRig is one test's topic, group and table, and the records produced so far.
type groupRig struct {
	t        *testing.T
	c        *kafkatest.Cluster
	topic    string
	group    string
	table    string
	parts    int32
	flow     string // the group's flow (read-kafka --flow); "" is the group name
	app      string // read-kafka --app-id: appIds <app>-<partition>; "" names them by the flow
	produced atomic.Int64
	env      []string // more environment of the members (the S3 test server's)
}

func newGroupRig(t *testing.T, parts int32) *groupRig {
	c := kafkatest.NewReal(t)
	r := &groupRig{t: t, c: c, topic: c.Topic(t, "group", parts, nil), parts: parts,
		table: filepath.Join(t.TempDir(), "table")}
	r.group = "g-" + r.topic
	return r
}

// appID is partition p's txn appId in the rig's flow.
func (r *groupRig) appID(p int32) string {
	if r.app != "" {
		return fmt.Sprintf("%s-%d", r.app, p)
	}
	flow := r.flow
	if flow == "" {
		flow = r.group
	}
	return codec.TxnAppID(flow, fmt.Sprintf("%s/%d", r.topic, p))
}

// produce writes n more records {"id":i} (ids consecutive from the last), round robin over
// the partitions.
func (r *groupRig) produce(n int) {
	from := int(r.produced.Load())
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: int32(i) % r.parts, Value: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	r.c.Produce(r.t, recs...)
	r.produced.Add(int64(n))
}

// member is one running `read-kafka --consumer-group | write-delta` pipeline, in a process
// group of its own.
type member struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// start starts a member; extra are read-kafka options.
func (r *groupRig) start(name string, extra ...string) *member {
	r.t.Helper()
	return r.startVia(name, "", extra...)
}

// startVia starts a member whose pipeline runs the streamkit stage mid (e.g. "keyby id")
// between read-kafka and write-delta ("" for none); extra are read-kafka options.
func (r *groupRig) startVia(name, mid string, extra ...string) *member {
	r.t.Helper()
	rk := fmt.Sprintf(`"$SK" --progress=off read-kafka -b %s -t %s --consumer-group %s --progress-table %s --value-format json --value-schema 'id BIGINT' --columns 'value.*,partition,offset' --epoch-interval 300ms --session-timeout 6s --revoke-wait 10s`,
		r.c.Brokers[0], r.topic, r.group, r.table)
	if r.flow != "" {
		rk += " --flow " + r.flow
	}
	if r.app != "" {
		rk += " --app-id " + r.app
	}
	for _, e := range extra {
		rk += " " + e
	}
	if mid != "" {
		rk += ` | "$SK" --progress=off ` + mid
	}
	return r.launch(name, fmt.Sprintf(`set -o pipefail; %s | "$SK" --progress=off write-delta %s`, rk, r.table))
}

// launch starts the bash pipeline script as a member, with $SK the streamkit binary, the rig's
// environment plus env (STREAMKIT_CHECKPOINT is empty unless env sets it) and an empty working
// directory of its own: nothing local to resume from, as on a new machine.
func (r *groupRig) launch(name, script string, env ...string) *member {
	r.t.Helper()
	m := &member{name: name, done: make(chan struct{})}
	m.cmd = exec.Command("bash", "-c", script)
	m.cmd.Env = append(append(append(os.Environ(), "SK="+peertest.Binary(r.t), "STREAMKIT_CHECKPOINT="), r.env...), env...)
	m.cmd.Dir = r.t.TempDir()
	m.cmd.Stderr = &m.stderr
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.done) }()
	r.t.Cleanup(func() {
		syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
		if r.t.Failed() || os.Getenv("GROUPLOG") != "" {
			r.t.Logf("member %s stderr:\n%s", m.name, m.stderr.String())
		}
	})
	return m
}

// signal sends sig to the member's whole pipeline.
func (m *member) signal(sig syscall.Signal) { syscall.Kill(-m.cmd.Process.Pid, sig) }

// wait waits for the member to exit (failing t after d) and returns its exit code.
func (m *member) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(d):
		t.Fatalf("member %s did not exit within %s; stderr:\n%s", m.name, d, m.stderr.String())
	}
	if m.err == nil {
		return 0
	}
	if ee, ok := m.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("member %s: %v", m.name, m.err)
	return -1
}

// rows returns the ids in the table (sorted) and its txns; a missing table is empty.
func (r *groupRig) rows() ([]string, map[string]delta.Txn) {
	mem := memory.NewGoAllocator()
	ctx := context.Background()
	store, err := storage.Open(ctx, r.table, storage.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	tbl := delta.OpenTable(store, mem)
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, nil
	}
	ids, _ := deltatest.IDRowsOf(r.t, mem, tbl)
	return ids, snap.Txns()
}

// waitRows waits until the table holds at least n rows.
func (r *groupRig) waitRows(n int, d time.Duration, ms ...*member) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ids, _ := r.rows()
		if len(ids) >= n {
			return
		}
		for _, m := range ms {
			select {
			case <-m.done:
				r.t.Fatalf("member %s exited (%v) while waiting for %d rows; stderr:\n%s", m.name, m.err, n, m.stderr.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the table holds %d rows after %s, want %d", len(ids), d, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// check asserts that the table holds every produced record exactly once and that every
// partition's txn version is the last offset of the partition (its end − 1).
func (r *groupRig) check() {
	r.t.Helper()
	ids, txns := r.rows()
	n := int(r.produced.Load())
	if len(ids) != n {
		r.t.Errorf("the table holds %d rows, want %d (one per record)", len(ids), n)
	}
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for i := 0; i < n; i++ {
		if k := seen[strconv.Itoa(i)]; k != 1 {
			r.t.Errorf("record %d is in the table %d times", i, k)
			break
		}
	}
	ends := r.c.Ends(r.t, r.topic)
	for p := int32(0); p < r.parts; p++ {
		app := r.appID(p)
		tx, ok := txns[app]
		if !ok || tx.Version != ends[p]-1 {
			r.t.Errorf("txn %s = %+v (present %v), want version %d (the partition's end %d − 1)", app, tx, ok, ends[p]-1, ends[p])
		}
	}
}

// peerRead reads the table with delta-rs (rows, distinct ids, each app's txn version) and
// DuckDB's delta extension (rows, distinct ids), as JSON.
const peerRead = `
import sys, os, glob, json, duckdb
from deltalake import DeltaTable
path, apps = sys.argv[1], sys.argv[2:]
dt = DeltaTable(path)
ids = dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
out = {"rs_rows": len(ids), "rs_distinct": len(set(ids)), "rs_max": max(ids), "txn": {a: dt.transaction_version(a) for a in apps}}
site = os.path.dirname(os.path.dirname(duckdb.__file__))
ext = glob.glob(os.path.join(site, "duckdb_extension_delta", "extensions", "*", "delta.duckdb_extension"))
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
con.sql("set enable_progress_bar = false")
con.execute("LOAD '%s'" % ext[0].replace("'", "''"))
n, d = con.execute("SELECT count(*), count(DISTINCT id) FROM delta_scan(?)", [os.path.abspath(path)]).fetchone()
out["duck_rows"], out["duck_distinct"] = n, d
print(json.dumps(out))
`

// checkPeers asserts that delta-rs and DuckDB read every produced record exactly once, and
// that delta-rs reads every partition's txn at its last offset.
func (r *groupRig) checkPeers() {
	r.t.Helper()
	py := peertest.Python(r.t)
	ends := r.c.Ends(r.t, r.topic)
	args := []string{r.table}
	want := map[string]int64{}
	for p := int32(0); p < r.parts; p++ {
		app := r.appID(p)
		args = append(args, app)
		want[app] = ends[p] - 1
	}
	var got struct {
		RsRows       int64             `json:"rs_rows"`
		RsDistinct   int64             `json:"rs_distinct"`
		RsMax        int64             `json:"rs_max"`
		DuckRows     int64             `json:"duck_rows"`
		DuckDistinct int64             `json:"duck_distinct"`
		Txn          map[string]*int64 `json:"txn"`
	}
	out := peertest.RunPython(r.t, py, peerRead, args...)
	if err := json.Unmarshal(out, &got); err != nil {
		r.t.Fatalf("peer read: %v: %s", err, out)
	}
	n := r.produced.Load()
	if got.RsRows != n || got.RsDistinct != n || got.RsMax != n-1 || got.DuckRows != n || got.DuckDistinct != n {
		r.t.Errorf("peers read %+v, want %d rows, all distinct, ids 0..%d", got, n, n-1)
	}
	for app, v := range want {
		if g := got.Txn[app]; g == nil || *g != v {
			r.t.Errorf("delta-rs: transaction_version(%s) = %v, want %d", app, g, v)
		}
	}
}

// checkStateDump asserts that state-dump TABLE --offsets --lag --flow (--app-id and --topic
// with the rig's app) shows every partition of the group at its end, with no lag.
func (r *groupRig) checkStateDump() {
	r.t.Helper()
	names := []string{"--flow", r.group}
	switch {
	case r.app != "":
		names = []string{"--app-id", r.app, "--topic", r.topic}
	case r.flow != "":
		names[1] = r.flow
	}
	out, stderr, err := streamkit(r.t, nil, append([]string{"state-dump", r.table, "--offsets", "--lag", "-b", r.c.Brokers[0], "--format", "json"}, names...)...)
	if err != nil {
		r.t.Fatalf("state-dump: %v\n%s", err, stderr)
	}
	ends := r.c.Ends(r.t, r.topic)
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var row struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Committed int64  `json:"committed"`
			Lag       int64  `json:"lag"`
			Status    string `json:"status"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			r.t.Fatalf("state-dump line %q: %v", line, err)
		}
		if row.Topic != r.topic || row.Committed != ends[row.Partition] || row.Lag != 0 || row.Status != "ok" {
			r.t.Errorf("state-dump row %s: want committed %d (the end), lag 0, status ok", line, ends[row.Partition])
		}
		n++
	}
	if n != int(r.parts) {
		r.t.Errorf("state-dump shows %d partitions, want %d:\n%s", n, r.parts, out)
	}
}

// TestGroupMembers: two members on a 4-partition topic, one joining later and one leaving
// cleanly (SIGINT), then a third joining and one killed with kill -9 (its whole pipeline,
// as a machine that dies); records are produced throughout. The survivor takes over every
// partition from the table's txns, and the table holds every record exactly once with every
// partition's txn at its end.
func TestGroupMembers(t *testing.T) {
	r := newGroupRig(t, 4)
	r.produce(400)
	a := r.start("a")
	r.waitRows(100, 60*time.Second, a)
	b := r.start("b")
	r.produce(400)
	r.waitRows(600, 60*time.Second, a, b)
	a.signal(syscall.SIGINT)
	if code := a.wait(t, 60*time.Second); code != 130 {
		t.Fatalf("member a after SIGINT: exit %d, want 130; stderr:\n%s", code, a.stderr.String())
	}
	r.produce(400)
	c := r.start("c")
	r.waitRows(1000, 60*time.Second, b, c)
	b.signal(syscall.SIGKILL)
	b.wait(t, 10*time.Second)
	r.produce(400)
	r.waitRows(int(r.produced.Load()), 90*time.Second, c)
	c.signal(syscall.SIGINT)
	if code := c.wait(t, 60*time.Second); code != 130 {
		t.Fatalf("member c after SIGINT: exit %d, want 130; stderr:\n%s", code, c.stderr.String())
	}
	r.check()
	r.checkPeers()
}

// TestGroupUntilNowViaKeyby: two members with --until now, a stateless stage (keyby) between
// read-kafka and write-delta (the barriers' progress passes through it), each exit 0 once the
// partitions it holds reached the end fixed when they were assigned; a later run in a new
// process, with nothing on disk but the table, resumes every partition from the txns and reads
// only the new records. A stateful stage (dedup) behind a group source is refused (exit 2),
// pointing to static members (read-kafka --member I/N).
func TestGroupUntilNowViaKeyby(t *testing.T) {
	r := newGroupRig(t, 4)
	r.produce(800)
	a := r.startVia("a", "keyby id", "--until now")
	b := r.startVia("b", "keyby id", "--until now")
	for _, m := range []*member{a, b} {
		if code := m.wait(t, 90*time.Second); code != 0 {
			t.Fatalf("member %s: exit %d, want 0; stderr:\n%s", m.name, code, m.stderr.String())
		}
	}
	r.check()
	r.produce(200)
	c := r.startVia("c", "keyby id", "--until now")
	if code := c.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("member c: exit %d, want 0; stderr:\n%s", code, c.stderr.String())
	}
	r.check()
	for p := 0; p < 4; p++ {
		want := fmt.Sprintf("partition=%d from=200 txn=199", p)
		if !bytes.Contains(c.stderr.Bytes(), []byte(want)) {
			t.Errorf("member c did not resume partition %d from the table (want %q in its log):\n%s", p, want, c.stderr.String())
		}
	}
	r.checkStateDump()
	d := r.startVia("d", "dedup --key id", "--until now")
	// The pipeline's status is write-delta's (its input ended empty); dedup's message says why.
	if code := d.wait(t, 60*time.Second); code == 0 || !bytes.Contains(d.stderr.Bytes(), []byte("dedup's state would have to move with them")) ||
		!bytes.Contains(d.stderr.Bytes(), []byte("read-kafka --member I/N")) {
		t.Fatalf("dedup behind a group source: exit %d, want a failure with the reason and the fallback (static members); stderr:\n%s", code, d.stderr.String())
	}
	r.check()
}

// stagePID returns the PID of the member's process running streamkit tool (a child of its
// shell).
func (m *member) stagePID(t *testing.T, tool string) int {
	t.Helper()
	pid := m.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		cl, _ := os.ReadFile("/proc/" + f + "/cmdline")
		if bytes.Contains(cl, []byte("\x00"+tool+"\x00")) {
			n, _ := strconv.Atoi(f)
			return n
		}
	}
	t.Fatalf("member %s runs no %s", m.name, tool)
	return 0
}

// TestGroupZombie: a member is paused with SIGSTOP, its sink first and its source a moment
// later, so that barriers it cut are waiting in the pipe, while records keep coming; past its
// session timeout the other member takes its partitions over from the table and commits them.
// The zombie's sink, resumed, commits those epochs late: the table's compare-and-set refuses
// the commit, its rows are dropped and it exits 1 naming the partition. The table then holds
// every record exactly once with every partition's txn at its end.
func TestGroupZombie(t *testing.T) {
	r := newGroupRig(t, 4)
	r.produce(400)
	z := r.start("z")
	r.waitRows(400, 60*time.Second, z)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				r.produce(20)
			}
		}
	}()
	time.Sleep(time.Second)
	sink, src := z.stagePID(t, "write-delta"), z.stagePID(t, "read-kafka")
	syscall.Kill(sink, syscall.SIGSTOP)
	time.Sleep(700 * time.Millisecond) // the source cuts epochs into the pipe meanwhile
	syscall.Kill(src, syscall.SIGSTOP)
	y := r.start("y")
	// y holds every partition once z's session (6 s) expired, and commits past z's txns.
	r.waitRows(int(r.produced.Load())+200, 60*time.Second, y)
	syscall.Kill(sink, syscall.SIGCONT)
	time.Sleep(2 * time.Second)
	syscall.Kill(src, syscall.SIGCONT)
	code := z.wait(t, 60*time.Second)
	close(stop)
	<-produced
	out := z.stderr.String()
	if code != 1 || !strings.Contains(out, "is not committed") || !strings.Contains(out, "zombie") {
		t.Fatalf("the resumed zombie: exit %d, want 1 with its late commit refused; stderr:\n%s", code, out)
	}
	r.waitRows(int(r.produced.Load()), 60*time.Second, y)
	y.signal(syscall.SIGINT)
	if code := y.wait(t, 60*time.Second); code != 130 {
		t.Fatalf("member y after SIGINT: exit %d, want 130; stderr:\n%s", code, y.stderr.String())
	}
	r.check()
	r.checkPeers()
}

// TestGroupNewMachineS3: the table is on the S3 test server and every member runs in an empty
// directory of its own: a second run, on "another machine", resumes every partition from the
// txn actions in the bucket alone and reads only the records produced since.
func TestGroupNewMachineS3(t *testing.T) {
	r := newGroupRig(t, 4)
	r.env = s3test.Env(t)
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	r.table = "s3://" + s3test.Bucket(t) + "/group/table"
	r.produce(400)
	a := r.start("a", "--until now")
	if code := a.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("member a: exit %d; stderr:\n%s", code, a.stderr.String())
	}
	r.check()
	r.produce(200)
	b := r.start("b", "--until now", "--progress=json")
	if code := b.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("member b: exit %d; stderr:\n%s", code, b.stderr.String())
	}
	if !strings.Contains(b.stderr.String(), `"partitions":4`) {
		t.Errorf("member b's progress does not show its 4 partitions:\n%s", b.stderr.String())
	}
	for p := 0; p < 4; p++ {
		want := fmt.Sprintf("partition=%d from=100 txn=99", p)
		if !strings.Contains(b.stderr.String(), want) {
			t.Errorf("member b did not resume partition %d from the bucket's txns (want %q in its log):\n%s", p, want, b.stderr.String())
		}
	}
	r.check()
}

// TestGroupChurn (make chaos-group; skipped unless $STREAMKIT_GROUP_CHURN gives the number of
// membership changes): 3 member slots on a 12-partition topic while $STREAMKIT_GROUP_RECORDS
// records (default 200000) are produced; members start, leave with SIGINT and are killed with
// kill -9 at random every 1–3 s. A member may also stop by itself in one of the two documented
// ways (its partitions lost, or its late commit refused); anything else fails. At the end one
// member drains the topic, and the table holds every record exactly once (streamkit, delta-rs,
// DuckDB) with every partition's txn at its end.
func TestGroupChurn(t *testing.T) {
	changes, _ := strconv.Atoi(os.Getenv("STREAMKIT_GROUP_CHURN"))
	if changes <= 0 {
		t.Skip("set STREAMKIT_GROUP_CHURN=N (make chaos-group) for N membership changes")
	}
	records := 200000
	if n, err := strconv.Atoi(os.Getenv("STREAMKIT_GROUP_RECORDS")); err == nil && n > 0 {
		records = n
	}
	r := newGroupRig(t, 12)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	t.Logf("%d membership changes, %d records", changes, records)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for int(r.produced.Load()) < records {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				r.produce(min(500, records-int(r.produced.Load())))
			}
		}
	}()
	var live []*member
	seq := 0
	stopped := func(m *member) bool {
		select {
		case <-m.done:
			return true
		default:
			return false
		}
	}
	// reap drops members that ended by themselves, checking that they ended as documented.
	reap := func() {
		keep := live[:0]
		for _, m := range live {
			if !stopped(m) {
				keep = append(keep, m)
				continue
			}
			out := m.stderr.String()
			if !strings.Contains(out, "lost its partitions") && !strings.Contains(out, "is not committed") {
				t.Fatalf("member %s stopped by itself (%v) in an undocumented way; stderr:\n%s", m.name, m.err, out)
			}
			t.Logf("member %s stopped by itself as documented", m.name)
		}
		live = keep
	}
	start := func() {
		seq++
		live = append(live, r.start(fmt.Sprintf("m%d", seq)))
	}
	counts := map[string]int{}
	for i := 0; i < changes; i++ {
		time.Sleep(time.Duration(1000+rng.Intn(2000)) * time.Millisecond)
		reap()
		action := rng.Intn(3)
		switch {
		case len(live) == 0:
			action = 0
		case len(live) >= 3 && action == 0:
			action = 1 + rng.Intn(2)
		}
		switch action {
		case 0:
			start()
			counts["join"]++
		case 1:
			k := rng.Intn(len(live))
			m := live[k]
			m.signal(syscall.SIGINT)
			if code := m.wait(t, 90*time.Second); code != 130 && code != 1 {
				t.Fatalf("member %s after SIGINT: exit %d; stderr:\n%s", m.name, code, m.stderr.String())
			}
			live = append(live[:k], live[k+1:]...)
			counts["leave"]++
		case 2:
			k := rng.Intn(len(live))
			live[k].signal(syscall.SIGKILL)
			live[k].wait(t, 10*time.Second)
			live = append(live[:k], live[k+1:]...)
			counts["kill -9"]++
		}
	}
	<-produced
	reap()
	if len(live) == 0 {
		start()
	}
	r.waitRows(records, 10*time.Minute, live...)
	for _, m := range live {
		m.signal(syscall.SIGINT)
	}
	for _, m := range live {
		m.wait(t, 90*time.Second)
	}
	t.Logf("membership changes: %v", counts)
	r.check()
	r.checkPeers()
}

// TestGroupTopicRecreated: a topic deleted and re-created with a longer log since the group's
// txn versions were committed. A member resumed at the old offsets and skipped the new topic's
// first records without a word (the txn actions hold no topic ID); now the progress table
// records the topic ID, the member fails with the data-loss error (--on-data-loss fail), and
// with --on-data-loss earliest it reads the new topic from its start.
func TestGroupTopicRecreated(t *testing.T) {
	r := newGroupRig(t, 1)
	r.produce(100)
	a := r.start("a", "--until now")
	if code := a.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("member a: exit %d; stderr:\n%s", code, a.stderr.String())
	}
	r.c.Recreate(t, r.topic, 1)
	recs := make([]*kgo.Record, 300) // ids 0..299 again, in a log longer than the old one
	for i := range recs {
		recs[i] = &kgo.Record{Topic: r.topic, Value: []byte(fmt.Sprintf(`{"id":%d}`, i))}
	}
	r.c.ProduceFresh(t, recs...) // a new client: the cached one knows the old topic ID
	b := r.start("b", "--until now")
	if code := b.wait(t, 90*time.Second); code != 1 || !strings.Contains(b.stderr.String(), "the topic was deleted and re-created") {
		t.Fatalf("member b on the re-created topic: exit %d, want 1 with the data-loss error; stderr:\n%s", code, b.stderr.String())
	}
	c := r.start("c", "--until now", "--on-data-loss earliest")
	if code := c.wait(t, 90*time.Second); code != 0 || !strings.Contains(c.stderr.String(), "DATA LOSS") {
		t.Fatalf("member c with --on-data-loss earliest: exit %d, want 0 with a warning; stderr:\n%s", code, c.stderr.String())
	}
	ids, _ := r.rows()
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for i := 0; i < 300; i++ {
		want := 1 // the new topic's records, each once
		if i < 100 {
			want = 2 // and the old topic's 0..99, committed before it was deleted
		}
		if k := seen[strconv.Itoa(i)]; k != want {
			t.Fatalf("id %d is in the table %d times, want %d (%d rows)", i, k, want, len(ids))
		}
	}
}
