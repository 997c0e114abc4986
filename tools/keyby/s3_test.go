package keyby

import (
	"slices"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/state"
)

// TestShardedDedupOnBucket: keyby --shards 2 -- dedup with STREAMKIT_CHECKPOINT on an s3://
// prefix of the real test server gives the rows of the same run on a local root; each shard
// keeps its checkpoint and state in <root>/dedup.shard-<i> on the bucket.
func TestShardedDedupOnBucket(t *testing.T) {
	env := s3test.Env(t)
	root := "s3://" + s3test.Bucket(t) + "/ckpt"
	in := input(t, 4, 500)
	args := []string{"keyby", "id", "--shards", "2", "--", "dedup"}
	want, stderr, code := runBin(t, []string{"STREAMKIT_CHECKPOINT=" + t.TempDir()}, in, args...)
	if code != 0 {
		t.Fatalf("local root: exit %d: %s", code, stderr)
	}
	out, stderr, code := runBin(t, append(env, "STREAMKIT_CHECKPOINT="+root), in, args...)
	if code != 0 {
		t.Fatalf("bucket root: exit %d: %s", code, stderr)
	}
	if got, w := rowsOf(t, out), rowsOf(t, want); !slices.Equal(got, w) || len(got) == 0 {
		t.Fatalf("bucket root: %d rows, local root %d", len(got), len(w))
	}
	if ck := schemaCheckpoints(t, out); len(ck) != 3 || ck[2] != root+"/dedup.shard-1" {
		t.Fatalf("checkpoints in the output schema: %q", ck)
	}
	for _, d := range []string{"keyby", "dedup.shard-0", "dedup.shard-1"} {
		if !state.IsStageDir(root + "/" + d) {
			t.Fatalf("no stage checkpoint %s/%s", root, d)
		}
	}
	for _, d := range []string{"dedup.shard-0", "dedup.shard-1"} {
		if eps, err := state.Epochs(root+"/"+d, state.StateDir); err != nil || len(eps) != 4 {
			t.Fatalf("%s state epochs %v, %v; want 1-4", d, eps, err)
		}
	}
}

// schemaCheckpoints reads the streamkit.checkpoints of a stream's schema.
func schemaCheckpoints(t *testing.T, stream []byte) []string {
	t.Helper()
	r, err := codec.NewReader(strings.NewReader(string(stream)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	return codec.Info(r.Schema()).Checkpoints
}
