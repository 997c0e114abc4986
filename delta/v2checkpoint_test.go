package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// newV2Table creates a table with delta.checkpointPolicy=v2 and checkpoint interval 5 and
// appends n files to it (versions 0..n), checkpoints at every fifth version.
func newV2Table(t *testing.T, n int) (*Table, *Snapshot) {
	t.Helper()
	tbl := newTestTable(t, newMem(t))
	res := appendFile(t, tbl, nil, &CreateOptions{Configuration: map[string]string{
		"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "5"}}, simpleSchema)
	s := res.Snapshot
	for i := 0; i < n; i++ {
		s = appendFile(t, tbl, s, nil, nil).Snapshot
	}
	return tbl, s
}

// v2Names splits the log of root into UUID-named checkpoint files and sidecar files.
func v2Names(t *testing.T, root string) (tops, sidecars []string) {
	t.Helper()
	for _, n := range logFiles(t, root) {
		if len(n) > 21 && isV2CheckpointName(n[21:]) {
			tops = append(tops, n)
		}
	}
	es, _ := os.ReadDir(filepath.Join(root, LogDir, SidecarDir))
	for _, e := range es {
		sidecars = append(sidecars, e.Name())
	}
	return tops, sidecars
}

// A table with checkpointPolicy=v2 gets the v2Checkpoint feature, and its checkpoints are
// UUID-named JSON files with a checkpointMetadata action and one sidecar holding the file
// actions, pointed to by _last_checkpoint (with v2Checkpoint and a valid checksum); replay
// from such a checkpoint alone gives the same snapshot.
func TestV2CheckpointWrite(t *testing.T) {
	tbl, s := newV2Table(t, 11) // versions 0..11, checkpoints 5 and 10
	p := s.Protocol()
	if !slices.Contains(p.ReaderFeatures, FeatureV2Checkpoint) || !slices.Contains(p.WriterFeatures, FeatureV2Checkpoint) || p.MinReaderVersion != 3 || p.MinWriterVersion != 7 {
		t.Fatalf("protocol %+v", p)
	}
	root := tbl.Root()
	tops, sidecars := v2Names(t, root)
	if len(tops) != 2 || !strings.HasPrefix(tops[0], "00000000000000000005.checkpoint.") || !strings.HasSuffix(tops[1], ".json") {
		t.Fatalf("top-level checkpoints %v", tops)
	}
	if len(sidecars) != 2 || !strings.HasPrefix(sidecars[1], "00000000000000000010.checkpoint.0000000001.0000000001.") {
		t.Fatalf("sidecars %v", sidecars)
	}
	for _, n := range logFiles(t, root) {
		if n == CheckpointFileName(5) || n == CheckpointFileName(10) {
			t.Errorf("classic checkpoint %s written for a v2 table", n)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, LogDir, tops[1]))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var first struct {
		CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata"`
	}
	var second struct {
		Sidecar *SidecarFile `json:"sidecar"`
	}
	if len(lines) != 4 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.CheckpointMetadata == nil ||
		json.Unmarshal([]byte(lines[1]), &second) != nil || second.Sidecar == nil {
		t.Fatalf("top-level file:\n%s", b)
	}
	if cm := first.CheckpointMetadata; cm.Version != 10 || cm.Tags["numOfAddFiles"] != "11" || cm.Tags["sidecarNumActions"] != "11" {
		t.Errorf("checkpointMetadata %+v", cm)
	}
	st, err := os.Stat(filepath.Join(root, LogDir, SidecarDir, sidecars[1]))
	if err != nil || second.Sidecar.Path != sidecars[1] || second.Sidecar.SizeInBytes != st.Size() || second.Sidecar.ModificationTime != st.ModTime().UnixMilli() {
		t.Errorf("sidecar action %+v, file %v %v", second.Sidecar, st, err)
	}
	raw, err := os.ReadFile(filepath.Join(root, LogDir, LastCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	lc, err := tbl.ReadLastCheckpoint()
	if err != nil || lc.Version != 10 || lc.V2Checkpoint == nil || lc.V2Checkpoint.Path != tops[1] || lc.Size != 11+4 ||
		lc.V2Checkpoint.SizeInBytes != int64(len(b)) || lc.NumOfAddFiles == nil || *lc.NumOfAddFiles != 11 {
		t.Fatalf("_last_checkpoint %s: %+v, %v", raw, lc, err)
	}
	if lc.V2Checkpoint.SidecarFiles == nil || len(*lc.V2Checkpoint.SidecarFiles) != 1 || len(lc.V2Checkpoint.NonFileActions) != 3 ||
		!strings.HasPrefix(string(lc.V2Checkpoint.NonFileActions[2]), `{"checkpointMetadata":`) {
		t.Errorf("_last_checkpoint inlined actions: %s", raw)
	}
	if sum, err := LastCheckpointChecksum(raw); err != nil || lc.Checksum == "" || sum != lc.Checksum {
		t.Errorf("_last_checkpoint checksum %q, computed %q (%v)", lc.Checksum, sum, err)
	}
	// Only the checkpoint (and the commit after it) remain: the same snapshot.
	for v := 0; v < 10; v++ {
		os.Remove(filepath.Join(root, LogDir, CommitFileName(int64(v))))
	}
	got, err := NewTable(root, tbl.mem).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 11 || got.NumFiles() != 12 || !slices.Equal(paths(got.Files()), paths(s.Files())) || got.Metadata().ID != s.Metadata().ID {
		t.Fatalf("snapshot from the v2 checkpoint: version %d, files %v", got.Version(), paths(got.Files()))
	}
	if got.CheckWrite() != nil {
		t.Errorf("v2 table not writable: %v", got.CheckWrite())
	}
}

func paths(as []*Add) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Path)
	}
	return out
}

// The checksum of PROTOCOL.md's example ("JSON checksum").
func TestLastCheckpointChecksumSpecExample(t *testing.T) {
	doc := `{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}`
	if got, err := LastCheckpointChecksum([]byte(doc)); err != nil || got != "6a92d155a59bf2eecbd4b4ec7fd1f875" {
		t.Fatalf("checksum %q, %v", got, err)
	}
}

// writeV2Commits writes a table's commits 0..n by hand (protocol with v2Checkpoint, one add
// per version) and returns the add lines by version.
func writeV2Commits(t *testing.T, root string, n int) []string {
	t.Helper()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`
	proto := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["v2Checkpoint"],"writerFeatures":["v2Checkpoint"]}}`
	meta := fmt.Sprintf(`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{"delta.checkpointPolicy":"v2"}}}`, schema)
	os.MkdirAll(filepath.Join(root, LogDir, SidecarDir), 0o755)
	var adds []string
	for v := 0; v <= n; v++ {
		add := fmt.Sprintf(`{"add":{"path":"f%d.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`, v)
		adds = append(adds, add)
		body := add + "\n"
		if v == 0 {
			body = proto + "\n" + meta + "\n" + body
		}
		if err := os.WriteFile(filepath.Join(root, LogDir, CommitFileName(int64(v))), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return adds
}

// UUID-named JSON checkpoints with the file actions inline, or with a sidecar (Parquet
// top-level files and classic-named v2 checkpoints, as Spark writes them, are read in
// source/delta's Spark peer test); a broken one (no checkpointMetadata, a missing sidecar, a sidecar path
// outside _sidecars) is not used: replay falls back to an older checkpoint.
func TestV2CheckpointRead(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, root string, adds []string) // writes checkpoints of version 3
		used  bool                                           // the checkpoint of version 3 is used
	}{
		{"inline adds", func(t *testing.T, root string, adds []string) {
			writeV2JSON(t, root, 3, append([]string{`{"checkpointMetadata":{"version":3,"tags":{}}}`}, adds[:4]...)...)
		}, true},
		{"sidecar", func(t *testing.T, root string, adds []string) {
			side := writeSidecar(t, root, adds[:4])
			writeV2JSON(t, root, 3, `{"checkpointMetadata":{"version":3}}`, fmt.Sprintf(`{"sidecar":{"path":%q,"sizeInBytes":1,"modificationTime":1}}`, side))
		}, true},
		{"sidecar as a full path", func(t *testing.T, root string, adds []string) {
			side := writeSidecar(t, root, adds[:4])
			writeV2JSON(t, root, 3, `{"checkpointMetadata":{"version":3}}`,
				fmt.Sprintf(`{"sidecar":{"path":"file:///somewhere/tbl/_delta_log/_sidecars/%s","sizeInBytes":1,"modificationTime":1}}`, side))
		}, true},
		{"no checkpointMetadata", func(t *testing.T, root string, adds []string) {
			writeV2JSON(t, root, 3, adds[:4]...)
		}, false},
		{"wrong version", func(t *testing.T, root string, adds []string) {
			writeV2JSON(t, root, 3, append([]string{`{"checkpointMetadata":{"version":2}}`}, adds[:4]...)...)
		}, false},
		{"missing sidecar", func(t *testing.T, root string, adds []string) {
			writeV2JSON(t, root, 3, `{"checkpointMetadata":{"version":3}}`, `{"sidecar":{"path":"gone.parquet","sizeInBytes":1,"modificationTime":1}}`)
		}, false},
		{"sidecar outside _sidecars", func(t *testing.T, root string, adds []string) {
			writeSidecar(t, root, adds[:4])
			writeV2JSON(t, root, 3, `{"checkpointMetadata":{"version":3}}`, `{"sidecar":{"path":"..%2F..%2Fx.parquet","sizeInBytes":1,"modificationTime":1}}`)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			adds := writeV2Commits(t, root, 5)
			c.setup(t, root, adds)
			// Commits 0..3 gone: only a usable checkpoint 3 gives a snapshot.
			for v := 0; v <= 3; v++ {
				os.Remove(filepath.Join(root, LogDir, CommitFileName(int64(v))))
			}
			s, err := NewTable(root, mem).Snapshot(ctx)
			if !c.used {
				if err == nil {
					t.Fatalf("snapshot from a broken checkpoint: %v", paths(s.Files()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"f0.parquet", "f1.parquet", "f2.parquet", "f3.parquet", "f4.parquet", "f5.parquet"}
			if s.Version() != 5 || !slices.Equal(paths(s.Files()), want) || !s.usesV2Checkpoints() {
				t.Fatalf("version %d files %v", s.Version(), paths(s.Files()))
			}
		})
	}
}

// writeV2JSON writes the UUID-named JSON checkpoint of version v: lines after the protocol and
// metaData of writeV2Commits.
func writeV2JSON(t *testing.T, root string, v int64, lines ...string) {
	t.Helper()
	c0, err := os.ReadFile(filepath.Join(root, LogDir, CommitFileName(0)))
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(string(c0), "\n", 3)
	body := head[0] + "\n" + head[1] + "\n" + strings.Join(lines, "\n") + "\n"
	name := fmt.Sprintf("%020d.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", v)
	if err := os.WriteFile(filepath.Join(root, LogDir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSidecar writes the add lines as a sidecar file and returns its name.
func writeSidecar(t *testing.T, root string, adds []string) string {
	t.Helper()
	acts, err := parseActions(strings.NewReader(strings.Join(adds, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := encodeCheckpoint(acts, newMem(t), sidecarSchema)
	if err != nil {
		t.Fatal(err)
	}
	name := "016ae953-37a9-438e-8683-9a9a4a79a395.parquet"
	if err := os.WriteFile(filepath.Join(root, LogDir, SidecarDir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// Log cleanup deletes the sidecars of the deleted checkpoints, but never one a remaining
// checkpoint references, nor an unreferenced one younger than a day (a checkpoint being
// written).
func TestCleanupLogSidecars(t *testing.T) {
	tbl, s := newV2Table(t, 16) // versions 0..16, checkpoints 5, 10, 15
	tbl.Now = nil
	root := tbl.Root()
	old := time.Now().Add(-5 * 24 * time.Hour)
	ageLog(t, root, 12, old)
	tops, sidecars := v2Names(t, root)
	if len(tops) != 3 || len(sidecars) != 3 {
		t.Fatalf("checkpoints %v, sidecars %v", tops, sidecars)
	}
	side := func(name string) string { return filepath.Join(root, LogDir, SidecarDir, name) }
	// Every sidecar is old; an orphan is old and one is fresh; Hadoop's checksum files of the
	// orphan and of a kept sidecar.
	for _, n := range append(sidecars, "orphan-old.parquet", "orphan-new.parquet", ".orphan-old.parquet.crc", "."+sidecars[1]+".crc") {
		if n != sidecars[0] && n != sidecars[1] && n != sidecars[2] {
			os.WriteFile(side(n), []byte("x"), 0o644)
		}
		if n != "orphan-new.parquet" {
			os.Chtimes(side(n), old, old)
		}
	}
	res, err := tbl.CleanupLog(context.Background(), 2*24*time.Hour, false)
	if err != nil || res.Checkpoint != 10 {
		t.Fatalf("cleanup: %+v, %v", res, err)
	}
	_, left := v2Names(t, root)
	want := []string{"." + sidecars[1] + ".crc", "orphan-new.parquet", sidecars[1], sidecars[2]}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Fatalf("sidecars after cleanup: %v, want %v (deleted %v)", left, want, res.Files)
	}
	if !slices.Contains(res.Files, SidecarDir+"/"+sidecars[0]) || !slices.Contains(res.Files, SidecarDir+"/orphan-old.parquet") ||
		!slices.Contains(res.Files, SidecarDir+"/.orphan-old.parquet.crc") {
		t.Errorf("deleted files %v", res.Files)
	}
	got, err := NewTable(root, tbl.mem).Snapshot(context.Background())
	if err != nil || got.NumFiles() != s.NumFiles() {
		t.Fatalf("after cleanup: %v", err)
	}
	if _, err := NewTable(root, tbl.mem).SnapshotAt(context.Background(), 10); err != nil {
		t.Fatalf("version 10 after cleanup: %v", err)
	}
	// An unreadable remaining checkpoint: no sidecar is deleted.
	os.WriteFile(filepath.Join(root, LogDir, tops[2]), []byte("{not json"), 0o644)
	os.Chtimes(side("orphan-new.parquet"), old, old)
	ageLog(t, root, 16, old)
	if _, err := tbl.CleanupLog(context.Background(), 2*24*time.Hour, false); err == nil {
		t.Fatal("cleanup with an unreadable checkpoint: no error")
	} else if _, e := os.Stat(side("orphan-new.parquet")); errors.Is(e, os.ErrNotExist) {
		t.Fatalf("sidecar deleted although a checkpoint could not be read: %v", err)
	}
}

// On a bucket: a v2 table's UUID-named checkpoint and its sidecar are written through the
// store and read back by a new store once the commits before it are gone; log cleanup
// deletes the older checkpoint's sidecar object and keeps the one still referenced.
func TestS3V2Checkpoint(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	tbl, bucket := s3Table(t, mem)
	props := map[string]string{"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "5"}
	var s *Snapshot
	for v := int64(0); v <= 11; v++ {
		s = commitEpoch(t, tbl, s, props, "flow", v).Snapshot
	}
	lc, err := tbl.ReadLastCheckpoint()
	if err != nil || lc.Version != 10 || lc.V2Checkpoint == nil {
		t.Fatalf("_last_checkpoint %+v, %v", lc, err)
	}
	sides, err := tbl.Store().ReadDir(ctx, LogDir+"/"+SidecarDir)
	if err != nil || len(sides) != 2 {
		t.Fatalf("sidecar objects %v, %v", sides, err)
	}
	for v := int64(0); v < 10; v++ {
		if err := tbl.Store().Remove(ctx, LogDir+"/"+CommitFileName(v)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := OpenTable(s3Store(t, bucket, "t"), mem)
	got, err := fresh.Snapshot(ctx)
	if err != nil || got.Version() != 11 || !slices.Equal(paths(got.Files()), paths(s.Files())) {
		t.Fatalf("snapshot from the bucket's v2 checkpoint: %v", err)
	}
	if tx, ok := got.TxnVersion("flow"); !ok || tx != 11 {
		t.Fatalf("txn version %d %v", tx, ok)
	}
	// Cleanup with a clock five days ahead: checkpoint 10 stays with its sidecar.
	fresh.Now = func() time.Time { return time.Now().Add(5 * 24 * time.Hour) }
	res, err := fresh.CleanupLog(ctx, 2*24*time.Hour, false)
	if err != nil || res.Checkpoint != 10 {
		t.Fatalf("cleanup %+v, %v", res, err)
	}
	left, err := tbl.Store().ReadDir(ctx, LogDir+"/"+SidecarDir)
	if err != nil || len(left) != 1 || left[0].Name != sides[1].Name || !slices.Contains(res.Files, SidecarDir+"/"+sides[0].Name) {
		t.Fatalf("sidecars after cleanup %v (deleted %v), %v", left, res.Files, err)
	}
	if _, err := OpenTable(s3Store(t, bucket, "t"), mem).Snapshot(ctx); err != nil {
		t.Fatalf("after cleanup: %v", err)
	}
}
