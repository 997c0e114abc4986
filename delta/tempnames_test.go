package delta

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Temporary files in _delta_log — the local store's `.tmp-*` and the `_commit_*`/`_tmp_*` ones
// of older versions that a crash left behind — are neither versions nor checkpoints, and log
// cleanup leaves them alone.
func TestLogIgnoresTempFiles(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl := NewTable(t.TempDir(), mem)
	p, m, err := NewTableMetadata(simpleSchema, CreateOptions{Configuration: map[string]string{"delta.checkpointInterval": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Commit(ctx, CommitRequest{Protocol: p, Metadata: m})
	if err != nil {
		t.Fatal(err)
	}
	commitEmpty(t, tbl, res.Snapshot, 2) // versions 0..2, checkpoint 2
	temps := []string{"_commit_12345.json.tmp", "_tmp_678." + CheckpointFileName(4) + ".tmp", "_tmp_9." + LastCheckpointName + ".tmp",
		".tmp-" + CommitFileName(3) + "-4242", ".tmp-" + CheckpointFileName(3) + "-1"}
	for _, n := range temps {
		if err := os.WriteFile(filepath.Join(tbl.Root(), LogDir, n), []byte("{partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := tbl.Snapshot(ctx)
	if err != nil || s.Version() != 2 {
		t.Fatalf("snapshot: %v", err)
	}
	if vs, err := tbl.CommitVersions(); err != nil || !slices.Equal(vs, []int64{0, 1, 2}) {
		t.Fatalf("CommitVersions = %v, %v", vs, err)
	}
	if vr, err := tbl.Versions(); err != nil || vr != (LogVersions{Earliest: 0, Latest: 2}) {
		t.Fatalf("Versions = %+v, %v", vr, err)
	}
	if ok, _ := tbl.CommitExists(3); ok {
		t.Fatal("a temporary file counts as commit 3")
	}
	tbl.Now = func() time.Time { return time.Now().Add(60 * 24 * time.Hour) }
	cl, err := tbl.CleanupLog(ctx, 0, false)
	if err != nil || cl.Checkpoint != 2 || !slices.Equal(cl.Files, []string{CommitFileName(0), CommitFileName(1)}) {
		t.Fatalf("cleanup: %+v, %v", cl, err)
	}
	for _, n := range temps {
		if _, err := os.Stat(filepath.Join(tbl.Root(), LogDir, n)); err != nil {
			t.Errorf("cleanup touched %s: %v", n, err)
		}
	}
}
