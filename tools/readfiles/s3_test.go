package readfiles_test

// The built binary against the real S3 server of scripts/s3.sh: `read-files 's3://…/**/*.json'`
// piped into print, run after run, and Parquet and CSV objects written by pyarrow compared with
// DuckDB's reading of the same files.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// s3Bucket makes a fresh bucket and returns its name, the environment a child process needs to
// reach the server, and a store at the bucket's root to upload through.
func s3Bucket(t *testing.T) (string, []string, storage.Store) {
	t.Helper()
	bucket := s3test.Bucket(t)
	env := s3test.Env(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // for this process's store and for streamStats' child
	}
	root, err := storage.Open(context.Background(), "s3://"+bucket, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bucket, env, root
}

// upload writes objects into st, 16 at a time.
func upload(t *testing.T, st storage.Store, objects map[string][]byte) {
	t.Helper()
	names := make(chan string)
	errs := make(chan error, len(objects))
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range names {
				errs <- st.WriteFile(context.Background(), n, objects[n])
			}
		}()
	}
	for n := range objects {
		names <- n
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// printedIDs reads the "id" of every NDJSON line of path.
func printedIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range nonEmptyLines(string(b)) {
		var r struct{ ID *int }
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.ID == nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, *r.ID)
	}
	sort.Ints(out)
	return out
}

func sameIDs(t *testing.T, what string, got []int, from, to int) {
	t.Helper()
	if len(got) != to-from {
		t.Fatalf("%s: %d rows, want %d", what, len(got), to-from)
	}
	for i, id := range got {
		if id != from+i {
			t.Fatalf("%s: row %d has id %d, want %d (a row lost or read twice)", what, i, id, from+i)
		}
	}
}

// TestS3ReadFilesIncremental: 1,100 NDJSON objects under nested prefixes (the listing spans two
// pages) are printed exactly once by `read-files 's3://B/in/**/*.json' | print` with local
// checkpoints; a second run after 40 more objects arrive prints only those, a third nothing.
func TestS3ReadFilesIncremental(t *testing.T) {
	bucket, env, root := s3Bucket(t)
	dir := t.TempDir()
	id := 0
	batch := func(n int, name func(i int) string) map[string][]byte {
		objects := map[string][]byte{}
		for i := 0; i < n; i++ {
			var b strings.Builder
			for r := 0; r < 3; r++ {
				fmt.Fprintf(&b, "{\"id\":%d,\"v\":\"x%d\"}\n", id, id)
				id++
			}
			objects[name(i)] = []byte(b.String())
		}
		return objects
	}
	upload(t, root, batch(1100, func(i int) string { return fmt.Sprintf("in/2026/%02d/%02d/events-%04d.json", i%12+1, i%28+1, i) }))
	upload(t, root, map[string][]byte{"in/2026/readme.csv": []byte("id\n-1\n"), "in/_SUCCESS": nil, "in/2026/.part.json": []byte(`{"id":-2}`)})
	// --schema: inference would read the first 10,000 rows once more.
	script := `"$SK" read-files --progress off --stable-after 0 --schema 'id long, v string' --checkpoint ck/read 's3://` + bucket + `/in/**/*.json' 2>>err.log | "$SK" print --checkpoint ck/print --format json > %s`
	run := func(out string) []int {
		t.Helper()
		_, stderr, code := peertest.Pipeline(t, dir, env, fmt.Sprintf(script, out))
		if code != 0 {
			log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
			t.Fatalf("exit %d: %s\n%s", code, stderr, log)
		}
		return printedIDs(t, filepath.Join(dir, out))
	}
	sameIDs(t, "run 1", run("out1.ndjson"), 0, 3300)
	upload(t, root, batch(40, func(i int) string { return fmt.Sprintf("in/2026/12/31/late-%02d.json", i) }))
	sameIDs(t, "run 2", run("out2.ndjson"), 3300, 3420)
	sameIDs(t, "run 3", run("out3.ndjson"), 0, 0)
	// The checkpoint names the objects by URL, and holds no credential.
	log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
	secret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	filepath.WalkDir(filepath.Join(dir, "ck"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if secret != "" && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret key", p)
		}
		return nil
	})
	if secret != "" && strings.Contains(string(log), secret) {
		t.Errorf("the log holds the secret key")
	}
	recs, _ := filepath.Glob(filepath.Join(dir, "ck", "read", "files", "*.json"))
	var urls int
	for _, r := range recs {
		b, _ := os.ReadFile(r)
		urls += strings.Count(string(b), `"path":"s3://`+bucket+`/in/2026/`)
	}
	if urls != 1140 {
		t.Errorf("the files log names %d objects by URL, want 1140", urls)
	}
}

// TestS3PyarrowFilesMatchDuckDB: Parquet (several row groups, nested prefixes) and CSV files
// written by pyarrow, uploaded to the bucket and read there by read-files, give DuckDB's
// counts, sums and distinct counts of the local copies.
func TestS3PyarrowFilesMatchDuckDB(t *testing.T) {
	py := peertest.Python(t)
	bucket, _, root := s3Bucket(t)
	local := t.TempDir()
	peertest.RunPython(t, py, `
import sys, os, pyarrow as pa, pyarrow.parquet as pq, pyarrow.csv as pc
out = sys.argv[1]
for d in range(4):
    n = 5000 + d * 777
    t = pa.table({"id": pa.array(range(d * 100000, d * 100000 + n), pa.int64()),
                  "amount": pa.array([i * 0.25 for i in range(n)], pa.float64()),
                  "city": pa.array(["c%d" % (i % 97) for i in range(n)]),
                  "flag": pa.array([i % 3 == 0 for i in range(n)])})
    os.makedirs(f"{out}/pq/day={d}", exist_ok=True)
    pq.write_table(t, f"{out}/pq/day={d}/part-{d}.parquet", row_group_size=1500)
    os.makedirs(f"{out}/csv", exist_ok=True)
    pc.write_csv(t, f"{out}/csv/part-{d}.csv")
`, local)
	objects := map[string][]byte{}
	filepath.WalkDir(local, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(local, p)
		objects[filepath.ToSlash(rel)] = b
		return nil
	})
	upload(t, root, objects)
	cols := []string{"id", "amount", "city", "flag"}
	for _, tt := range []struct{ name, url, from string }{
		{"parquet", "s3://" + bucket + "/pq/**/*.parquet", "read_parquet('" + local + "/pq/*/*.parquet')"},
		{"csv", "s3://" + bucket + "/csv/*.csv", "read_csv('" + local + "/csv/*.csv', header=true)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantRows, want := peertest.DuckStats(t, py, "", tt.from, cols)
			gotRows, got, _, rescued, stderr := streamStats(t, []string{tt.url}, cols)
			if gotRows != wantRows || rescued != 0 {
				t.Fatalf("rows %d (rescued %d), DuckDB %d\n%s", gotRows, rescued, wantRows, stderr)
			}
			for _, c := range cols {
				g, w := got[c], want[c]
				if g.Count != w.Count || g.Distinct != w.Distinct || (g.Sum == nil) != (w.Sum == nil) || g.Sum != nil && !closeTo(*g.Sum, *w.Sum) {
					t.Errorf("column %q: got count %d distinct %d sum %v; DuckDB count %d distinct %d sum %v", c, g.Count, g.Distinct, deref(g.Sum), w.Count, w.Distinct, deref(w.Sum))
				}
			}
		})
	}
}

// TestS3Refusals: a missing bucket and refused credentials fail with exit 1 and the store's
// message (and never print the secret); a URL read-files cannot list is a usage error (exit 2).
func TestS3Refusals(t *testing.T) {
	bucket, env, _ := s3Bucket(t)
	dir := t.TempDir()
	tests := []struct {
		name, script string
		code         int
		want         string
	}{
		{"missing bucket", `"$SK" read-files 's3://` + bucket + `-nope/in/**/*.json'`, 1, `bucket "` + bucket + `-nope" does not exist`},
		{"wrong secret", `AWS_SECRET_ACCESS_KEY=wrong-secret-value "$SK" read-files 's3://` + bucket + `/in/*.json'`, 1, "access denied"},
		{"credentials in the URL", `"$SK" read-files 's3://me:pw-in-url@` + bucket + `/in/*.json'`, 2, "credentials in the URL are not accepted"},
		{"bad scheme", `"$SK" read-files 'ftp://` + bucket + `/in/*.json'`, 2, "unsupported scheme ftp://"},
		{"glob in the bucket", `"$SK" read-files 's3://` + bucket + `*/in/*.json'`, 2, "cannot be a glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := peertest.Pipeline(t, dir, env, tt.script+" > /dev/null")
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tt.code, tt.want, stderr)
			}
			for _, secret := range []string{"wrong-secret-value", "pw-in-url", os.Getenv("AWS_SECRET_ACCESS_KEY")} {
				if strings.Contains(stderr, secret) {
					t.Errorf("stderr shows a secret:\n%s", stderr)
				}
			}
		})
	}
}

// TestS3BucketCheckpointCLI: `read-files 's3://B/in/*.json' --checkpoint s3://B/ck/read |
// print --checkpoint s3://B/ck/print`, everything in the bucket: each row printed once over
// two runs, the second reading only the objects added since the first.
func TestS3BucketCheckpointCLI(t *testing.T) {
	bucket, env, root := s3Bucket(t)
	dir := t.TempDir()
	objects := func(from, n int) map[string][]byte {
		out := map[string][]byte{}
		for i := from; i < from+n; i++ {
			out[fmt.Sprintf("in/f%03d.json", i)] = []byte(fmt.Sprintf("{\"id\":%d}\n", i))
		}
		return out
	}
	upload(t, root, objects(0, 30))
	script := `"$SK" read-files --progress off --stable-after 0 --max-files-per-epoch 7 --checkpoint s3://` + bucket + `/ck/read 's3://` + bucket + `/in/*.json' | "$SK" print --progress off --checkpoint s3://` + bucket + `/ck/print --format json > %s`
	run := func(out string) []int {
		t.Helper()
		_, stderr, code := peertest.Pipeline(t, dir, env, fmt.Sprintf(script, out))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		return printedIDs(t, filepath.Join(dir, out))
	}
	sameIDs(t, "run 1", run("out1.ndjson"), 0, 30)
	upload(t, root, objects(30, 5))
	sameIDs(t, "run 2", run("out2.ndjson"), 30, 35)
	if _, err := root.Stat(context.Background(), "ck/read/files/schema.json"); err != nil {
		t.Fatalf("no files log in the bucket checkpoint: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("the run left local files: %v", ents)
	}
}
