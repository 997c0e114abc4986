package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/stage"
	"github.com/streamkit/streamkit/storage"
)

// bucketEnv is a test env whose input is a fresh bucket of the real S3 server (scripts/s3.sh):
// objects are written through a storage.Store at the bucket root, and the fake clock runs a
// minute ahead of the wall clock so that every object is older than any --stable-after.
type bucketEnv struct {
	*env
	bucket string
	root   storage.Store
}

func newBucketEnv(t *testing.T) *bucketEnv {
	t.Helper()
	s3test.Server(t)
	bucket := s3test.Bucket(t)
	for _, kv := range s3test.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root, err := storage.Open(context.Background(), "s3://"+bucket, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.clock.t = time.Now().Add(time.Minute)
	return &bucketEnv{env: e, bucket: bucket, root: root}
}

// put writes objects (name → content) at the bucket root, 16 at a time.
func (b *bucketEnv) put(objects map[string][]byte) {
	b.t.Helper()
	names := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range names {
				if err := b.root.WriteFile(context.Background(), n, objects[n]); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		}()
	}
	for n := range objects {
		names <- n
	}
	close(names)
	wg.Wait()
	if first != nil {
		b.t.Fatal(first)
	}
}

func (b *bucketEnv) url(name string) string { return "s3://" + b.bucket + "/" + name }

// ids returns the "id" values of JSON rows, sorted.
func ids(t *testing.T, rows []string) []int {
	t.Helper()
	var out []int
	for _, r := range rows {
		var v struct{ ID *int }
		if err := json.Unmarshal([]byte(r), &v); err != nil || v.ID == nil {
			t.Fatalf("row %s: %v", r, err)
		}
		out = append(out, *v.ID)
	}
	sort.Ints(out)
	return out
}

// checkOnce fails unless got holds every id of want exactly once and nothing else.
func checkOnce(t *testing.T, what string, got []int, want map[int]bool) {
	t.Helper()
	seen := map[int]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("%s: id %d read twice", what, id)
		}
		if !want[id] {
			t.Errorf("%s: id %d is not in the input", what, id)
		}
		seen[id] = true
	}
	if len(seen) != len(want) {
		var miss []int
		for id := range want {
			if !seen[id] {
				miss = append(miss, id)
			}
		}
		sort.Ints(miss)
		t.Errorf("%s: read %d distinct ids, want %d; missing %v", what, len(seen), len(want), miss)
	}
}

// TestS3GlobIncremental reads 'in/**/*.json' from a bucket with 1,210 matching objects (the
// listing spans two pages of 1,000) under nested prefixes, beside objects that must not be read
// (another extension, hidden and underscore names, a sibling prefix that shares the literal
// start) and objects whose names need escaping in a URL or a glob. Every row is read exactly
// once, the files log and WAL record the objects by URL with their ETag, a second run after
// adding objects reads only the new ones, a third reads nothing, and a rewritten object is
// handled like a rewritten local file (skipped with the same warning, or failing the run).
func TestS3GlobIncremental(t *testing.T) {
	b := newBucketEnv(t)
	want := map[int]bool{}
	objects := map[string][]byte{}
	id := 0
	add := func(name string, rows int) {
		var buf bytes.Buffer
		for i := 0; i < rows; i++ {
			fmt.Fprintf(&buf, "{\"id\":%d,\"name\":\"n%d\"}\n", id, id)
			want[id] = true
			id++
		}
		objects[name] = buf.Bytes()
	}
	for i := 0; i < 1200; i++ {
		add(fmt.Sprintf("in/%d/%02d/part-%04d.json", 2020+i%3, i%12, i), 1+i%3)
	}
	// Names with characters a URL or a glob would have to escape: read as they are.
	for _, n := range []string{"in/odd/a b.json", "in/odd/x[1]*?.json", "in/odd/ü#%20.json", "in/odd/back\\slash.json",
		"in/odd/{brace}.json", "in/odd/semi;colon&amp=.json", "in/odd/x__0x2e__.json", "in/odd/a..b.json", "in/odd/+plus+.json", "in/odd/日本.json"} {
		add(n, 2)
	}
	b.put(objects)
	// Not matched: another extension, hidden and temporary names, a sibling prefix.
	b.put(map[string][]byte{
		"in/2020/notes.csv": []byte("id\n99999\n"), "in/_SUCCESS.json": []byte(`{"id":99998}`),
		"in/.hidden/x.json": []byte(`{"id":99997}`), "in/2021/_tmp/x.json": []byte(`{"id":99996}`),
		"in/2021/x.json.tmp": []byte(`{"id":99995}`), "input/x.json": []byte(`{"id":99994}`),
		"top.json": []byte(`{"id":99993}`),
	})
	// --schema, so that the run does not read the first 10,000 rows twice to infer it.
	cfg := ddl(t, "id long, name string")
	cfg.Patterns = []string{b.url("in/**/*.json")}
	got := b.mustRun(cfg, runOpts{batchRows: 500})
	checkOnce(t, "run 1", ids(t, got.rows), want)

	// The files log names each object by URL, with the listing's ETag.
	wal := b.wal()
	var files int
	for _, p := range wal {
		for _, f := range p.Files {
			files++
			if !strings.HasPrefix(f.Path, "s3://"+b.bucket+"/in/") || f.ETag == "" || f.FP == "" || f.Size <= 0 {
				t.Fatalf("WAL entry %+v", f)
			}
		}
	}
	if files != 1210 {
		t.Errorf("the WAL lists %d files, want 1210", files)
	}

	// Run 2: only the new objects.
	before := len(want)
	newWant := map[int]bool{}
	objects = map[string][]byte{}
	for i := 0; i < 15; i++ {
		add(fmt.Sprintf("in/2023/new/part-%02d.json", i), 2)
	}
	for k := range want {
		if k >= before {
			newWant[k] = true
		}
	}
	b.put(objects)
	got = b.mustRun(cfg, runOpts{})
	checkOnce(t, "run 2", ids(t, got.rows), newWant)

	// Run 3: nothing new.
	if got = b.mustRun(cfg, runOpts{}); len(got.rows) != 0 {
		t.Fatalf("run 3 read %d rows", len(got.rows))
	}

	// A rewritten object (another size and ETag): skipped with the local warning, once.
	b.put(map[string][]byte{"in/2020/00/part-0000.json": []byte(`{"id":123456789,"name":"rewritten"}` + "\n")})
	b.log.Reset()
	if got = b.mustRun(cfg, runOpts{}); len(got.rows) != 0 {
		t.Fatalf("rewritten object read: %q", got.rows)
	}
	if !strings.Contains(b.log.String(), "file changed after it was read; not reading it again (--on-rewrite skip)") ||
		!strings.Contains(b.log.String(), b.url("in/2020/00/part-0000.json")) {
		t.Fatalf("no rewrite warning:\n%s", b.log.String())
	}
	b.log.Reset()
	if got = b.mustRun(cfg, runOpts{}); len(got.rows) != 0 || strings.Contains(b.log.String(), "changed after it was read") {
		t.Fatalf("run 5: rows %q\n%s", got.rows, b.log.String())
	}
	// --on-rewrite fail names the object; reprocess reads the new version once.
	b.put(map[string][]byte{"in/2021/01/part-0001.json": []byte(`{"id":987654321,"name":"again"}` + "\n")})
	fail := cfg
	fail.OnRewrite = RewriteFail
	b.log.Reset()
	_, serr, oerr := b.run(fail, runOpts{})
	if serr == nil || !strings.Contains(serr.Error(), b.url("in/2021/01/part-0001.json")+" changed after it was read (size ") {
		t.Fatalf("--on-rewrite fail: %v / %v\n%s", serr, oerr, b.log.String())
	}
	re := cfg
	re.OnRewrite = RewriteReprocess
	if got = b.mustRun(re, runOpts{}); join(got.rows) != `{"id":987654321,"name":"again","_rescued_data":null}` {
		t.Fatalf("--on-rewrite reprocess: %q", got.rows)
	}
}

// TestS3ChangedBetweenListingAndReading: an object rewritten after it was planned but before
// its first read is recorded as unread and its new version read by the next run, as a local
// file is.
func TestS3ChangedBetweenListingAndReading(t *testing.T) {
	b := newBucketEnv(t)
	b.put(map[string][]byte{"in/a.json": []byte(`{"id":1}` + "\n"), "in/b.json": []byte(`{"id":2}` + "\n")})
	cfg := Config{Patterns: []string{b.url("in/*.json")}, MaxFilesPerEpoch: 1}
	rewritten := false
	got := b.mustRun(cfg, runOpts{beforeRead: func(n int) {
		if !rewritten {
			rewritten = true
			b.put(map[string][]byte{"in/b.json": []byte(`{"id":3}` + "\n" + `{"id":4}` + "\n")})
		}
	}})
	if join(got.rows) != `{"id":1,"_rescued_data":null}` || !strings.Contains(b.log.String(), "changed between its listing and its reading") {
		t.Fatalf("run 1: %q\n%s", got.rows, b.log.String())
	}
	got = b.mustRun(cfg, runOpts{})
	if join(got.rows) != "{\"id\":3,\"_rescued_data\":null}\n{\"id\":4,\"_rescued_data\":null}" {
		t.Fatalf("run 2: %q\n%s", got.rows, b.log.String())
	}
}

// TestS3FormatsAndLiterals reads Parquet (ranged reads, projected by --schema), CSV (also
// gzip-compressed) and a literal object URL and a literal prefix URL from a bucket.
func TestS3FormatsAndLiterals(t *testing.T) {
	b := newBucketEnv(t)
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String},
		{Name: "extra", Type: arrow.PrimitiveTypes.Float64}}, nil)
	objects := map[string][]byte{}
	want := map[int]bool{}
	for f := 0; f < 5; f++ {
		bld := array.NewRecordBuilder(mem, sc)
		for i := 0; i < 3000; i++ {
			n := f*3000 + i
			bld.Field(0).(*array.Int64Builder).Append(int64(n))
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", n))
			bld.Field(2).(*array.Float64Builder).Append(float64(n) / 2)
			want[n] = true
		}
		rec := bld.NewRecordBatch()
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		// Several row groups, so the reader seeks between ranges.
		for off := int64(0); off < rec.NumRows(); off += 1000 {
			part := rec.NewSlice(off, off+1000)
			if err := w.WriteBuffered(part); err != nil {
				t.Fatal(err)
			}
			w.NewBufferedRowGroup()
			part.Release()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		bld.Release()
		objects[fmt.Sprintf("pq/day=%d/part-%d.parquet", f, f)] = buf.Bytes()
	}
	b.put(objects)
	cfg := ddl(t, "id long, v string")
	cfg.Patterns = []string{b.url("pq/**/*.parquet")}
	got := b.mustRun(cfg, runOpts{batchRows: 700})
	checkOnce(t, "parquet", ids(t, got.rows), want)
	if !strings.Contains(got.rows[0], `"v":"v`) || strings.Contains(got.rows[0], "extra") {
		t.Fatalf("projection: %s", got.rows[0])
	}

	// CSV, plain and gzip, through a literal prefix (every object below it) and a literal
	// object URL.
	var gz bytes.Buffer
	gzw := gzip.NewWriter(&gz)
	gzw.Write([]byte("id,v\n10,x\n11,y\n"))
	gzw.Close()
	b.put(map[string][]byte{"csv/a.csv": []byte("id,v\n1,a\n2,b\n"), "csv/sub/b.csv.gz": gz.Bytes(), "one/c.csv": []byte("id,v\n20,c\n")})
	b.ckpt = b.t.TempDir()
	csv := Config{Patterns: []string{b.url("csv"), b.url("one/c.csv")}}
	csv.CSV.Header = true
	got = b.mustRun(csv, runOpts{})
	if g := fmt.Sprint(ids(t, got.rows)); g != "[1 2 10 11 20]" {
		t.Fatalf("csv ids %s", g)
	}
	// A literal object that does not exist (and no prefix of that name) matches nothing.
	b.ckpt = b.t.TempDir()
	_, serr, _ := b.run(Config{Patterns: []string{b.url("one/missing.csv")}}, runOpts{})
	if serr == nil || !strings.Contains(serr.Error(), "no input file matches "+b.url("one/missing.csv")) {
		t.Fatalf("missing literal: %v", serr)
	}
}

// TestS3MissingBucket: a missing bucket fails at open with the store's message, naming it.
func TestS3MissingBucket(t *testing.T) {
	b := newBucketEnv(t)
	_, serr, _ := b.run(Config{Patterns: []string{"s3://" + b.bucket + "-missing/in/*.json"}}, runOpts{})
	var ue *stage.UsageError
	if serr == nil || !strings.Contains(serr.Error(), `bucket "`+b.bucket+`-missing" does not exist`) || errors.As(serr, &ue) {
		t.Fatalf("missing bucket: %v", serr)
	}
}

// TestURLPatterns: patterns that cannot be listed are usage errors before any request, and
// file:///abs/glob is the local glob.
func TestURLPatterns(t *testing.T) {
	t.Parallel()
	for arg, msg := range map[string]string{
		"s3:///in/*.json":           "no bucket",
		"s3://b*/in/*.json":         "cannot be a glob",
		"s3://b/in/[x.json":         "bad glob syntax",
		"s3://b/in//x/*.json":       `has a "" segment`,
		"s3://b/in/../x/*.json":     `has a ".." segment`,
		"ftp://host/in/*.json":      "unsupported scheme ftp://; use a local path or glob, file://, s3://, gs://, az:// or abfss://",
		"hdfs://nn:8020/in/*.json":  "unsupported scheme hdfs://",
		"file://relative/x.json":    "a file URL names an absolute path",
		"abfss://c@acct.dfs/a/[*":   "bad glob syntax",
		"gs://bucket/in/**/{a,b":    "bad glob syntax",
		"az://container/x/y/**/*.z": "",
		"S3://b/in/*.json":          "",
		"./rel://x/*.json":          "",
	} {
		_, err := New(Config{Patterns: []string{arg}})
		if msg == "" {
			if err != nil {
				t.Errorf("%s: %v", arg, err)
			}
			continue
		}
		var ue *stage.UsageError
		if err == nil || !strings.Contains(err.Error(), msg) || !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a usage error with %q", arg, err, msg)
		}
	}
	e := newEnv(t)
	e.write("a.csv", "id\n1\n", time.Hour)
	e.write("sub/b.csv", "id\n2\n", time.Hour)
	cfg := Config{Patterns: []string{"file://" + e.dir + "/**/*.csv"}}
	cfg.CSV.Header = true
	got := e.mustRun(cfg, runOpts{})
	if join(got.rows) != "{\"id\":1,\"_rescued_data\":null}\n{\"id\":2,\"_rescued_data\":null}" {
		t.Fatalf("file:// glob: %q", got.rows)
	}
	for _, p := range e.wal()[1].Files {
		if !strings.HasPrefix(p.Path, e.dir+"/") {
			t.Fatalf("file:// glob recorded %q, not the local path", p.Path)
		}
	}
}

// TestS3BucketCheckpoint keeps the checkpoints of the source and the sink in the bucket too:
// the files log is written there (files/<seq>.json by put-if-absent, files/schema.json), a
// sink crash and a restart replay the uncommitted epochs so that the committed rows plus the
// replayed ones are every row exactly once, in order, and a later run reads only new objects.
func TestS3BucketCheckpoint(t *testing.T) {
	b := newBucketEnv(t)
	b.ckpt = b.url("ck")
	cfg := Config{Patterns: []string{b.url("in/**/*.ndjson")}, MaxFilesPerEpoch: 3}
	var all []string
	objects := map[string][]byte{}
	for f := 0; f < 12; f++ {
		var buf bytes.Buffer
		for i := 0; i < 4; i++ {
			id := f*100 + i
			fmt.Fprintf(&buf, "{\"id\":%d}\n", id)
			all = append(all, fmt.Sprintf(`{"id":%d,"_rescued_data":null}`, id))
		}
		objects[fmt.Sprintf("in/%d/f%02d.ndjson", f%2, f)] = buf.Bytes()
	}
	b.put(objects)
	// Objects share their second of modification time, so the plan orders them by URL.
	sort.Slice(all, func(i, j int) bool {
		var a, c struct{ ID int }
		json.Unmarshal([]byte(all[i]), &a)
		json.Unmarshal([]byte(all[j]), &c)
		ka, kc := fmt.Sprintf("%d/f%02d", a.ID/100%2, a.ID/100), fmt.Sprintf("%d/f%02d", c.ID/100%2, c.ID/100)
		return ka < kc || ka == kc && a.ID < c.ID
	})
	s1, _, oerr := b.run(cfg, runOpts{fail: 3})
	if oerr == nil || !strings.Contains(oerr.Error(), "sink crashed") {
		t.Fatalf("the sink should crash at barrier 3: %v\n%s", oerr, b.log.String())
	}
	var committed []string
	for _, l := range s1.lines {
		if l == "barrier 2" {
			break
		}
		if strings.HasPrefix(l, "{") {
			committed = append(committed, l)
		}
	}
	if len(committed) == 0 || len(committed) >= len(all) {
		t.Fatalf("%d of %d rows committed before the crash: no replay to test", len(committed), len(all))
	}
	s2 := b.mustRun(cfg, runOpts{})
	if got := append(append([]string(nil), committed...), s2.rows...); join(got) != join(all) {
		t.Fatalf("committed + replayed rows:\n%s\nwant each row once, in order:\n%s", join(got), join(all))
	}
	// The files log and the schema are objects of the checkpoint prefix.
	ctx := context.Background()
	var names []string
	if err := b.root.Walk(ctx, "ck/files/files", func(in storage.Info) error { names = append(names, in.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 || names[0] != "00000000000000000001.json" || names[len(names)-1] != SchemaFile {
		t.Fatalf("files log objects %q", names)
	}
	// The offsets WAL in the bucket lists the epochs' objects by URL, 3 per epoch.
	listed := 0
	for n, p := range b.wal() {
		if len(p.Files) > 3 {
			t.Fatalf("WAL epoch %d: %+v", n, p)
		}
		for _, f := range p.Files {
			listed++
			if !strings.HasPrefix(f.Path, b.url("in/")) {
				t.Fatalf("WAL epoch %d: %+v", n, p)
			}
		}
	}
	if listed == 0 {
		t.Fatal("the WAL in the bucket lists no file")
	}
	// Run 3 reads only the new objects.
	b.put(map[string][]byte{"in/9/new.ndjson": []byte(`{"id":5000}` + "\n")})
	if s3 := b.mustRun(cfg, runOpts{}); join(s3.rows) != `{"id":5000,"_rescued_data":null}` {
		t.Fatalf("run 3: %q", s3.rows)
	}
}
