package readkafka_test

// Static members (read-kafka --member I/N, docs/protocol.md §13): N copies of one pipeline,
// each with a checkpoint of its own, share a topic's partitions p mod N = I and write one Delta
// table, each write-delta as its own flow. Against the real broker (and the S3 test server);
// they skip without them unless STREAMKIT_REQUIRE_PEERS=1.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// staticKeys is the number of distinct keys of produceKeyed: record i has key k = i mod
// staticKeys, so records i, i+staticKeys, … are duplicates, and dedup keeps the first, i.
const staticKeys = 9000

// produceKeyed writes n more records {"id":i,"k":i mod staticKeys} (ids consecutive from the
// last) to partition k mod r.parts: the Kafka partitioning key is the dedup key, so all rows
// of one key reach one member.
func (r *groupRig) produceKeyed(n int) {
	from := int(r.produced.Load())
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		k := i % staticKeys
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: int32(k) % r.parts, Value: []byte(fmt.Sprintf(`{"id":%d,"k":%d}`, i, k))})
	}
	r.c.Produce(r.t, recs...)
	r.produced.Add(int64(n))
}

// startMember starts static member i of n, `read-kafka --member i/n | MID | write-delta
// TABLE SINK`, with STREAMKIT_CHECKPOINT=root (every stage's checkpoint below it) and extra
// read-kafka options; mid "" runs no stage in between.
func (r *groupRig) startMember(name string, i, n int, root, mid, sink string, extra ...string) *member {
	r.t.Helper()
	rk := fmt.Sprintf(`"$SK" --progress=off read-kafka -b %s -t %s --member %d/%d --value-format json --value-schema 'id BIGINT, k BIGINT' --columns 'value.*' --epoch-interval 300ms`,
		r.c.Brokers[0], r.topic, i, n)
	for _, e := range extra {
		rk += " " + e
	}
	if mid != "" {
		rk += ` | "$SK" --progress=off ` + mid
	}
	return r.launch(name, fmt.Sprintf(`set -o pipefail; %s | "$SK" --progress=off write-delta %s %s`, rk, r.table, sink), "STREAMKIT_CHECKPOINT="+root)
}

// checkIDs asserts that the table holds exactly the rows of ids want, each once.
func (r *groupRig) checkIDs(want []int) {
	r.t.Helper()
	ids, _ := r.rows()
	got := make([]int, len(ids))
	for i, s := range ids {
		got[i], _ = strconv.Atoi(s)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		r.t.Errorf("the table holds %d rows, want %d (ids %d..%d, each once); first difference at %d", len(got), len(want), want[0], want[len(want)-1], firstDiff(got, want))
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestStaticMembersS3: three static members `read-kafka --member I/3 | dedup --key k |
// write-delta s3://…` on a 6-partition topic, each with its checkpoints in the bucket, while
// 20000 records with 9000 distinct keys are produced. Member 1 is killed with kill -9 (its
// whole pipeline) mid-stream and restarted in a new empty directory, as on another machine,
// from its checkpoints in the bucket alone. The table then holds every key exactly once, with
// its first record (what dedup keeps), as streamkit, delta-rs and DuckDB read it, and one txn
// per member's flow.
func TestStaticMembersS3(t *testing.T) {
	r := newGroupRig(t, 6)
	s3env := s3test.Env(t)
	for _, kv := range s3env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	r.env = append(s3env, "STREAMKIT_LEASE_TTL=2s") // a killed member's leases expire soon
	bucket := s3test.Bucket(t)
	r.table = "s3://" + bucket + "/static/table"
	root := func(i int) string { return fmt.Sprintf("s3://%s/static/ckpt/member-%d", bucket, i) }
	const total = 20000
	r.produceKeyed(4000)
	ms := make([]*member, 3)
	for i := range ms {
		ms[i] = r.startMember(fmt.Sprintf("m%d", i), i, 3, root(i), "dedup --key k", "")
	}
	r.waitRows(2000, 90*time.Second, ms...)
	produced := make(chan struct{})
	go func() { // the rest while the members run, about 12 s
		defer close(produced)
		for int(r.produced.Load()) < total {
			time.Sleep(150 * time.Millisecond)
			r.produceKeyed(min(200, total-int(r.produced.Load())))
		}
	}()
	time.Sleep(2 * time.Second)
	ms[1].signal(syscall.SIGKILL)
	ms[1].wait(t, 10*time.Second)
	killedAt := r.produced.Load()
	time.Sleep(4 * time.Second) // past the 2 s lease TTL of its checkpoints and flow
	restartedAt := r.produced.Load()
	ms[1] = r.startMember("m1-again", 1, 3, root(1), "dedup --key k", "")
	<-produced
	t.Logf("member 1 killed after %d and restarted after %d of %d records were produced", killedAt, restartedAt, total)
	r.waitRows(staticKeys, 120*time.Second, ms...)
	time.Sleep(time.Second) // more rows would be duplicates: give them time to show
	for _, m := range ms {
		m.signal(syscall.SIGINT)
	}
	for _, m := range ms {
		if code := m.wait(t, 60*time.Second); code != 130 {
			t.Fatalf("member %s after SIGINT: exit %d, want 130; stderr:\n%s", m.name, code, m.stderr.String())
		}
	}
	if out := ms[1].stderr.String(); !strings.Contains(out, "restoring from checkpoint") || !strings.Contains(out, "partitions=") {
		t.Errorf("member 1 restarted did not resume from its checkpoints in the bucket; stderr:\n%s", out)
	}
	want := seq(0, staticKeys) // key k's first record is id k
	r.checkIDs(want)

	// Each member commits as its own flow: one txn per member, none clobbered by another.
	ctx := context.Background()
	store, err := storage.Open(ctx, r.table, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.OpenTable(store, memory.NewGoAllocator()).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if txns := snap.Txns(); len(txns) != 3 {
		t.Errorf("the table has %d txn appIds, want 3 (one flow per member): %v", len(txns), txns)
	}

	// delta-rs and DuckDB read the same rows: every key once, with the id of its first record
	// (DuckDB's DISTINCT over the produced keys, and more: the right row of each).
	for engine, res := range s3test.ReadTable(t, r.table, s3test.DeltaRS, s3test.DuckDB) {
		type row struct {
			ID int `json:"id"`
			K  int `json:"k"`
		}
		var ids []int
		keys := map[int]bool{}
		for _, js := range res.Rows {
			var x row
			if err := json.Unmarshal([]byte(js), &x); err != nil {
				t.Fatalf("%s row %s: %v", engine, js, err)
			}
			if x.K != x.ID%staticKeys {
				t.Errorf("%s: row %s has the wrong key", engine, js)
			}
			ids = append(ids, x.ID)
			keys[x.K] = true
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) || len(keys) != staticKeys {
			t.Errorf("%s reads %d rows with %d distinct keys, want %d rows, ids 0..%d (first difference at %d)", engine, len(ids), len(keys), staticKeys, staticKeys-1, firstDiff(ids, want))
		}
	}
}

// TestStaticMembersFlowAndCount: static members with --until now and local checkpoints.
// Two members given the same write-delta --flow would commit one txn appId from two
// checkpoints: the second is refused (exit 2) naming the owner's checkpoint, and with a flow
// of its own (generated, kept in its checkpoint) it writes its share. Each member continues
// from its checkpoint on the next run; the table holds every record once. A member restarted
// with another member count is refused (exit 2): its checkpoint holds another share.
func TestStaticMembersFlowAndCount(t *testing.T) {
	r := newGroupRig(t, 4)
	dir := t.TempDir()
	r.produce(600)
	run := func(name string, i, n int, ck, sink string) (int, string) {
		m := r.startMember(name, i, n, filepath.Join(dir, ck), "", sink, "--until now")
		return m.wait(t, 90*time.Second), m.stderr.String()
	}
	if code, out := run("m0", 0, 2, "m0", "--flow orders"); code != 0 {
		t.Fatalf("member 0/2: exit %d; stderr:\n%s", code, out)
	}
	if code, out := run("m1-same-flow", 1, 2, "m1-same-flow", "--flow orders"); code != 2 || !strings.Contains(out, "belongs to checkpoint") {
		t.Fatalf("member 1/2 with member 0/2's --flow: exit %d, want 2 with the flow's owner named; stderr:\n%s", code, out)
	}
	if code, out := run("m1", 1, 2, "m1", ""); code != 0 {
		t.Fatalf("member 1/2: exit %d; stderr:\n%s", code, out)
	}
	r.checkIDs(seq(0, 600))
	r.produce(200)
	for i := range 2 {
		sink := ""
		if i == 0 {
			sink = "--flow orders"
		}
		code, out := run(fmt.Sprintf("m%d-again", i), i, 2, fmt.Sprintf("m%d", i), sink)
		if code != 0 || !strings.Contains(out, "restoring from checkpoint") {
			t.Fatalf("member %d/2 again: exit %d, want 0 resuming from its checkpoint; stderr:\n%s", i, code, out)
		}
	}
	r.checkIDs(seq(0, 800))
	// read-kafka alone: in a pipeline the status would be the sink's (its input ended empty).
	_, out, err := streamkit(t, nil, "read-kafka", "-b", r.c.Brokers[0], "-t", r.topic, "--member", "0/3", "--until", "now",
		"--value-format", "json", "--value-schema", "id BIGINT, k BIGINT", "--columns", "value.*",
		"--checkpoint", filepath.Join(dir, "m0", "read-kafka"))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(out, `member: checkpoint has "0/2", this run has "0/3"`) || !strings.Contains(out, "new checkpoint") {
		t.Fatalf("member 0/2's checkpoint restarted as member 0/3: exit %d, want 2 naming both; stderr:\n%s", code, out)
	}
	r.checkIDs(seq(0, 800))
}

// TestStaticMembersNewPartitions: two live members of a 4-partition topic; two partitions are
// added while they run. Discovery gives partition 4 to member 0 and 5 to member 1 (p mod 2),
// no other partition moves, and the table holds every record once; each member's checkpoint
// holds the positions of its own partitions only, each at the partition's end.
func TestStaticMembersNewPartitions(t *testing.T) {
	r := newGroupRig(t, 4)
	dir := t.TempDir()
	r.produce(400)
	ms := make([]*member, 2)
	for i := range ms {
		ms[i] = r.startMember(fmt.Sprintf("m%d", i), i, 2, filepath.Join(dir, fmt.Sprintf("m%d", i)), "", "", "--discovery-interval 1s")
	}
	r.waitRows(400, 90*time.Second, ms...)
	ctx := context.Background()
	if _, err := r.c.Admin.CreatePartitions(ctx, 2, r.topic); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(r.c.Ends(t, r.topic)) < 6; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("topic %s does not show 6 partitions", r.topic)
		}
	}
	r.parts = 6
	recs := make([]*kgo.Record, 0, 600)
	for i := 400; i < 1000; i++ {
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: int32(i % 6), Value: []byte(fmt.Sprintf(`{"id":%d}`, i))})
	}
	r.c.ProduceFresh(t, recs...) // a new client: the cached one may not know the new partitions yet
	r.produced.Store(1000)
	r.waitRows(1000, 90*time.Second, ms...)
	time.Sleep(time.Second)
	for _, m := range ms {
		m.signal(syscall.SIGINT)
	}
	for _, m := range ms {
		if code := m.wait(t, 60*time.Second); code != 130 {
			t.Fatalf("member %s after SIGINT: exit %d, want 130; stderr:\n%s", m.name, code, m.stderr.String())
		}
	}
	r.checkIDs(seq(0, 1000))
	ends := r.c.Ends(t, r.topic)
	for i := range ms {
		root := filepath.Join(dir, fmt.Sprintf("m%d", i))
		out, stderr, err := streamkit(t, nil, "state-dump", filepath.Join(root, "read-kafka"), "--offsets", "--format", "json")
		if err != nil {
			t.Fatalf("state-dump %s: %v\n%s", root, err, stderr)
		}
		var got []int32
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var row struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Committed int64  `json:"committed"`
			}
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatalf("state-dump line %q: %v", line, err)
			}
			if row.Topic != r.topic || row.Committed != ends[row.Partition] {
				t.Errorf("member %d: state-dump row %s, want committed %d (the partition's end)", i, line, ends[row.Partition])
			}
			got = append(got, row.Partition)
		}
		slices.Sort(got)
		if want := []int32{int32(i), int32(i + 2), int32(i + 4)}; !slices.Equal(got, want) {
			t.Errorf("member %d/2's checkpoint holds partitions %v, want %v:\n%s", i, got, want, out)
		}
	}
}
