package delta

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// The log on a bucket: the tests below run the log operations against the real S3-compatible
// server of scripts/s3.sh (internal/s3test), each in a fresh bucket.

// holdFlowEnv makes the test binary a flow lock holder (see TestMain): it takes the lock of
// flow "f1" in the table at the URL the variable names, prints "held" and waits to be killed.
const holdFlowEnv = "STREAMKIT_DELTA_TEST_HOLD_FLOW"

func TestMain(m *testing.M) {
	if u := os.Getenv(holdFlowEnv); u != "" {
		holdFlow(u)
		return
	}
	os.Exit(m.Run())
}

func holdFlow(u string) {
	ctx := context.Background()
	s, err := storage.Open(ctx, u, storage.Options{})
	if err == nil {
		_, err = OpenTable(s, nil).LockFlow(ctx, "f1", 0, FlowHolder{Tool: "holder"})
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	select {}
}

// s3Store opens a fresh bucket's prefix lake/<name> as a store.
func s3Store(t *testing.T, bucket, name string) storage.Store {
	t.Helper()
	s, err := storage.Open(context.Background(), "s3://"+bucket+"/lake/"+name, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// s3Table is a table at s3://<fresh bucket>/lake/t and the bucket's name.
func s3Table(t *testing.T, mem memory.Allocator) (*Table, string) {
	t.Helper()
	s3test.Server(t)
	bucket := s3test.Bucket(t)
	tbl := OpenTable(s3Store(t, bucket, "t"), mem)
	tbl.EngineInfo = "streamkit/test"
	return tbl, bucket
}

// commitEpoch commits one add with txn {flow, v} after read (creating the table from props
// when read is nil).
func commitEpoch(t *testing.T, tbl *Table, read *Snapshot, props map[string]string, flow string, v int64) *CommitResult {
	t.Helper()
	req := CommitRequest{Read: read, Txn: &Txn{AppID: flow, Version: v}, Adds: []Add{{Path: fmt.Sprintf("part-%05d.snappy.parquet", v),
		PartitionValues: map[string]*string{}, Size: 512, ModificationTime: 1, DataChange: true, Stats: `{"numRecords":2}`}}}
	if read == nil {
		p, m, err := NewTableMetadata(simpleSchema, CreateOptions{Configuration: props})
		if err != nil {
			t.Fatal(err)
		}
		req.Protocol, req.Metadata = p, m
	}
	res, err := tbl.Commit(context.Background(), req)
	if err != nil {
		t.Fatalf("commit %d: %v", v, err)
	}
	if res.CheckpointErr != nil || res.LogCleanupErr != nil {
		t.Fatalf("commit %d: checkpoint %v, cleanup %v", v, res.CheckpointErr, res.LogCleanupErr)
	}
	return res
}

// Commits and snapshots on the bucket; the checkpoint at version 10 and `_last_checkpoint`
// are written there, read back by a new store once the commits before it are gone, and read
// by delta-rs from the bucket.
func TestS3CommitSnapshotCheckpoint(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, bucket := s3Table(t, mem)
	if ok, err := tbl.Exists(); ok || err != nil {
		t.Fatalf("Exists before the first commit = %v, %v", ok, err)
	}
	if _, err := tbl.Snapshot(ctx); !errors.Is(err, ErrNotATable) {
		t.Fatalf("snapshot of an empty prefix: %v", err)
	}
	if _, err := tbl.CommitVersions(); !errors.Is(err, ErrNotATable) {
		t.Fatalf("CommitVersions of an empty prefix: %v", err)
	}
	var s *Snapshot
	for v := int64(0); v <= 11; v++ {
		res := commitEpoch(t, tbl, s, nil, "flow", v)
		if res.Version != v || res.Attempts != 1 || res.Checkpointed != (v == 10) {
			t.Fatalf("commit %d: version %d, %d attempts, checkpointed %v", v, res.Version, res.Attempts, res.Checkpointed)
		}
		s = res.Snapshot
	}
	if ok, err := tbl.Exists(); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	lc, err := tbl.ReadLastCheckpoint()
	if err != nil || lc.Version != 10 || lc.Size != 2+1+11 || lc.NumOfAddFiles == nil || *lc.NumOfAddFiles != 11 {
		t.Fatalf("_last_checkpoint %+v, %v", lc, err)
	}
	st, err := tbl.Store().Stat(ctx, LogDir+"/"+CheckpointFileName(10))
	if err != nil || st.Size != lc.SizeInBytes {
		t.Fatalf("checkpoint object %+v, %v; _last_checkpoint says %d bytes", st, err, lc.SizeInBytes)
	}
	// Without the commits before it, only the checkpoint can give versions 10 and 11.
	for v := int64(0); v < 10; v++ {
		if err := tbl.Store().Remove(ctx, LogDir+"/"+CommitFileName(v)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := OpenTable(s3Store(t, bucket, "t"), mem)
	for v, want := range map[int64]int64{-1: 11, 10: 10} {
		got, err := fresh.SnapshotAt(ctx, v)
		if err != nil {
			t.Fatalf("snapshot at %d from the checkpoint: %v", v, err)
		}
		if tv, _ := got.TxnVersion("flow"); got.Version() != want || got.NumFiles() != int(want+1) || tv != want {
			t.Fatalf("snapshot at %d: version %d, %d files, txn %d", v, got.Version(), got.NumFiles(), tv)
		}
	}
	if vr, err := fresh.Versions(); err != nil || vr != (LogVersions{Earliest: 10, Latest: 11}) {
		t.Fatalf("Versions = %+v, %v", vr, err)
	}
	// An Update of the old snapshot after a commit by the other table object.
	res := commitEpoch(t, fresh, s, nil, "flow", 12)
	if up, err := s.Update(ctx); err != nil || up.Version() != 12 || up.NumFiles() != 13 {
		t.Fatalf("update: %v, %v", up, err)
	}
	if res.Version != 12 {
		t.Fatalf("commit 12 at version %d", res.Version)
	}
	// delta-rs reads the table from the bucket, from the checkpoint on: latest version, its
	// files and the flow's txn version, and version 10.
	py := peertest.Python(t)
	out := peertest.RunPython(t, py, deltaRSScript, "s3://"+bucket+"/lake/t")
	var got struct {
		Version int64    `json:"version"`
		Files   []string `json:"files"`
		Txn     int64    `json:"txn"`
		Files10 int      `json:"files10"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("delta-rs output %q: %v", out, err)
	}
	var want []string
	for v := int64(0); v <= 12; v++ {
		want = append(want, fmt.Sprintf("part-%05d.snappy.parquet", v))
	}
	if got.Version != 12 || !slices.Equal(got.Files, want) || got.Txn != 12 || got.Files10 != 11 {
		t.Fatalf("delta-rs read %+v", got)
	}
}

// deltaRSScript loads the table at argv[1] with delta-rs, with the server's endpoint and keys
// from the environment (never argv), and prints its version, file names, the txn version of
// flow "flow" and the number of files at version 10.
const deltaRSScript = `
import json, os, sys
import deltalake
opts = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
opts["AWS_ALLOW_HTTP"] = "true"
dt = deltalake.DeltaTable(sys.argv[1], storage_options=opts)
out = {"version": dt.version(), "files": sorted(u.rsplit("/", 1)[1] for u in dt.file_uris()),
       "txn": dt.transaction_version("flow")}
dt.load_as_version(10)
out["files10"] = len(dt.file_uris())
print(json.dumps(out))
`

// raceResult is one racing writer's outcome.
type raceResult struct {
	res *CommitResult
	err error
}

// race commits from n writers at once, each with its own store and table reading the latest
// snapshot, writer i with txn {flows[i], txnVersion} and one add named after it.
func race(t *testing.T, bucket string, mem memory.Allocator, flows []string, txnVersion int64) []raceResult {
	t.Helper()
	ctx := context.Background()
	out := make([]raceResult, len(flows))
	reqs := make([]CommitRequest, len(flows))
	tables := make([]*Table, len(flows))
	for i, f := range flows {
		tables[i] = OpenTable(s3Store(t, bucket, "t"), mem)
		s, err := tables[i].Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = CommitRequest{Read: s, Txn: &Txn{AppID: f, Version: txnVersion}, Adds: []Add{{Path: fmt.Sprintf("w%d-%d.parquet", i, txnVersion),
			PartitionValues: map[string]*string{}, Size: 1, ModificationTime: 1, DataChange: true}}}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i].res, out[i].err = tables[i].Commit(ctx, reqs[i])
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// Four writers race for one version on the bucket: exactly one wins it, the others lose the
// put-if-absent, check the commits that won for conflicts and land on the following versions.
// Then two of four share a flow: the later of them conflicts (a concurrent txn for its appId).
func TestS3CommitRace(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, bucket := s3Table(t, mem)
	commitEpoch(t, tbl, nil, nil, "setup", 0)
	got := race(t, bucket, mem, []string{"a", "b", "c", "d"}, 1)
	versions := map[int64]int{}
	firstTry := 0
	for i, r := range got {
		if r.err != nil {
			t.Fatalf("writer %d: %v", i, r.err)
		}
		versions[r.res.Version] = i
		if r.res.Attempts == 1 {
			firstTry++
			if r.res.Version != 1 {
				t.Errorf("writer %d committed version %d at its first attempt", i, r.res.Version)
			}
		}
	}
	if len(versions) != 4 || firstTry != 1 {
		t.Fatalf("versions %v, %d writers succeeded at the first attempt", versions, firstTry)
	}
	for v := int64(1); v <= 4; v++ {
		i, ok := versions[v]
		if !ok {
			t.Fatalf("no writer committed version %d: %v", v, versions)
		}
		acts, err := tbl.ReadCommit(v)
		if err != nil {
			t.Fatal(err)
		}
		var adds []string
		for _, a := range acts {
			if a.Add != nil {
				adds = append(adds, a.Add.Path)
			}
		}
		if want := fmt.Sprintf("w%d-1.parquet", i); !slices.Equal(adds, []string{want}) {
			t.Errorf("version %d adds %v, want the reporting writer's %s", v, adds, want)
		}
		if got[i].res.Snapshot.Version() != v || got[i].res.Snapshot.NumFiles() != int(v+1) {
			t.Errorf("writer %d: snapshot after the commit: version %d, %d files", i, got[i].res.Snapshot.Version(), got[i].res.Snapshot.NumFiles())
		}
	}
	// Round two: flows x, dup, dup, y.
	got = race(t, bucket, mem, []string{"x", "dup", "dup", "y"}, 2)
	conflicts, wins := 0, 0
	for i, r := range got {
		var ce *ConflictError
		switch {
		case r.err == nil:
			wins++
		case (i == 1 || i == 2) && errors.As(r.err, &ce) && ce.Kind == ConflictTransaction:
			conflicts++
		default:
			t.Fatalf("writer %d: %v", i, r.err)
		}
	}
	if wins != 3 || conflicts != 1 {
		t.Fatalf("%d commits, %d conflicts; want 3 and 1 (one of the two writers of flow dup)", wins, conflicts)
	}
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 7 || s.NumFiles() != 8 {
		t.Fatalf("final snapshot: version %d, %d files", s.Version(), s.NumFiles())
	}
	for _, f := range []string{"a", "b", "c", "d", "x", "dup", "y"} {
		want := int64(1)
		if f == "x" || f == "dup" || f == "y" {
			want = 2
		}
		if v, ok := s.TxnVersion(f); !ok || v != want {
			t.Errorf("txn version of %s: %d %v", f, v, ok)
		}
	}
}

// Log cleanup on the bucket: version times are the objects' modification times (the server's
// clock), so the table's clock is moved five days ahead instead of ageing files.
func TestS3CleanupLog(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, _ := s3Table(t, mem)
	var s *Snapshot
	for v := int64(0); v <= 12; v++ { // checkpoints 5 and 10
		s = commitEpoch(t, tbl, s, map[string]string{"delta.logRetentionDuration": "interval 2 days", "delta.checkpointInterval": "5"}, "f", v).Snapshot
	}
	if got, err := tbl.CleanupLog(ctx, -1, false); err != nil || len(got.Files) != 0 || got.Checkpoint != -1 {
		t.Fatalf("cleanup within retention: %+v, %v", got, err)
	}
	tbl.Now = func() time.Time { return time.Now().Add(5 * 24 * time.Hour) }
	dry, err := tbl.CleanupLog(ctx, -1, true)
	if err != nil || dry.Checkpoint != 10 || len(dry.Files) != 11 || dry.Files[0] != CommitFileName(0) {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if vs, _ := tbl.CommitVersions(); len(vs) != 13 {
		t.Fatalf("the dry run deleted commits: %v", vs)
	}
	res, err := tbl.CleanupLog(ctx, -1, false)
	if err != nil || res.Checkpoint != 10 || !slices.Equal(res.Files, dry.Files) {
		t.Fatalf("cleanup: %+v, %v", res, err)
	}
	var names []string
	if err := tbl.Store().Walk(ctx, LogDir, func(in storage.Info) error { names = append(names, in.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{CommitFileName(10), CheckpointFileName(10), CommitFileName(11), CommitFileName(12), LastCheckpointName}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("log after cleanup:\n got %v\nwant %v", names, want)
	}
	for v := int64(10); v <= 12; v++ {
		if _, err := tbl.SnapshotAt(ctx, v); err != nil {
			t.Errorf("version %d after cleanup: %v", v, err)
		}
	}
	if _, err := tbl.SnapshotAt(ctx, 9); err == nil || !strings.Contains(err.Error(), "the log before version 10 was cleaned up") {
		t.Errorf("version 9 after cleanup: %v", err)
	}
}

// Versions and time travel on the bucket: by version, and by timestamp against the objects'
// modification times (whole seconds on some servers, hence the pauses).
func TestS3VersionsTimeTravel(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, _ := s3Table(t, mem)
	before := time.Now().Add(-time.Hour)
	s := commitEpoch(t, tbl, nil, nil, "f", 0).Snapshot
	s = commitEpoch(t, tbl, s, nil, "f", 1).Snapshot
	time.Sleep(1200 * time.Millisecond)
	mid := time.Now()
	time.Sleep(1200 * time.Millisecond)
	s = commitEpoch(t, tbl, s, nil, "f", 2).Snapshot
	commitEpoch(t, tbl, s, nil, "f", 3)
	if vr, err := tbl.Versions(); err != nil || vr != (LogVersions{Earliest: 0, Latest: 3}) {
		t.Fatalf("Versions = %+v, %v", vr, err)
	}
	if ok, err := tbl.CommitExists(3); !ok || err != nil {
		t.Fatalf("CommitExists(3) = %v, %v", ok, err)
	}
	if ok, err := tbl.CommitExists(4); ok || err != nil {
		t.Fatalf("CommitExists(4) = %v, %v", ok, err)
	}
	if _, err := tbl.ReadCommit(4); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadCommit(4) = %v", err)
	}
	s2, err := tbl.SnapshotAt(ctx, 2)
	if tv, _ := s2.TxnVersion("f"); err != nil || s2.Version() != 2 || s2.NumFiles() != 3 || tv != 2 {
		t.Fatalf("snapshot at 2: %v", err)
	}
	for _, c := range []struct {
		at   time.Time
		want int64
	}{{mid, 1}, {time.Now().Add(time.Hour), 3}} {
		if got, err := tbl.VersionAt(ctx, c.at); err != nil || got != c.want {
			t.Errorf("VersionAt(%s) = %d, %v; want %d", c.at.Format(time.RFC3339Nano), got, err, c.want)
		}
	}
	if _, err := tbl.VersionAt(ctx, before); err == nil || !strings.Contains(err.Error(), "before the earliest available version 0") {
		t.Errorf("VersionAt(an hour before) = %v", err)
	}
}

// leaseGenerations lists the generation numbers of a flow's lease.
func leaseGenerations(t *testing.T, s storage.Store, flow string) []int64 {
	t.Helper()
	ents, err := s.ReadDir(context.Background(), FlowLockDir+"/"+flow+".lease")
	if err != nil {
		t.Fatal(err)
	}
	var gs []int64
	for _, e := range ents {
		if g, err := strconv.ParseInt(strings.TrimSuffix(e.Name, ".json"), 10, 64); err == nil {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

// Flow locks on a bucket are leases: a second owner is refused while the first holds the flow,
// the record keeps the binding for the next holder, a run that made no table leaves no record,
// and a lease taken over by another process is reported as lost.
func TestS3FlowLock(t *testing.T) {
	t.Setenv("STREAMKIT_LEASE_TTL", "3s")
	ctx := context.Background()
	tbl, bucket := s3Table(t, nil)
	other := OpenTable(s3Store(t, bucket, "t"), nil)
	a, err := tbl.LockFlow(ctx, "f1", 0, FlowHolder{Tool: "write-delta", Checkpoint: "s3://ck/dedup"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Lost() == nil || a.Err() != nil {
		t.Fatalf("a held lease: Lost %v, Err %v", a.Lost(), a.Err())
	}
	_, err = other.LockFlow(ctx, "f1", 0, FlowHolder{Tool: "backfill"})
	var busy *FlowBusyError
	if !errors.As(err, &busy) || busy.Holder.Tool != "write-delta" || busy.Holder.PID != os.Getpid() || busy.Left <= 0 {
		t.Fatalf("second owner: %v (%+v)", err, busy)
	}
	root := "s3://" + bucket + "/lake/t"
	for _, want := range []string{`flow "f1" of table ` + root + " is in use by write-delta (pid ", "checkpoint s3://ck/dedup",
		"the lease " + root + "/_streamkit/flows/f1.lease (valid for "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("busy message %q lacks %q", err, want)
		}
	}
	// Waiting: refused after the wait, not before.
	t0 := time.Now()
	if _, err := other.LockFlow(ctx, "f1", 1500*time.Millisecond, FlowHolder{}); !errors.As(err, &busy) || time.Since(t0) < 1500*time.Millisecond {
		t.Fatalf("waiting second owner after %s: %v", time.Since(t0), err)
	}
	owner := &FlowOwner{Checkpoint: "s3://ck/dedup", CheckpointID: "ck-1", Since: time.Now().UTC().Truncate(time.Second)}
	if err := a.Bind("table-id", owner); err != nil {
		t.Fatal(err)
	}
	a.Release()
	b, err := other.LockFlow(ctx, "f1", 0, FlowHolder{Tool: "backfill"})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if b.Prev.TableID != "table-id" || b.Prev.Owner == nil || *b.Prev.Owner != *owner || b.Prev.Holder.Tool != "write-delta" {
		t.Fatalf("record seen by the next holder: %+v", b.Prev)
	}
	if b.Record().Holder.Tool != "backfill" || b.Record().Owner == nil {
		t.Fatalf("record of the new holder: %+v", b.Record())
	}
	b.Finish() // the prefix holds no table: the record goes
	if _, err := tbl.Store().Stat(ctx, FlowLockDir+"/f1.lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("record after Finish without a table: %v", err)
	}

	// Taken over: another process writes the lease's next generation.
	c, err := tbl.LockFlow(ctx, "f2", 0, FlowHolder{Tool: "write-delta"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	rec, _ := json.Marshal(storage.LeaseRecord{Owner: "intruder", Host: "elsewhere", PID: 1, RenewedMs: time.Now().UnixMilli(), TTLMs: 3000})
	for {
		gs := leaseGenerations(t, tbl.Store(), "f2")
		err := tbl.Store().PutIfAbsent(ctx, fmt.Sprintf("%s/f2.lease/%020d.json", FlowLockDir, gs[len(gs)-1]+1), rec)
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrExist) {
			t.Fatal(err)
		}
	}
	select {
	case <-c.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("a lease taken over was not reported lost")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "taken over by another process") {
		t.Fatalf("Err = %v", err)
	}
	if err := c.Bind("table-id", nil); err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Fatalf("Bind after the loss: %v", err)
	}
}

// A holder killed with SIGKILL keeps the flow until its lease expires; then the next process
// takes it over, and sees the killed holder in the record.
func TestS3FlowLockExpiry(t *testing.T) {
	t.Setenv("STREAMKIT_LEASE_TTL", "3s")
	ctx := context.Background()
	tbl, bucket := s3Table(t, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdFlowEnv+"=s3://"+bucket+"/lake/t")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("holder: %q, %v", line, err)
	}
	var busy *FlowBusyError
	if _, err := tbl.LockFlow(ctx, "f1", 0, FlowHolder{Tool: "write-delta"}); !errors.As(err, &busy) ||
		busy.Holder.PID != cmd.Process.Pid || busy.Holder.Tool != "holder" {
		t.Fatalf("while the holder runs: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	if _, err := tbl.LockFlow(ctx, "f1", 0, FlowHolder{Tool: "write-delta"}); !errors.As(err, &busy) {
		t.Fatalf("right after the kill, before the lease expired: %v", err)
	}
	l, err := tbl.LockFlow(ctx, "f1", 15*time.Second, FlowHolder{Tool: "write-delta"})
	if err != nil {
		t.Fatalf("after the lease expired: %v", err)
	}
	defer l.Release()
	took := time.Since(killed)
	if l.Prev.Holder.PID != cmd.Process.Pid || l.Prev.Holder.Tool != "holder" {
		t.Fatalf("record before the takeover: %+v", l.Prev)
	}
	t.Logf("taken over %s after the kill (TTL 3s)", took.Round(10*time.Millisecond))
}

// A table delta-rs writes to the bucket — twelve appends and its own checkpoint — is read by
// this package from the bucket, also from delta-rs' checkpoint alone once the commits before
// it are deleted.
func TestS3ReadsDeltaRSTable(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, bucket := s3Table(t, mem)
	py := peertest.Python(t)
	peertest.RunPython(t, py, deltaRSWriteScript, "s3://"+bucket+"/lake/t")
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 11 || s.NumFiles() != 12 || s.Schema().Fields[0].Name != "id" {
		t.Fatalf("delta-rs table: version %d, %d files", s.Version(), s.NumFiles())
	}
	if s5, err := tbl.SnapshotAt(ctx, 5); err != nil || s5.NumFiles() != 6 {
		t.Fatalf("version 5: %v", err)
	}
	if _, err := tbl.Store().Stat(ctx, LogDir+"/"+CheckpointFileName(11)); err != nil {
		t.Fatalf("delta-rs wrote no checkpoint at 11: %v", err)
	}
	for v := int64(0); v < 11; v++ {
		if err := tbl.Store().Remove(ctx, LogDir+"/"+CommitFileName(v)); err != nil {
			t.Fatal(err)
		}
	}
	s, err = OpenTable(s3Store(t, bucket, "t"), mem).Snapshot(ctx)
	if err != nil || s.Version() != 11 || s.NumFiles() != 12 {
		t.Fatalf("from delta-rs' checkpoint: %v", err)
	}
	for _, f := range s.Files() {
		if f.Size <= 0 || f.NumRecords() != 10 {
			t.Fatalf("file from the checkpoint: %+v", f)
		}
	}
}

// deltaRSWriteScript appends twelve batches of ten rows to the table at argv[1] with delta-rs
// and checkpoints it (the server's endpoint and keys from the environment).
const deltaRSWriteScript = `
import os, sys
import pyarrow as pa
import deltalake
opts = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
opts["AWS_ALLOW_HTTP"] = "true"
opts["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
for i in range(12):
    t = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "v": pa.array([float(i)] * 10)})
    deltalake.write_deltalake(sys.argv[1], t, mode="append", storage_options=opts)
deltalake.DeltaTable(sys.argv[1], storage_options=opts).create_checkpoint()
`
