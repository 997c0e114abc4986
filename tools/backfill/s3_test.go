package backfill_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// TestS3BackfillFromBucketGlob: `backfill --from 's3://B/in/**/*.json'` reads its files from a
// bucket of the real S3 server (read-files' bucket patterns) into a local table: every row
// once, and a second run of the same flow adds nothing.
func TestS3BackfillFromBucketGlob(t *testing.T) {
	bucket := s3test.Bucket(t)
	env := s3test.Env(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	root, err := storage.Open(ctx, "s3://"+bucket, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		body := fmt.Sprintf("{\"id\":%d}\n{\"id\":%d}\n", 2*i, 2*i+1)
		if err := root.WriteFile(ctx, fmt.Sprintf("in/%d/part-%02d.json", i%4, i), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	script := `"$SK" backfill --progress off --from 's3://` + bucket + `/in/**/*.json' --to t --flow f >/dev/null && "$SK" read-delta t | "$SK" print --format csv | tail -n +2 | sort -n | uniq | wc -l`
	for run := 1; run <= 2; run++ {
		out, stderr, code := peertest.Pipeline(t, dir, env, script)
		if code != 0 || strings.TrimSpace(out) != "50" {
			t.Fatalf("run %d: exit %d, %s distinct rows (want 50):\n%s", run, code, strings.TrimSpace(out), stderr)
		}
	}
	out, stderr, _ := peertest.Pipeline(t, dir, env, `"$SK" read-delta t | "$SK" print --format csv | tail -n +2 | wc -l`)
	if strings.TrimSpace(out) != "50" {
		t.Fatalf("%s rows in the table after two runs, want 50:\n%s", strings.TrimSpace(out), stderr)
	}
}
