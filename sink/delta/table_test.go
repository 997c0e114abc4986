package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/delta"
)

var simpleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

func simpleRec(t testing.TB, mem memory.Allocator, ids ...int) arrow.RecordBatch {
	t.Helper()
	var rows []string
	for _, id := range ids {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"part":"p%d","v":%d.5}`, id, id%3, id))
	}
	return recFromJSON(t, mem, simpleSchema, "["+strings.Join(rows, ",")+"]")
}

func newTestTable(t testing.TB, mem memory.Allocator) *delta.Table {
	tbl := delta.NewTable(t.TempDir(), mem)
	tbl.Now = fixedClock()
	tbl.EngineInfo = "streamkit/test"
	return tbl
}

// readAllRows reads every live data file of s with pqarrow and returns the total row count.
func readAllRows(t *testing.T, s *delta.Snapshot, mem memory.Allocator) int64 {
	t.Helper()
	var n int64
	for _, a := range s.Files() {
		p, err := delta.DecodePath(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := file.OpenParquetFile(filepath.Join(s.Root(), filepath.FromSlash(p)), false)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, fld := range tbl.Schema().Fields() {
			for _, pc := range s.PartitionColumns() {
				if fld.Name == pc {
					t.Errorf("partition column %s stored in data file %s", pc, p)
				}
			}
		}
		if st, _ := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(p))); st.Size() != a.Size {
			t.Errorf("%s: size %d, logged %d", p, st.Size(), a.Size)
		}
		if got := a.NumRecords(); got != tbl.NumRows() {
			t.Errorf("%s: stats numRecords %d, file has %d rows", p, got, tbl.NumRows())
		}
		n += tbl.NumRows()
		tbl.Release()
		f.Close()
	}
	return n
}

func TestCreateAppendReadBack(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	r1 := simpleRec(t, mem, 1, 2, 3, 4, 5, 6)
	defer r1.Release()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"part"}}, simpleSchema, WriterOptions{Allocator: mem}, nil, r1)
	if res.Version != 0 || res.Snapshot.NumFiles() != 3 {
		t.Fatalf("create: version %d, %d files", res.Version, res.Snapshot.NumFiles())
	}
	r2 := simpleRec(t, mem, 7, 8)
	defer r2.Release()
	appendBatches(t, tbl, res.Snapshot, nil, simpleSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "flow", Version: 1}, r2)
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 1 || s.NumFiles() != 5 {
		t.Fatalf("snapshot: version %d, %d files", s.Version(), s.NumFiles())
	}
	if v, ok := s.TxnVersion("flow"); !ok || v != 1 {
		t.Errorf("TxnVersion = %d, %v", v, ok)
	}
	if got := readAllRows(t, s, mem); got != 8 {
		t.Errorf("rows = %d, want 8", got)
	}
	for _, a := range s.Files() {
		if !strings.HasPrefix(a.Path, "part=p") || *a.PartitionValues["part"] != a.Path[5:7] {
			t.Errorf("add path %q partition values %v", a.Path, a.PartitionValues)
		}
	}
	// Commit 1's lines: commitInfo first, then txn, then adds; stats is a string.
	b, _ := os.ReadFile(filepath.Join(tbl.Root(), delta.LogDir, delta.CommitFileName(1)))
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if !strings.HasPrefix(lines[0], `{"commitInfo":`) || !strings.HasPrefix(lines[1], `{"txn":{"appId":"flow","version":1,"lastUpdated":`) {
		t.Errorf("commit 1 lines:\n%s", b)
	}
	var ci struct {
		CommitInfo map[string]any `json:"commitInfo"`
	}
	_ = json.Unmarshal([]byte(lines[0]), &ci)
	if ci.CommitInfo["readVersion"] != 0.0 || ci.CommitInfo["isBlindAppend"] != true || ci.CommitInfo["engineInfo"] != "streamkit/test" {
		t.Errorf("commitInfo: %v", ci.CommitInfo)
	}
	for k, v := range ci.CommitInfo["operationParameters"].(map[string]any) {
		if _, ok := v.(string); !ok {
			t.Errorf("operationParameters[%s] = %v is not a string", k, v)
		}
	}
	var add struct {
		Add map[string]any `json:"add"`
	}
	_ = json.Unmarshal([]byte(lines[2]), &add)
	if _, ok := add.Add["stats"].(string); !ok {
		t.Errorf("add.stats is not a string: %v", add.Add["stats"])
	}
}

func TestRollsFilesAtTargetSize(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	var recs []arrow.RecordBatch
	for i := 0; i < 20; i++ {
		ids := make([]int, 500)
		for j := range ids {
			ids[j] = i*500 + j*3 // one partition (id%3 == 0) per batch... all "p0"
		}
		recs = append(recs, simpleRec(t, mem, ids...))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, simpleSchema,
		WriterOptions{Allocator: mem, TargetFileSize: 16 << 10, RowGroupSize: 4 << 10, Compression: "zstd"}, nil, recs...)
	if res.Snapshot.NumFiles() < 3 {
		t.Errorf("expected several rolled files, got %d", res.Snapshot.NumFiles())
	}
	if got := readAllRows(t, res.Snapshot, mem); got != 10000 {
		t.Errorf("rows = %d", got)
	}
	for _, a := range res.Snapshot.Files() {
		if !strings.HasSuffix(a.Path, ".zstd.parquet") {
			t.Errorf("file name %s", a.Path)
		}
	}
}

// TestRollsFilesNearTargetSize: with the default row group size (far above the target), files
// still come out close to the target size (the encoded size of collected rows is measured
// before a file is closed), not at the target's Arrow size.
func TestRollsFilesNearTargetSize(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	var recs []arrow.RecordBatch
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 40; i++ {
		// Few ids and parts (dictionary-encoded: ~1 byte a row), random doubles (8 bytes):
		// about 10 bytes of Parquet per ~22 bytes of Arrow.
		var rows []string
		for j := 0; j < 2000; j++ {
			rows = append(rows, fmt.Sprintf(`{"id":%d,"part":"p%d","v":%v}`, j%50, j%3, rng.Float64()))
		}
		recs = append(recs, recFromJSON(t, mem, simpleSchema, "["+strings.Join(rows, ",")+"]"))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	const target = 32 << 10
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, simpleSchema, WriterOptions{Allocator: mem, TargetFileSize: target}, nil, recs...)
	files := res.Snapshot.Files()
	if len(files) < 2 {
		t.Fatalf("%d files, want several", len(files))
	}
	small := 0
	for _, a := range files {
		if a.Size < target/2 {
			small++
		}
	}
	if small > 1 { // the last file may be small
		t.Errorf("%d of %d files below half the target size", small, len(files))
	}
	if got := readAllRows(t, res.Snapshot, mem); got != 80000 {
		t.Errorf("rows = %d", got)
	}
}

func TestTimestampPrecision(t *testing.T) {
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true}}, nil)
	rec := recFromJSON(t, mem, sc, `[{"ts":1706702400123456789}]`)
	defer rec.Release()
	_, meta, err := delta.NewTableMetadata(sc, delta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, _ := NewDataWriter(delta.NewTable(dir, nil).Store(), meta, WriterOptions{Allocator: mem})
	if err := w.Write(rec); err == nil || !strings.Contains(err.Error(), "column ts") {
		t.Errorf("nanosecond digits accepted: %v", err)
	}
	w.Abort()
	w, _ = NewDataWriter(delta.NewTable(dir, nil).Store(), meta, WriterOptions{Allocator: mem, TruncateTimestamps: true})
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(adds[0].Stats, `"ts":"2024-01-31T12:00:00.123Z"`) {
		t.Errorf("stats %s", adds[0].Stats)
	}
}

func TestConcurrentBlindAppends(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	tbl.Now = nil
	r := simpleRec(t, mem, 0)
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{Configuration: map[string]string{"delta.checkpointInterval": "5"}}, simpleSchema, WriterOptions{Allocator: mem}, nil, r)
	r.Release()
	base := res.Snapshot
	const writers, each = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	var mu sync.Mutex
	versions := map[int64]bool{}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ttbl := delta.NewTable(tbl.Root(), mem)
			ttbl.Sleep = func(time.Duration) {}
			read := base // all start from version 0: every writer but one must retry
			for i := 0; i < each; i++ {
				id := 1 + w*each + i
				rec := simpleRec(t, mem, id)
				dw, err := NewDataWriter(tbl.Store(), read.Metadata(), WriterOptions{Allocator: mem})
				if err == nil {
					err = dw.Write(rec)
				}
				rec.Release()
				if err != nil {
					errs <- err
					return
				}
				adds, err := dw.Close()
				if err != nil {
					errs <- err
					return
				}
				res, err := ttbl.Commit(context.Background(), delta.CommitRequest{Read: read, Adds: adds,
					Txn: &delta.Txn{AppID: fmt.Sprintf("writer-%d", w), Version: int64(i)}})
				if err != nil {
					errs <- err
					return
				}
				if res.CheckpointErr != nil {
					errs <- res.CheckpointErr
				}
				read = res.Snapshot // our own commit, possibly stale w.r.t. the others
				mu.Lock()
				if versions[res.Version] {
					errs <- fmt.Errorf("version %d committed twice", res.Version)
				}
				versions[res.Version] = true
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != writers*each || s.NumFiles() != writers*each+1 {
		t.Fatalf("version %d, %d files; want %d, %d", s.Version(), s.NumFiles(), writers*each, writers*each+1)
	}
	for w := 0; w < writers; w++ {
		if v, ok := s.TxnVersion(fmt.Sprintf("writer-%d", w)); !ok || v != each-1 {
			t.Errorf("writer-%d txn version %d %v", w, v, ok)
		}
	}
	if got := readAllRows(t, s, mem); got != writers*each+1 {
		t.Errorf("rows %d", got)
	}
	// Every commit file holds exactly one add: none was replaced.
	for v := int64(1); v <= writers*each; v++ {
		acts, err := tbl.ReadCommit(v)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range acts {
			if a.Add != nil {
				n++
			}
		}
		if n != 1 {
			t.Errorf("commit %d has %d adds", v, n)
		}
	}
}

func TestConflicts(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	r := simpleRec(t, mem, 1, 2)
	defer r.Release()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{}, simpleSchema, WriterOptions{Allocator: mem}, nil, r)
	base := res.Snapshot
	// Same appId concurrently: the second commit must fail.
	appendBatches(t, tbl, base, nil, simpleSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "flow", Version: 5}, r)
	_, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: base, Txn: &delta.Txn{AppID: "flow", Version: 6}})
	var ce *delta.ConflictError
	if !errors.As(err, &ce) || ce.Kind != delta.ConflictTransaction || !errors.Is(err, delta.ErrConflict) {
		t.Errorf("same appId: err = %v", err)
	}
	// Overwrite from a stale snapshot conflicts with the concurrent append.
	_, err = tbl.Commit(context.Background(), delta.CommitRequest{Read: base, Mode: delta.Overwrite})
	if !errors.As(err, &ce) || ce.Kind != delta.ConflictAppend {
		t.Errorf("overwrite vs append: err = %v", err)
	}
	// Metadata change conflicts with appends.
	s1, _ := tbl.Snapshot(context.Background())
	m2 := *s1.Metadata()
	m2.Configuration = map[string]string{"delta.appendOnly": "false"}
	if _, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: s1, Metadata: &m2}); err != nil {
		t.Fatal(err)
	}
	_, err = tbl.Commit(context.Background(), delta.CommitRequest{Read: s1})
	if !errors.As(err, &ce) || ce.Kind != delta.ConflictMetadata {
		t.Errorf("append vs metadata change: err = %v", err)
	}
	// Creating an existing table conflicts.
	p, m, _ := delta.NewTableMetadata(simpleSchema, delta.CreateOptions{})
	_, err = tbl.Commit(context.Background(), delta.CommitRequest{Protocol: p, Metadata: m})
	if !errors.As(err, &ce) || ce.Kind != delta.ConflictMetadata {
		t.Errorf("create twice: err = %v", err)
	}
	// Overwrite from a fresh snapshot removes everything.
	s2, _ := tbl.Snapshot(context.Background())
	r3 := simpleRec(t, mem, 9)
	defer r3.Release()
	w, _ := NewDataWriter(tbl.Store(), s2.Metadata(), WriterOptions{Allocator: mem})
	_ = w.Write(r3)
	adds, _ := w.Close()
	res, err = tbl.Commit(context.Background(), delta.CommitRequest{Read: s2, Mode: delta.Overwrite, Adds: adds})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s1.Update(context.Background()); err != nil || u.Version() != res.Version || u.NumFiles() != res.Snapshot.NumFiles() {
		t.Errorf("incremental update: %v", err)
	}
	if res.Snapshot.NumFiles() != 1 || len(res.Snapshot.Tombstones()) != 2 {
		t.Errorf("after overwrite: %d files, %d tombstones", res.Snapshot.NumFiles(), len(res.Snapshot.Tombstones()))
	}
	s3, _ := tbl.Snapshot(context.Background())
	if s3.NumFiles() != 1 || readAllRows(t, s3, mem) != 1 {
		t.Errorf("reloaded after overwrite: %d files", s3.NumFiles())
	}
}

func TestCheckpointReplay(t *testing.T) {
	mem := newMem(t)
	tbl := newTestTable(t, mem)
	r := simpleRec(t, mem, 1, 2, 3)
	defer r.Release()
	res := appendBatches(t, tbl, nil, &delta.CreateOptions{PartitionColumns: []string{"part"}}, simpleSchema, WriterOptions{Allocator: mem}, nil, r)
	s := res.Snapshot
	for i := 1; i <= 24; i++ {
		rec := simpleRec(t, mem, 10*i)
		if i == 15 { // an overwrite leaves tombstones for the checkpoint
			w, _ := NewDataWriter(tbl.Store(), s.Metadata(), WriterOptions{Allocator: mem})
			_ = w.Write(rec)
			adds, _ := w.Close()
			res, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: s, Mode: delta.Overwrite, Adds: adds, Txn: &delta.Txn{AppID: "a", Version: int64(i)}})
			if err != nil {
				t.Fatal(err)
			}
			s = res.Snapshot
		} else {
			s = appendBatches(t, tbl, s, nil, simpleSchema, WriterOptions{Allocator: mem}, &delta.Txn{AppID: "a", Version: int64(i)}, rec).Snapshot
		}
		rec.Release()
	}
	names := strings.Join(logFiles(t, tbl.Root()), " ")
	for _, want := range []string{delta.CheckpointFileName(10), delta.CheckpointFileName(20), delta.LastCheckpointName} {
		if !strings.Contains(names, want) {
			t.Errorf("log lacks %s: %s", want, names)
		}
	}
	lc, err := tbl.ReadLastCheckpoint()
	if err != nil || lc.Version != 20 || lc.Parts != nil || lc.NumOfAddFiles == nil || *lc.NumOfAddFiles != 6 {
		t.Errorf("_last_checkpoint = %+v, %v", lc, err)
	}
	full := func() *delta.Snapshot {
		s, err := tbl.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := full()
	early, err := tbl.SnapshotAt(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	equal := func(name string, got *delta.Snapshot) {
		t.Helper()
		if got.Version() != want.Version() || mustJSON(got.Files()) != mustJSON(dataChangeFalse(want.Files(), got.Files())) ||
			mustJSON(got.Txns()) != mustJSON(want.Txns()) || got.Metadata().SchemaString != want.Metadata().SchemaString ||
			len(got.Tombstones()) != len(want.Tombstones()) {
			t.Errorf("%s: snapshot differs: version %d/%d files %d/%d tombstones %d/%d", name, got.Version(), want.Version(),
				got.NumFiles(), want.NumFiles(), len(got.Tombstones()), len(want.Tombstones()))
		}
	}
	// Replay from checkpoint 20 alone: delete commits 0..20.
	logDir := filepath.Join(tbl.Root(), delta.LogDir)
	// Stale _last_checkpoint pointing at 10 must not matter.
	if err := os.WriteFile(filepath.Join(logDir, delta.LastCheckpointName), []byte(`{"version":10,"size":5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v <= 20; v++ {
		if err := os.Remove(filepath.Join(logDir, delta.CommitFileName(v))); err != nil {
			t.Fatal(err)
		}
	}
	equal("from checkpoint 20", full())
	if v, _ := full().TxnVersion("a"); v != 24 {
		t.Errorf("txn version %d", v)
	}
	// Time travel to 21 uses checkpoint 20.
	if s21, err := tbl.SnapshotAt(context.Background(), 21); err != nil || s21.Version() != 21 {
		t.Errorf("snapshot at 21: %v", err)
	}
	// Update from an old snapshot whose successors were cleaned up reloads from the checkpoint.
	if u, err := want.Update(context.Background()); err != nil || u != want {
		t.Errorf("update of the latest snapshot: %v %v", u == want, err)
	}
	if u, err := early.Update(context.Background()); err != nil {
		t.Errorf("update across cleaned-up commits: %v", err)
	} else {
		equal("update of version 5", u)
	}
	// A gap in the log is an error.
	if err := os.Remove(filepath.Join(logDir, delta.CommitFileName(22))); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Snapshot(context.Background()); !errors.Is(err, delta.ErrLogIncomplete) {
		t.Errorf("missing commit 22: err = %v", err)
	}
}

func dataChangeFalse(files, like []*delta.Add) []*delta.Add {
	out := make([]*delta.Add, len(files))
	for i, a := range files {
		c := *a
		if i < len(like) {
			c.DataChange = like[i].DataChange
		}
		out[i] = &c
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
