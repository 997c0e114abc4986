package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commitEmpty writes n txn-only commits after s and returns the last snapshot.
func commitEmpty(t *testing.T, tbl *Table, s *Snapshot, n int) *Snapshot {
	t.Helper()
	for i := 0; i < n; i++ {
		res, err := tbl.Commit(context.Background(), CommitRequest{Read: s, Txn: &Txn{AppID: "f", Version: s.Version() + 1}})
		if err != nil {
			t.Fatal(err)
		}
		if res.CheckpointErr != nil || res.LogCleanupErr != nil {
			t.Fatal(res.CheckpointErr, res.LogCleanupErr)
		}
		s = res.Snapshot
	}
	return s
}

// ageLog sets the modification time of the log files of versions ≤ upTo to at.
func ageLog(t *testing.T, root string, upTo int64, at time.Time) {
	t.Helper()
	for _, n := range logFiles(t, root) {
		if len(n) > 20 && allDigits(n[:20]) {
			if v, _ := strconv.ParseInt(n[:20], 10, 64); v <= upTo {
				if err := os.Chtimes(filepath.Join(root, LogDir, n), at, at); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// Expired log files before the newest checkpoint older than the retention cut-off are
// deleted after a checkpoint; everything a version within retention needs stays.
func TestCleanupLog(t *testing.T) {
	mem := newMem(t)
	now := time.Now()
	tbl := NewTable(t.TempDir(), mem)
	p, m, err := NewTableMetadata(simpleSchema, CreateOptions{Configuration: map[string]string{
		"delta.logRetentionDuration": "interval 2 days", "delta.checkpointInterval": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Commit(context.Background(), CommitRequest{Protocol: p, Metadata: m})
	if err != nil {
		t.Fatal(err)
	}
	s := commitEmpty(t, tbl, res.Snapshot, 17) // versions 0..17, checkpoints 5, 10, 15
	// Nothing is older than the retention: nothing is deleted.
	if got, err := tbl.CleanupLog(context.Background(), -1, false); err != nil || len(got.Files) != 0 || got.Checkpoint != -1 {
		t.Fatalf("cleanup within retention: %+v, %v", got, err)
	}
	// Versions 0..12 are 5 days old, 13..17 one hour old. Cut-off: midnight two days ago:
	// checkpoint 10 is the newest before it.
	ageLog(t, tbl.Root(), 12, now.Add(-5*24*time.Hour))
	ageLog(t, tbl.Root(), 17, now.Add(-time.Hour))
	ageLog(t, tbl.Root(), 12, now.Add(-5*24*time.Hour))
	dry, err := tbl.CleanupLog(context.Background(), -1, true)
	if err != nil || dry.Checkpoint != 10 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if len(logFiles(t, tbl.Root())) != 18+3+1 {
		t.Fatalf("dry run deleted files: %v", logFiles(t, tbl.Root()))
	}
	// The next checkpoint (20) triggers the cleanup.
	s = commitEmpty(t, tbl, s, 3)
	names := logFiles(t, tbl.Root())
	var want []string
	for v := int64(10); v <= 20; v++ {
		want = append(want, CommitFileName(v))
	}
	want = append(want, CheckpointFileName(10), CheckpointFileName(15), CheckpointFileName(20), LastCheckpointName)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("log after cleanup:\n got %v\nwant %v", names, want)
	}
	if !slices.Equal(dry.Files[:3], []string{CommitFileName(0), CommitFileName(1), CommitFileName(2)}) || len(dry.Files) != 11 {
		t.Errorf("dry run files (oldest first, commit before checkpoint): %v", dry.Files)
	}
	vr, err := tbl.Versions()
	if err != nil || vr.Earliest != 10 || vr.Latest != 20 {
		t.Fatalf("versions after cleanup: %+v, %v", vr, err)
	}
	for v := int64(10); v <= 20; v++ {
		if _, err := tbl.SnapshotAt(context.Background(), v); err != nil {
			t.Errorf("version %d not loadable after cleanup: %v", v, err)
		}
	}
	want9 := "version 9: the log before version 10 was cleaned up (delta.logRetentionDuration); the oldest version that can be reconstructed is 10 (latest 20)"
	if _, err := tbl.SnapshotAt(context.Background(), 9); err == nil || !strings.Contains(err.Error(), want9) {
		t.Errorf("version 9 after cleanup: %v, want %q", err, want9)
	}
	if _, err := tbl.SnapshotAt(context.Background(), 21); err == nil || !strings.Contains(err.Error(), "version 21: version does not exist (latest 20)") {
		t.Errorf("version 21: %v", err)
	}
	if got, _ := s.TxnVersion("f"); got != 20 {
		t.Errorf("txn version %d", got)
	}
	// delta.enableExpiredLogCleanup=false keeps everything.
	tbl2 := NewTable(t.TempDir(), mem)
	p, m, _ = NewTableMetadata(simpleSchema, CreateOptions{Configuration: map[string]string{
		"delta.logRetentionDuration": "interval 1 days", "delta.checkpointInterval": "2", "delta.enableExpiredLogCleanup": "false"}})
	res, _ = tbl2.Commit(context.Background(), CommitRequest{Protocol: p, Metadata: m})
	s2 := commitEmpty(t, tbl2, res.Snapshot, 4)
	ageLog(t, tbl2.Root(), 4, now.Add(-10*24*time.Hour))
	commitEmpty(t, tbl2, s2, 2)
	if n := len(logFiles(t, tbl2.Root())); n != 7+3+1 {
		t.Errorf("enableExpiredLogCleanup=false: %d log files: %v", n, logFiles(t, tbl2.Root()))
	}
}

func TestValidateProperties(t *testing.T) {
	for _, c := range []struct{ k, v, want string }{
		{"delta.deletedFileRetentionDuration", "banana", `delta.deletedFileRetentionDuration="banana": want an interval such as "interval 7 days"`},
		{"delta.checkpointInterval", "0", `delta.checkpointInterval="0": want a positive integer`},
		{"delta.logRetentionDuration", "-1 days", `delta.logRetentionDuration="-1 days": the interval must not be negative`},
		{"delta.logRetentionDuration", "interval 1 month", "months and years are not accepted"},
		{"delta.appendOnly", "maybe", `delta.appendOnly="maybe": want true or false`},
		{"delta.isolationLevel", "snapshot", "one of Serializable, WriteSerializable"},
		{"delta.dataSkippingNumIndexedCols", "-2", "an integer ≥ -1"},
		{"delta.fooBar", "1", "unknown Delta property delta.fooBar=1"},
		{"delta.minReaderVersion", "3", "cannot be set"},
		{"delta.feature.deletionVectors", "supported", "table features"},
		{"delta.constraints.positive", "id > 0", "CHECK constraints"},
		{"delta.checkpointInterval", "2147483648", `delta.checkpointInterval="2147483648": want a positive integer ≤ 2147483647`},
		{"delta.randomPrefixLength", "99999999999", "≤ 2147483647"},
		{"delta.enableDeletionVectors", "true", "delta.enableDeletionVectors=true: streamkit does not write deletion vectors"},
		{"delta.enableDeletionVectors", " TRUE", "does not enable the deletionVectors table feature"},
		{"delta.universalFormat.enabledFormats", "iceberg", "UniForm (Iceberg/Hudi metadata) is not supported"},
	} {
		_, err := ValidateProperties(map[string]string{c.k: c.v}, false)
		if !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: %v, want %q", c.k, c.v, err, c.want)
		}
	}
	got, err := ValidateProperties(map[string]string{"delta.appendonly": "TRUE", "delta.logRetentionDuration": "interval 1 week 2 days",
		"delta.checkpointinterval": "20", "owner": "data-eng", "delta.targetFileSize": "1048576"}, false)
	if err != nil || got["delta.appendOnly"] != "true" || got["delta.checkpointInterval"] != "20" || got["owner"] != "data-eng" || len(got) != 5 {
		t.Errorf("valid properties: %v, %v", got, err)
	}
	if got, err := ValidateProperties(map[string]string{"delta.enableDeletionVectors": "False", "delta.checkpointInterval": "2147483647"}, false); err != nil ||
		got["delta.enableDeletionVectors"] != "false" || got["delta.checkpointInterval"] != "2147483647" {
		t.Errorf("deletion vectors off, largest interval: %v, %v", got, err)
	}
	if got, err := ValidateProperties(map[string]string{"delta.fooBar": "1"}, true); err != nil || got["delta.fooBar"] != "1" {
		t.Errorf("allowArbitrary: %v, %v", got, err)
	}
	if d, err := ParseInterval("interval 1 week 2 days"); err != nil || d != 9*24*time.Hour {
		t.Errorf("ParseInterval: %v %v", d, err)
	}
	if d, err := ParseInterval("30 SECONDS"); err != nil || d != 30*time.Second {
		t.Errorf("ParseInterval: %v %v", d, err)
	}
}
