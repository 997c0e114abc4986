package delta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamkit/streamkit/storage"
)

// faultStore wraps a store and makes the next put-if-absent calls of commit files fail in the
// ways a bucket's can after the store's own retries: with an *storage.OpError after writing
// (the answer was lost), or without writing (the request was lost), optionally after another
// writer's commit took the version; and the next reads of commit files fail.
type faultStore struct {
	storage.Store
	mu sync.Mutex
	// plan is consumed one entry per put of a commit file: "wrote" (write, then fail),
	// "lost" (fail without writing), "raced" (another writer's commit lands, then fail),
	// "local" (fail without writing, with a non-storage error), "" (pass through).
	plan []string
	// readFails is how many reads of commit files fail (with an *storage.OpError).
	readFails int
	// rival is the commit that "raced" puts at the version.
	rival []byte
	puts  int // put-if-absent calls of commit files
}

func (f *faultStore) step() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if len(f.plan) == 0 {
		return ""
	}
	s := f.plan[0]
	f.plan = f.plan[1:]
	return s
}

func opErr(op, name string) error {
	return &storage.OpError{Op: op, URL: "s3://bucket/t/" + name, Tries: 6, Err: errors.New("read tcp: connection reset by peer")}
}

func (f *faultStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if !strings.HasPrefix(name, LogDir+"/") || !strings.HasSuffix(name, ".json") {
		return f.Store.PutIfAbsent(ctx, name, data)
	}
	switch f.step() {
	case "wrote":
		if err := f.Store.PutIfAbsent(ctx, name, data); err != nil {
			return err
		}
		return opErr("create", name)
	case "lost":
		return opErr("create", name)
	case "raced":
		if err := f.Store.PutIfAbsent(ctx, name, f.rival); err != nil {
			return err
		}
		return opErr("create", name)
	case "local":
		return fmt.Errorf("create %s: input/output error", name)
	}
	return f.Store.PutIfAbsent(ctx, name, data)
}

func (f *faultStore) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if strings.HasPrefix(name, LogDir+"/") && strings.HasSuffix(name, ".json") {
		f.mu.Lock()
		fail := f.readFails > 0
		if fail {
			f.readFails--
		}
		f.mu.Unlock()
		if fail {
			return nil, opErr("read", name)
		}
	}
	return f.Store.ReadFile(ctx, name)
}

// ambiguousTable creates a table at version 0 in a local store and returns it behind a
// faultStore, with its snapshot.
func ambiguousTable(t *testing.T) (*Table, *faultStore, *Snapshot) {
	t.Helper()
	mem := newMem(t)
	base, err := storage.Local(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	res := appendFile(t, OpenTable(base, mem), nil, &CreateOptions{}, simpleSchema)
	fs := &faultStore{Store: base}
	tbl := OpenTable(fs, mem)
	tbl.Now = fixedClock()
	tbl.Sleep = func(time.Duration) {}
	return tbl, fs, res.Snapshot
}

// commitAdds maps each commit version in the table's log to the paths it adds.
func commitAdds(t *testing.T, tbl *Table) map[int64][]string {
	t.Helper()
	vs, err := tbl.CommitVersions()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, v := range vs {
		acts, err := tbl.ReadCommit(v)
		if err != nil {
			t.Fatal(err)
		}
		out[v] = []string{}
		for _, a := range acts {
			if a.Add != nil {
				out[v] = append(out[v], a.Add.Path)
			}
		}
	}
	return out
}

// A commit whose outcome is unknown is resolved by reading the log, never by writing again
// blindly: each case ends with the commit in exactly one version, or in none with an error.
func TestCommitUnknownOutcome(t *testing.T) {
	add := []Add{{Path: "ours.parquet", PartitionValues: map[string]*string{}, Size: 1, ModificationTime: 1, DataChange: true}}
	for _, c := range []struct {
		name      string
		plan      []string
		readFails int
		txn       bool
		version   int64  // the version that must hold our commit; -1: none
		rival     int64  // the version that must hold the rival's commit; 0: none
		err       string // wanted error, when version is -1
		puts      int    // put-if-absent calls of commit files
	}{
		// The put landed but its answer was lost: the read-back finds our txnId.
		{name: "wrote, read back", plan: []string{"wrote"}, version: 1, puts: 1},
		// The put landed, and the read-back failed too: the same bytes are put again at the
		// same version, which finds it taken — by our own commit, recognised by its txnId
		// (a blind append would otherwise be committed again at version 2; with a txn it
		// would be reported as a concurrent writer of the same flow).
		{name: "wrote, read failed", plan: []string{"wrote"}, readFails: 1, version: 1, puts: 2},
		{name: "wrote, read failed, txn", plan: []string{"wrote"}, readFails: 1, txn: true, version: 1, puts: 2},
		// The request was lost: the version is free, the same bytes go to the same version.
		{name: "lost", plan: []string{"lost"}, version: 1, puts: 2},
		{name: "lost twice, read failed", plan: []string{"lost", "lost"}, readFails: 2, version: 1, puts: 3},
		// Another writer won the version meanwhile: a lost race, checked for conflicts, and
		// our commit goes to the next version.
		{name: "raced", plan: []string{"raced"}, txn: true, version: 2, rival: 1, puts: 2},
		// Never settled: give up with an error that says so, having written nothing.
		{name: "unsettled", plan: []string{"lost", "lost", "lost", "lost", "lost"}, readFails: 10, version: -1,
			err: "commit %s version 1: outcome unknown, not retried", puts: maxUnknownOutcomes + 1},
		// A local error (not a store error after retries) ends the commit as before.
		{name: "local error", plan: []string{"local"}, version: -1, err: "commit %s version 1: create _delta_log/00000000000000000001.json: input/output error", puts: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl, fs, s0 := ambiguousTable(t)
			fs.plan, fs.readFails = c.plan, c.readFails
			ctx := context.Background()
			if c.rival > 0 {
				ri := int64(0)
				rival, _ := encodeActions([]Action{{CommitInfo: &CommitInfo{Timestamp: 1, Operation: "WRITE", TxnID: "rival", ReadVersion: &ri}},
					{Txn: &Txn{AppID: "other", Version: 7}},
					{Add: &Add{Path: "rival.parquet", PartitionValues: map[string]*string{}, Size: 1, DataChange: true}}})
				fs.rival = rival
			}
			req := CommitRequest{Read: s0, Adds: add}
			if c.txn {
				req.Txn = &Txn{AppID: "flow", Version: 1}
			}
			res, err := tbl.Commit(ctx, req)
			if c.version < 0 {
				if want := fmt.Sprintf(c.err, tbl.Root()); err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want %q", err, want)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.Version != c.version {
				t.Fatalf("committed at version %d, want %d", res.Version, c.version)
			}
			fs.readFails = 0
			want := map[int64][]string{0: {"part-00000.snappy.parquet"}}
			if c.rival > 0 {
				want[c.rival] = []string{"rival.parquet"}
			}
			if c.version >= 0 {
				want[c.version] = []string{"ours.parquet"}
			}
			if got := commitAdds(t, tbl); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("log holds %v, want %v", got, want)
			}
			if fs.puts != c.puts {
				t.Errorf("%d puts of commit files, want %d", fs.puts, c.puts)
			}
			if c.version >= 0 {
				if n := res.Snapshot.NumFiles(); n != len(want) {
					t.Errorf("snapshot after the commit has %d files, want %d", n, len(want))
				}
				if c.txn {
					if v, ok := res.Snapshot.TxnVersion("flow"); !ok || v != 1 {
						t.Errorf("txn version %d %v", v, ok)
					}
				}
			}
		})
	}
}
