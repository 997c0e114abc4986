package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// TestS3Store runs the Store contract against the real S3-compatible server of scripts/s3.sh:
// put-if-absent races, atomic replace, streamed writes above the spool limit, ranged reads,
// paginated listing (1,500 objects over two pages) and a lease.
func TestS3Store(t *testing.T) {
	s3test.Server(t)
	bucket := s3test.Bucket(t)
	ctx := context.Background()
	s, err := storage.Open(ctx, "s3://"+bucket+"/tables/t1", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.LocalDir() != "" || s.Location() != "s3://"+bucket+"/tables/t1" {
		t.Fatalf("location %q local %q", s.Location(), s.LocalDir())
	}
	if _, err := s.ReadFile(ctx, "_delta_log/missing.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte(fmt.Sprint("writer", i)))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else if !errors.Is(err, storage.ErrExist) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d writers won one version", wins)
	}
	big := strings.Repeat("0123456789abcdef", (20<<20)/16) // above the 16 MiB spool limit
	w, err := s.Create(ctx, "part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(big); off += 1 << 20 {
		io.WriteString(w, big[off:off+1<<20])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := s.Open(ctx, "part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != int64(len(big)) {
		t.Fatalf("size %d", f.Size())
	}
	buf := make([]byte, 8)
	if _, err := f.ReadAt(buf, int64(len(big))-8); err != nil || string(buf) != "89abcdef" {
		t.Fatalf("ReadAt tail %q %v", buf, err)
	}
	f.Close()
	for i := 0; i < 1500; i++ {
		if err := s.WriteFile(ctx, fmt.Sprintf("many/%05d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := s.Walk(ctx, "many", func(storage.Info) error { n++; return nil }); err != nil || n != 1500 {
		t.Fatalf("Walk listed %d objects, %v", n, err)
	}
	ents, err := s.ReadDir(ctx, "")
	if err != nil || len(ents) != 3 {
		t.Fatalf("ReadDir root %+v %v", ents, err)
	}
	a, err := storage.AcquireLease(ctx, s, "_lease", "checkpoint t1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.AcquireLease(ctx, s, "_lease", "checkpoint t1", time.Second); err == nil {
		t.Fatal("second owner accepted")
	}
	a.Release()
}

// TestS3Refusals: a missing bucket and wrong credentials fail at Open with a clear message
// that holds no secret.
func TestS3Refusals(t *testing.T) {
	s3test.Server(t)
	ctx := context.Background()
	_, err := storage.Open(ctx, "s3://no-such-bucket-streamkit/t", storage.Options{Retry: storage.Retry{Attempts: 1}})
	if err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket-streamkit" does not exist`) {
		t.Fatalf("missing bucket: %v", err)
	}
	bucket := s3test.Bucket(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
	_, err = storage.Open(ctx, "s3://"+bucket+"/t", storage.Options{Retry: storage.Retry{Attempts: 1}})
	if err == nil || !strings.Contains(err.Error(), "access denied") || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("bad credentials: %v", err)
	}
}

// TestS3LostCreateResponses: a put-if-absent whose response is lost has taken effect, so its
// retry is refused with 412; the store must read the object back and report success, both for
// a commit and for the conditional-write probe that precedes a bucket's first one (CI saw
// "lock flow f: create …/_streamkit_probe_…: PreconditionFailed (after 2 tries)" before).
func TestS3LostCreateResponses(t *testing.T) {
	bucket := s3test.Bucket(t)
	via, proxy := s3test.Proxied(t, 7)
	for _, kv := range via.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	s, err := storage.Open(ctx, "s3://"+bucket+"/t", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json"} {
		// The first put-if-absent probes the bucket: the lost response is the probe's.
		before := proxy.Stats().Dropped
		proxy.DropNextResponses(1)
		if err := s.PutIfAbsent(ctx, name, []byte("mine")); err != nil {
			t.Fatalf("put-if-absent %d with a lost response: %v", i, err)
		}
		if d := proxy.Stats().Dropped - before; d != 1 {
			t.Fatalf("put-if-absent %d: the proxy dropped %d responses, want 1", i, d)
		}
		if got, err := s.ReadFile(ctx, name); err != nil || string(got) != "mine" {
			t.Fatalf("%s holds %q (%v)", name, got, err)
		}
		// Another writer's bytes are still refused after a lost response.
		proxy.DropNextResponses(1)
		if err := s.PutIfAbsent(ctx, name, []byte("theirs")); !errors.Is(err, storage.ErrExist) {
			t.Fatalf("second writer of %s: %v, want ErrExist", name, err)
		}
	}
}
