package delta

import (
	"context"
	"errors"
	"fmt"
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

// writeICTLog writes a Spark-style log by hand: version v's commitInfo carries
// inCommitTimestamp ict[v] when it is not 0, enabled (a metaData action) at version from, and
// every commit file gets the modification time mtime[v].
func writeICTLog(t *testing.T, dir string, from int64, ict []int64, mtime []time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := func(conf string) string {
		return `{"metaData":{"id":"5d1e0b49-0000-4000-8000-000000000001","format":{"provider":"parquet","options":{}},` +
			`"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}",` +
			`"partitionColumns":[],"configuration":{` + conf + `}}}`
	}
	for v := range ict {
		ci := fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}`, mtime[v].UnixMilli())
		if ict[v] != 0 {
			ci = fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"timestamp":%d,"operation":"WRITE"}}`, ict[v], ict[v])
		}
		lines := []string{ci}
		switch {
		case v == 0 && from == 0:
			lines = append(lines, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["inCommitTimestamp"]}}`,
				meta(`"delta.enableInCommitTimestamps":"true"`))
		case v == 0:
			lines = append(lines, `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`, meta(""))
		case int64(v) == from:
			lines = append(lines, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["inCommitTimestamp","appendOnly","invariants"]}}`,
				meta(fmt.Sprintf(`"delta.enableInCommitTimestamps":"true","delta.inCommitTimestampEnablementVersion":"%d","delta.inCommitTimestampEnablementTimestamp":"%d"`, from, ict[v])))
		}
		lines = append(lines, fmt.Sprintf(`{"add":{"path":"part-%d.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`, v))
		name := filepath.Join(dir, LogDir, CommitFileName(int64(v)))
		if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, mtime[v], mtime[v]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVersionAtInCommitTimestamps: on a table with in-commit timestamps, time travel uses
// each commit's inCommitTimestamp from the enablement on, and file times only before it, as
// Spark does. The tables here were copied: every file of the ICT versions has the copy's
// time, hours later, which read-delta --timestamp used to take (a timestamp of the table's
// real history was "before the earliest available version").
func TestVersionAtInCommitTimestamps(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	copied := t0.Add(10 * time.Hour)
	min := func(m int) int64 { return t0.Add(time.Duration(m) * time.Minute).UnixMilli() }

	// Enabled on an existing table at version 2.
	dir := t.TempDir()
	writeICTLog(t, dir, 2, []int64{0, 0, min(2), min(3), min(4)},
		[]time.Time{t0, t0.Add(time.Minute), copied, copied, copied})
	tbl := NewTable(dir, newMem(t))
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{t0.Add(30 * time.Second), 0},
		{t0.Add(90 * time.Second), 1},
		{t0.Add(2 * time.Minute), 2},
		{t0.Add(3*time.Minute + 30*time.Second), 3},
		{t0.Add(time.Hour), 4},
		{copied.Add(time.Hour), 4},
	} {
		if got, err := tbl.VersionAt(ctx, c.at); err != nil || got != c.want {
			t.Errorf("enabled at 2: VersionAt(%s) = %d, %v; want %d", c.at.Format(time.RFC3339), got, err, c.want)
		}
	}
	if _, err := tbl.VersionAt(ctx, t0.Add(-time.Second)); err == nil || !strings.Contains(err.Error(), "before the earliest available version 0") {
		t.Errorf("enabled at 2: VersionAt(before) = %v", err)
	}

	// Created with in-commit timestamps: every version has one; all file times are the copy's.
	dir = t.TempDir()
	writeICTLog(t, dir, 0, []int64{min(0), min(1), min(2), min(3), min(4), min(5), min(6)},
		[]time.Time{copied, copied, copied, copied, copied, copied, copied})
	tbl = NewTable(dir, newMem(t))
	for m := 0; m <= 6; m++ {
		at := t0.Add(time.Duration(m)*time.Minute + 59*time.Second)
		if got, err := tbl.VersionAt(ctx, at); err != nil || got != int64(m) {
			t.Errorf("created with ICT: VersionAt(%s) = %d, %v; want %d", at.Format(time.RFC3339), got, err, m)
		}
	}
	if _, err := tbl.VersionAt(ctx, t0.Add(-time.Second)); err == nil || !strings.Contains(err.Error(), "before the earliest available version 0 (committed 2024-05-01T00:00:00Z)") {
		t.Errorf("created with ICT: VersionAt(before) = %v", err)
	}
}
