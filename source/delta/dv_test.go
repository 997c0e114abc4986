package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

const z85Digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85 encodes b (a multiple of 4 bytes) as Z85, for the test's descriptors.
func z85(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		var d [5]byte
		for j := 4; j >= 0; j-- {
			d[j] = z85Digits[v%85]
			v /= 85
		}
		sb.Write(d[:])
	}
	return sb.String()
}

// dvBitmap is the RoaringBitmapArray of the rows deleted (magic, then the 64-bit portable
// layout).
func dvBitmap(deleted []uint64) []byte {
	bm := roaring64.BitmapOf(deleted...)
	bm.RunOptimize()
	var ser bytes.Buffer
	binary.Write(&ser, binary.LittleEndian, uint32(1681511377))
	bm.WriteTo(&ser)
	return ser.Bytes()
}

// inlineDV is the descriptor of an inline deletion vector of the rows deleted.
func inlineDV(deleted []uint64) string {
	data := dvBitmap(deleted)
	return fmt.Sprintf(`{"storageType":"i","pathOrInlineDv":"%s","sizeInBytes":%d,"cardinality":%d}`,
		z85(append(slices.Clone(data), make([]byte, -len(data)&3)...)), len(data), len(deleted))
}

// dvTable writes a table of one partition (p = "x") and one data file of n rows (id = row
// index, row groups of 100 rows) whose deletion vector, stored as storage, holds deleted.
func dvTable(t *testing.T, n int64, deleted []uint64, storage string) (string, *dl.Add) {
	t.Helper()
	dir := t.TempDir()
	mem := newMem(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewInt64Builder(mem)
	for i := range n {
		b.Append(i)
	}
	ids := b.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{ids}, n)
	ids.Release()
	defer rec.Release()
	f, err := os.Create(filepath.Join(dir, "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "part-0.parquet"))

	data := dvBitmap(deleted)
	dv := fmt.Sprintf(`"sizeInBytes":%d,"cardinality":%d`, len(data), len(deleted))
	switch storage {
	case "i":
		dv = inlineDV(deleted)
	case "u":
		uuid := []byte("0123456789abcdef")
		file := []byte{1, 0, 0, 0, 0}                 // version, then a first DV of another file (0 bytes)
		file = binary.BigEndian.AppendUint32(file, 0) // its checksum
		off := len(file)
		file = binary.BigEndian.AppendUint32(file, uint32(len(data)))
		file = append(file, data...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(data))
		os.MkdirAll(filepath.Join(dir, "q7"), 0o755)
		name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", uuid[0:4], uuid[4:6], uuid[6:8], uuid[8:10], uuid[10:])
		if err := os.WriteFile(filepath.Join(dir, "q7", name), file, 0o644); err != nil {
			t.Fatal(err)
		}
		dv = fmt.Sprintf(`{"storageType":"u","pathOrInlineDv":"q7%s","offset":%d,%s}`, z85(uuid), off, dv)
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	stats := fmt.Sprintf(`{\"numRecords\":%d,\"minValues\":{\"id\":0},\"maxValues\":{\"id\":%d},\"nullCount\":{\"id\":0},\"tightBounds\":false}`, n, n-1)
	writeCommit(t, dir, 0,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		metaLine(schema, `["p"]`),
		fmt.Sprintf(`{"add":{"path":"part-0.parquet","partitionValues":{"p":"x"},"size":%d,"modificationTime":1,"dataChange":true,"stats":"%s","deletionVector":%s}}`, fi.Size(), stats, dv))
	tbl := dl.NewTable(dir, nil)
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir, snap.Files()[0]
}

// TestDeletionVectorScan: the rows a vector marks are dropped by every kind of scan (batch sizes
// across row groups, resumed ranges, --where pruning row groups out, only partition columns),
// the vector's indexes always being positions in the file.
func TestDeletionVectorScan(t *testing.T) {
	var deleted []uint64
	for i := uint64(0); i < 1000; i++ {
		if i%7 == 0 || (i >= 350 && i < 420) || i == 99 || i == 100 || i == 999 {
			deleted = append(deleted, i)
		}
	}
	isDel := map[int64]bool{}
	for _, d := range deleted {
		isDel[int64(d)] = true
	}
	want := func(lo, hi int64, keep func(int64) bool) []string {
		var out []string
		for i := lo; i < hi; i++ {
			if !isDel[i] && keep(i) {
				out = append(out, fmt.Sprintf(`{"id":%d,"p":"x"}`, i))
			}
		}
		sort.Strings(out)
		return out
	}
	all := func(int64) bool { return true }
	for _, storage := range []string{"i", "u"} {
		dir, add := dvTable(t, 1000, deleted, storage)
		mem := newMem(t)
		tbl := dl.NewTable(dir, nil)
		snap, _ := tbl.Snapshot(context.Background())
		for _, c := range []struct {
			name       string
			opts       ReadOptions
			start, end int64
			want       []string
		}{
			{"whole file, 7-row batches", ReadOptions{BatchRows: 7}, 0, -1, want(0, 1000, all)},
			{"whole file, one batch per row group", ReadOptions{BatchRows: 100, Workers: 1}, 0, -1, want(0, 1000, all)},
			{"resumed range", ReadOptions{BatchRows: 33}, 150, 777, want(150, 777, all)},
			{"where", ReadOptions{BatchRows: 64, Predicate: "id >= 390 AND id % 2 = 1"}, 0, -1, want(0, 1000, func(i int64) bool { return i >= 390 && i%2 == 1 })},
		} {
			c.opts.Allocator = mem
			rd, err := NewReader(tbl.Store(), snap.Metadata(), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := scanRange(t, rd, add, c.start, c.end)
			rd.Close()
			if !slices.Equal(got, c.want) {
				t.Errorf("%s %s: %d rows, want %d", storage, c.name, len(got), len(c.want))
			}
		}
		// Only the partition column: rows come from the row groups' counts less the deleted.
		rd, err := NewReader(tbl.Store(), snap.Metadata(), ReadOptions{Columns: []string{"p"}, BatchRows: 64, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		if got := scanRange(t, rd, add, 0, -1); len(got) != 1000-len(deleted) {
			t.Errorf("%s partition column only: %d rows, want %d", storage, len(got), 1000-len(deleted))
		}
		rd.Close()
	}
}

// scanRange reads rows [start, end) of add's file and returns them as sorted JSON lines.
func scanRange(t *testing.T, rd *Reader, add *dl.Add, start, end int64) []string {
	t.Helper()
	sc := rd.Scan(context.Background(), []FileRef{{Add: add, Start: start, End: end}})
	defer sc.Close()
	var rows []string
	last := int64(-1)
	for {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Row < last {
			t.Fatalf("file row went back from %d to %d", last, b.Row)
		}
		last = b.Row
		if b.Rec != nil {
			rows = append(rows, recRows(t, b.Rec)...)
			b.Rec.Release()
		}
	}
	if want := end; want >= 0 && last != want {
		t.Errorf("scan ended at file row %d, want %d", last, want)
	}
	sort.Strings(rows)
	return rows
}

// TestDeletionVectorFollow: a commit that puts a deletion vector on a file (remove + add of
// the same path) is a change of existing rows: following over it fails naming the version,
// --skip-change-commits skips it (its add too), --ignore-changes reads the file's remaining
// rows again; the snapshot read applies the vector.
func TestDeletionVectorFollow(t *testing.T) {
	var deleted []uint64
	for i := uint64(0); i < 300; i += 3 {
		deleted = append(deleted, i)
	}
	dir, add := dvTable(t, 300, deleted, "i")
	// Rewrite the log: version 0 adds the file without the vector, version 1 gives it one,
	// version 2 appends nothing new but a copy of the file (a plain append).
	dv, _ := json.Marshal(add.DeletionVector)
	logged := *add
	logged.DeletionVector = nil
	plain, _ := json.Marshal(map[string]any{"add": logged})
	withDV := strings.Replace(string(plain), `"dataChange":true`, `"dataChange":true,"deletionVector":`+string(dv), 1)
	os.Link(filepath.Join(dir, "part-0.parquet"), filepath.Join(dir, "part-1.parquet"))
	second := strings.Replace(string(plain), "part-0.parquet", "part-1.parquet", 1)
	proto := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	writeCommit(t, dir, 0, proto, metaLine(schema, `["p"]`), string(plain))
	writeCommit(t, dir, 1, `{"commitInfo":{"operation":"DELETE"}}`, `{"remove":{"path":"part-0.parquet","dataChange":true,"deletionTimestamp":1}}`, withDV)
	writeCommit(t, dir, 2, second)
	mem := newMem(t)
	env := testEnv(mem)

	src, err := NewSource(cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0; c.PollInterval = time.Microsecond }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	var rerr error
	for range 1000 { // 3-row batches: 100 for version 0, then the failing commit
		rec, err := src.Read(context.Background(), nil)
		if err != nil {
			rerr = err
			break
		}
		if rec != nil {
			rec.Release()
		}
	}
	src.Close()
	if rerr == nil || !strings.Contains(rerr.Error(), "version 1 of") || !strings.Contains(rerr.Error(), "gets a deletion vector") || !strings.Contains(rerr.Error(), "--skip-change-commits") {
		t.Errorf("following over the DELETE: %v", rerr)
	}
	count := func(c Config) int {
		rows, _, _ := readAll(t, openSource(t, c, env, nil), nil, 50)
		return len(rows)
	}
	if n := count(cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0; c.SkipChangeCommits = true })); n != 600 {
		t.Errorf("--skip-change-commits: %d rows, want 600 (versions 0 and 2)", n)
	}
	if n := count(cfg(dir, func(c *Config) { c.Follow = true; c.StartingVersion = 0; c.IgnoreChanges = true })); n != 800 {
		t.Errorf("--ignore-changes: %d rows, want 800 (300, the 200 left, 300)", n)
	}
	if n := count(cfg(dir, nil)); n != 500 {
		t.Errorf("snapshot: %d rows, want 500", n)
	}
}

// TestDeletionVectorS3: a table on a bucket reads its deletion vector file through the
// table's store.
func TestDeletionVectorS3(t *testing.T) {
	s3test.Server(t)
	ctx := context.Background()
	deleted := []uint64{0, 1, 2, 150, 151, 500, 999}
	dir, _ := dvTable(t, 1000, deleted, "u")
	st, err := storage.Open(ctx, "s3://"+s3test.Bucket(t)+"/t", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		if err := st.WriteFile(ctx, filepath.ToSlash(rel), b); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	snap, err := dl.OpenTable(st, nil).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(st, snap.Metadata(), ReadOptions{BatchRows: 64, Allocator: newMem(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if got := scanRange(t, rd, snap.Files()[0], 0, -1); len(got) != 1000-len(deleted) || slices.Contains(got, `{"id":150,"p":"x"}`) {
		t.Errorf("%d rows from the bucket, want %d", len(got), 1000-len(deleted))
	}
}
