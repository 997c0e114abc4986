package delta

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestVersionsReadCommitVersionAt(t *testing.T) {
	mem := newMem(t)
	ctx := context.Background()
	dir := t.TempDir()
	tbl := NewTable(dir, mem)
	tbl.Now = fixedClock()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var s *Snapshot
	for i := 0; i < 12; i++ {
		var res *CommitResult
		if s == nil {
			res = appendFile(t, tbl, nil, &CreateOptions{}, sc)
		} else {
			res = appendFile(t, tbl, s, nil, sc)
		}
		s = res.Snapshot
	}
	vr, err := tbl.Versions()
	if err != nil || vr != (LogVersions{Earliest: 0, Latest: 11}) {
		t.Fatalf("Versions = %+v, %v; want 0..11", vr, err)
	}
	acts, err := tbl.ReadCommit(3)
	if err != nil {
		t.Fatal(err)
	}
	adds := 0
	for _, a := range acts {
		if a.Add != nil {
			adds++
		}
	}
	if adds != 1 || acts[0].CommitInfo == nil {
		t.Fatalf("commit 3: %d adds, first action %+v", adds, acts[0])
	}
	if _, err := tbl.ReadCommit(12); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadCommit(12) = %v, want not exist", err)
	}
	if ok, _ := tbl.CommitExists(11); !ok {
		t.Fatal("CommitExists(11) = false")
	}
	// Commit file times one minute apart, with version 5 and 6 sharing a time.
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for v := int64(0); v < 12; v++ {
		mt := t0.Add(time.Duration(v) * time.Minute)
		if v == 6 {
			mt = t0.Add(5 * time.Minute)
		}
		if err := os.Chtimes(filepath.Join(dir, LogDir, CommitFileName(v)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{t0, 0},
		{t0.Add(90 * time.Second), 1},
		{t0.Add(5 * time.Minute), 5},
		{t0.Add(5*time.Minute + time.Millisecond), 6}, // made monotonic: 5 min + 1 ms
		{t0.Add(time.Hour), 11},
	} {
		got, err := tbl.VersionAt(ctx, c.at)
		if err != nil || got != c.want {
			t.Errorf("VersionAt(%s) = %d, %v; want %d", c.at, got, err, c.want)
		}
	}
	if _, err := tbl.VersionAt(ctx, t0.Add(-time.Second)); err == nil || !strings.Contains(err.Error(), "before the earliest available version 0") {
		t.Errorf("VersionAt(before) = %v", err)
	}
	// Clean up commits before the checkpoint at 10: the earliest loadable version is 10.
	for v := int64(0); v < 10; v++ {
		os.Remove(filepath.Join(dir, LogDir, CommitFileName(v)))
	}
	vr, err = tbl.Versions()
	if err != nil || vr != (LogVersions{Earliest: 10, Latest: 11}) {
		t.Fatalf("Versions after cleanup = %+v, %v; want 10..11", vr, err)
	}
	if _, err := tbl.VersionAt(ctx, t0.Add(3*time.Minute)); err == nil || !strings.Contains(err.Error(), "earliest available version 10") {
		t.Errorf("VersionAt(cleaned) = %v", err)
	}
}
