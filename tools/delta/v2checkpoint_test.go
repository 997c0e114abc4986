package deltacmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streamkit/streamkit/delta"
)

// Vacuum on a table with v2 checkpoints deletes an orphan data file but no sidecar
// (`_delta_log/_sidecars`), and the table still loads from its v2 checkpoint alone.
func TestVacuumKeepsSidecars(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "t")
	tbl := delta.NewTable(root, nil)
	p, m, err := delta.NewTableMetadata(schema, delta.CreateOptions{Configuration: map[string]string{
		"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	var s *delta.Snapshot
	for v := 0; v <= 4; v++ {
		name := fmt.Sprintf("part-%05d.snappy.parquet", v)
		os.MkdirAll(root, 0o755)
		os.WriteFile(filepath.Join(root, name), []byte("data"), 0o644)
		req := delta.CommitRequest{Read: s, Adds: []delta.Add{{Path: name, PartitionValues: map[string]*string{}, Size: 4, ModificationTime: 1, DataChange: true}}}
		if s == nil {
			req.Protocol, req.Metadata = p, m
		}
		res, err := tbl.Commit(ctx, req)
		if err != nil || res.CheckpointErr != nil {
			t.Fatalf("commit %d: %v %v", v, err, res.CheckpointErr)
		}
		s = res.Snapshot
	}
	sides, err := os.ReadDir(filepath.Join(root, delta.LogDir, delta.SidecarDir))
	if err != nil || len(sides) != 2 {
		t.Fatalf("sidecars %v, %v", sides, err)
	}
	orphan := filepath.Join(root, "part-99999-orphan.snappy.parquet")
	os.WriteFile(orphan, []byte("x"), 0o644)
	later := func() time.Time { return time.Now().Add(time.Hour) }
	res, err := Vacuum(ctx, tbl.Store(), VacuumOptions{Retain: 30 * time.Minute, Force: true, Now: later})
	if err != nil || len(res.Files) != 1 || res.Files[0] != filepath.Base(orphan) {
		t.Fatalf("vacuum: %+v, %v", res, err)
	}
	for _, e := range sides {
		if !exists(filepath.Join(root, delta.LogDir, delta.SidecarDir, e.Name())) {
			t.Errorf("vacuum deleted sidecar %s", e.Name())
		}
	}
	if exists(orphan) {
		t.Error("orphan not vacuumed")
	}
	// VACUUM START and END are versions 5 and 6 (a third checkpoint); version 4 needs the
	// sidecar of checkpoint 4 once the commits before it are gone.
	for v := int64(0); v < 4; v++ {
		os.Remove(filepath.Join(root, delta.LogDir, delta.CommitFileName(v)))
	}
	got, err := delta.NewTable(root, nil).SnapshotAt(ctx, 4)
	if err != nil || got.NumFiles() != 5 {
		t.Fatalf("version 4 from its v2 checkpoint after vacuum: %v", err)
	}
}
