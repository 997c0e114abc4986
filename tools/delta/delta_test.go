package deltacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/delta"
	deltasink "github.com/streamkit/streamkit/sink/delta"
	rd "github.com/streamkit/streamkit/source/delta"
	"github.com/streamkit/streamkit/stage"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var regions = []string{"eu", "us", "a/b", ""}

// rows builds rows id in [from, to): day 2024-01-01 + id%3, region regions[id%4] ("" = null).
func rows(mem memory.Allocator, from, to int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Date32Builder).Append(arrow.Date32(19723 + i%3))
		if r := regions[i%4]; r == "" {
			b.Field(2).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(r)
		}
	}
	return b.NewRecordBatch()
}

// makeTable creates a table partitioned by day, region with one commit per batch of n rows.
func makeTable(t *testing.T, root string, commits, n int) {
	t.Helper()
	tbl := delta.NewTable(root, nil)
	p, m, err := delta.NewTableMetadata(schema, delta.CreateOptions{PartitionColumns: []string{"day", "region"}})
	if err != nil {
		t.Fatal(err)
	}
	var s *delta.Snapshot
	for c := 0; c < commits; c++ {
		meta := m
		if s != nil {
			meta = s.Metadata()
		}
		w, err := deltasink.NewDataWriter(delta.NewTable(root, nil).Store(), meta, deltasink.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec := rows(memory.DefaultAllocator, c*n, (c+1)*n)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		adds, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		req := delta.CommitRequest{Read: s, Adds: adds, Txn: &delta.Txn{AppID: "flow-a", Version: int64(c + 1)}}
		if s == nil {
			req.Protocol, req.Metadata = p, m
		}
		res, err := tbl.Commit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		s = res.Snapshot
	}
}

func snap(t *testing.T, root string) *delta.Snapshot {
	t.Helper()
	s, err := delta.NewTable(root, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contents returns "id|day|region" of every row, read from the live files with the
// partition values of the log, sorted.
func contents(t *testing.T, root string) []string {
	t.Helper()
	s := snap(t, root)
	var out []string
	for _, a := range s.Files() {
		p, err := delta.DecodePath(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := file.OpenParquetFile(filepath.Join(root, p), false)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		tb, err := r.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids := tb.Column(0).Data()
		for _, ch := range ids.Chunks() {
			for _, v := range ch.(*array.Int64).Int64Values() {
				reg := "null"
				if r := a.PartitionValues["region"]; r != nil {
					reg = *r
				}
				out = append(out, fmt.Sprintf("%d|%s|%s", v, *a.PartitionValues["day"], reg))
			}
		}
		tb.Release()
		f.Close()
	}
	sort.Strings(out)
	return out
}

func TestOptimizeCompactsAndKeepsRows(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 12, 24) // 12 files in each of 12 partitions
	before := contents(t, root)
	if n := snap(t, root).NumFiles(); n != 144 {
		t.Fatalf("%d files before", n)
	}
	res, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{Where: "region IN ('eu', 'a/b') AND day >= '2024-01-02'"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 48 || res.FilesAdded != 4 || res.PartitionsTouched != 4 || res.Rows != 48*2 {
		t.Fatalf("result %+v", res)
	}
	s := snap(t, root)
	if s.NumFiles() != 144-48+4 {
		t.Fatalf("%d files after", s.NumFiles())
	}
	if got := contents(t, root); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatal("rows changed")
	}
	acts, _ := delta.NewTable(root, nil).ReadCommit(s.Version())
	ci := acts[0].CommitInfo
	if ci.Operation != "OPTIMIZE" || ci.IsBlindAppend || ci.OperationMetrics["numRemovedFiles"] != "48" {
		t.Fatalf("commitInfo %+v", ci)
	}
	for _, a := range acts[1:] {
		if (a.Add != nil && a.Add.DataChange) || (a.Remove != nil && a.Remove.DataChange) {
			t.Fatalf("dataChange=true in %+v", a)
		}
		if a.Add != nil && !strings.Contains(a.Add.Stats, `"numRecords":24`) {
			t.Errorf("stats %s", a.Add.Stats)
		}
	}
	// The rest, including the null-region partitions.
	res, err = Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := snap(t, root); s.NumFiles() != 12 || res.FilesAdded != 8 {
		t.Fatalf("%d files, result %+v", s.NumFiles(), res)
	}
	if got := contents(t, root); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatal("rows changed")
	}
	// Nothing left to do.
	if res, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{}); err != nil || res.Version != -1 {
		t.Fatalf("second optimize: %+v %v", res, err)
	}
}

func TestOptimizeNeverConflictsWithAppends(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 5, 8)
	before := contents(t, root)
	appendMore := func() {
		s := snap(t, root)
		w, _ := deltasink.NewDataWriter(delta.NewTable(root, nil).Store(), s.Metadata(), deltasink.WriterOptions{})
		rec := rows(memory.DefaultAllocator, 1000, 1010)
		w.Write(rec)
		rec.Release()
		adds, _ := w.Close()
		if _, err := delta.NewTable(root, nil).Commit(context.Background(), delta.CommitRequest{Read: s, Adds: adds,
			Txn: &delta.Txn{AppID: "flow-b", Version: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{beforeCommit: appendMore})
	if err != nil {
		t.Fatalf("optimize after a concurrent append: %v", err)
	}
	if res.Version != 6 {
		t.Fatalf("optimize committed version %d, want 6 (after the append at 5)", res.Version)
	}
	want := append(before, contentsOf(t, rows(memory.DefaultAllocator, 1000, 1010))...)
	sort.Strings(want)
	if got := contents(t, root); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("rows after optimize + concurrent append:\n%v\nwant\n%v", got, want)
	}
	// A concurrent optimize that removed our input files first is a conflict.
	other := func() {
		if _, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	appendMore() // new small files to compact
	appendMore()
	_, err = Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{beforeCommit: other})
	var ce *delta.ConflictError
	if !errors.As(err, &ce) || ce.Kind != delta.ConflictDelete {
		t.Fatalf("racing optimizes: %v", err)
	}
}

func contentsOf(t *testing.T, rec arrow.RecordBatch) []string {
	defer rec.Release()
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		reg := "null"
		if !rec.Column(2).IsNull(i) {
			reg = rec.Column(2).(*array.String).Value(i)
		}
		out = append(out, fmt.Sprintf("%d|%s|%s", rec.Column(0).(*array.Int64).Value(i),
			rec.Column(1).(*array.Date32).Value(i).FormattedString(), reg))
	}
	return out
}

// TestWherePredicates checks optimize --where, which is read-delta's partition filter
// (source/delta.Filter). Cases that behaved differently with optimize's former parser say so.
func TestWherePredicates(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 1, 12)
	meta := snap(t, root).Metadata()
	sv := func(s string) *string { return &s }
	pv := func(day, region *string) map[string]*string { return map[string]*string{"day": day, "region": region} }
	for _, tc := range []struct {
		where string
		vals  map[string]*string
		want  bool
	}{
		{"", pv(sv("2024-01-01"), nil), true},
		{"region = 'eu'", pv(sv("2024-01-01"), sv("eu")), true},
		{"region = 'eu'", pv(sv("2024-01-01"), nil), false},
		{"region IS NULL", pv(sv("2024-01-01"), nil), true},
		{"region IS NULL", pv(sv("2024-01-01"), sv("")), true},
		{"region IS NOT NULL and day < '2024-01-02'", pv(sv("2024-01-01"), sv("us")), true},
		{"NOT region IN ('eu','us') OR day > '2024-01-02'", pv(sv("2024-01-03"), sv("eu")), true},
		{"region NOT IN ('eu','us')", pv(sv("2024-01-03"), sv("eu")), false},
		{"region NOT IN ('eu','us')", pv(sv("2024-01-03"), nil), false},
		{`("region" = 'it''s') AND ` + "`day` = '2024-01-01'", pv(sv("2024-01-01"), sv("it's")), true},
		{"region <> 'eu'", pv(sv("2024-01-01"), nil), false},
		// SQL three-valued logic: NOT of a comparison with null is unknown, so no match (the
		// former parser negated a false comparison and matched).
		{"NOT region = 'eu'", pv(sv("2024-01-01"), nil), false},
		{"NOT (region = 'eu' AND day = '2024-01-01')", pv(sv("2024-01-02"), nil), true},
		// Bare literals, == and double-quoted strings (rejected by the former parser).
		{"day >= 2024-01-02 AND day < 2024-01-03", pv(sv("2024-01-02"), sv("eu")), true},
		{"day == 2024-01-02", pv(sv("2024-01-01"), sv("eu")), false},
		{`region = "eu"`, pv(sv("2024-01-01"), sv("eu")), true},
		// Column names ignore case; so do partitionValues keys.
		{"REGION = 'eu'", map[string]*string{"Day": sv("2024-01-01"), "Region": sv("eu")}, true},
	} {
		f, err := rd.ParseTableFilter(tc.where, meta)
		if err != nil {
			t.Errorf("%s: %v", tc.where, err)
			continue
		}
		got, err := f.MatchPartitionValues(tc.vals)
		if err != nil || got != tc.want {
			t.Errorf("%s on %v: got %v, %v", tc.where, tc.vals, got, err)
		}
	}
	// A partition value of the log that is not of its column's type is an error (the former
	// parser treated the comparison as false).
	f, _ := rd.ParseTableFilter("day = 2024-01-01", meta)
	if _, err := f.MatchPartitionValues(pv(sv("yesterday"), nil)); err == nil || !strings.Contains(err.Error(), "partition column day") {
		t.Errorf("bad partition value: %v", err)
	}
	// Messages differ from the former parser's; each still names the problem.
	for where, want := range map[string]string{
		"id = 1":                      `column "id" is not a partition column (partition columns: day, region)`,
		"day = 'yesterday'":           `"yesterday" is not a valid date`,
		"day = '2024-01-01 10:00:00'": `is not a valid date`, // a date column takes dates (the former parser compared instants)
		"region = ":                   "expected a value for region",
		"region = 'eu' AND":           "expected a column name at the end",
		"(region = 'eu'":              "missing ')'",
		"region ~ 'x'":                "expected an operator",
		"region IN 'eu'":              "expected '(' after IN",
		"region = 'eu' junk":          `unexpected "junk"`,
	} {
		_, err := rd.ParseTableFilter(where, meta)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", where, err, want)
		}
	}
	// Optimize reports a bad --where as a usage error, before touching the table.
	var ue *stage.UsageError
	if _, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{Where: "id = 1"}); !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "optimize: --where") {
		t.Errorf("optimize --where 'id = 1': %v", err)
	}
}

func TestVacuum(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 4, 8)
	opt, err := Optimize(context.Background(), delta.NewTable(root, nil).Store(), OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := contents(t, root)
	s := snap(t, root)
	removed := opt.FilesRemoved
	// An orphan: a file a killed writer never committed; hidden files stay.
	orphan := filepath.Join(root, "day=2024-01-01", "part-00000-orphan.c000.snappy.parquet")
	os.WriteFile(orphan, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "_hidden.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "day=2024-01-01", ".part.crc"), []byte("x"), 0o644)

	_, err = Vacuum(context.Background(), delta.NewTable(root, nil).Store(), VacuumOptions{Retain: 0})
	var ue *stage.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "below the table's delta.deletedFileRetentionDuration (168h0m0s)") {
		t.Fatalf("retention check: %v", err)
	}
	// The default retention keeps everything (all files are new).
	res, err := Vacuum(context.Background(), delta.NewTable(root, nil).Store(), VacuumOptions{Retain: -1})
	if err != nil || len(res.Files) != 0 {
		t.Fatalf("default retention: %+v %v", res, err)
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	res, err = Vacuum(context.Background(), delta.NewTable(root, nil).Store(), VacuumOptions{Retain: 30 * time.Minute, Force: true, DryRun: true, Now: later})
	if err != nil || len(res.Files) != removed+1 || res.Deleted {
		t.Fatalf("dry run: %d files %v", len(res.Files), err)
	}
	if snap(t, root).Version() != s.Version() {
		t.Fatal("a dry run committed")
	}
	res, err = Vacuum(context.Background(), delta.NewTable(root, nil).Store(), VacuumOptions{Retain: 30 * time.Minute, Force: true, Now: later})
	if err != nil || len(res.Files) != removed+1 || !res.Deleted {
		t.Fatalf("vacuum: %+v %v", res, err)
	}
	if exists(orphan) || !exists(filepath.Join(root, "_hidden.txt")) || !exists(filepath.Join(root, "day=2024-01-01", ".part.crc")) {
		t.Fatal("wrong files deleted")
	}
	if got := contents(t, root); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatal("rows changed")
	}
	h, err := ReadHistory(context.Background(), root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if h.Commits[0].Operation != "VACUUM END" || h.Commits[1].Operation != "VACUUM START" ||
		h.Commits[1].OperationMetrics["numFilesToDelete"] != fmt.Sprint(removed+1) || h.Commits[0].OperationParameters["status"] != "COMPLETED" {
		t.Fatalf("history %+v", h.Commits)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestHistoryCommand(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 12, 4)
	for _, args := range [][]string{{"history", root, "--format", "json"}, {"history", "file://" + root, "--limit", "3"}} {
		cmd := Command()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if args[2] == "--format" {
			var h History
			if err := json.Unmarshal(out.Bytes(), &h); err != nil {
				t.Fatal(err)
			}
			if h.Version != 11 || len(h.Commits) != 12 || h.Commits[0].Version != 11 || h.Commits[11].Operation != "WRITE" ||
				len(h.Flows) != 1 || h.Flows[0].AppID != "flow-a" || h.Flows[0].Version != 12 || h.Commits[0].Txns[0].Version != 12 ||
				!h.Commits[11].Metadata || h.Commits[0].Adds != 4 {
				t.Fatalf("history %+v", h)
			}
			continue
		}
		text := out.String()
		for _, want := range []string{"table " + root + ", version 11", "flow-a:12", "FLOW (TXN APPID)", "numOutputRows=4"} {
			if !strings.Contains(text, want) {
				t.Errorf("history output lacks %q:\n%s", want, text)
			}
		}
		if strings.Count(text, "WRITE") != 3 {
			t.Errorf("--limit 3:\n%s", text)
		}
	}
	// Commits cleaned up before a checkpoint: history starts after them.
	for v := 0; v < 5; v++ {
		os.Remove(filepath.Join(root, delta.LogDir, fmt.Sprintf("%020d.json", v)))
	}
	h, err := ReadHistory(context.Background(), root, 0)
	if err != nil || h.Oldest != 5 || len(h.Commits) != 7 {
		t.Fatalf("after cleanup: %+v %v", h, err)
	}
}

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{"168h": 168 * time.Hour, "7d": 168 * time.Hour, "0h": 0, "0d": 0, "90m": 90 * time.Minute} {
		if got, err := parseRetention(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"-1h", "7days", "x", "-5d"} {
		if _, err := parseRetention(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for _, neg := range []string{"-5d", "-1h", "-0h"} {
		if _, err := parseRetention(neg); err == nil || !strings.Contains(err.Error(), "a negative retention is not allowed") {
			t.Errorf("%q: %v", neg, err)
		}
	}
}

// cleanup-log deletes the log files before the newest checkpoint older than the cut-off; a
// retention below the table's needs --force.
func TestCleanupLogCommand(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	makeTable(t, root, 14, 2) // versions 0..13, checkpoint 10
	files := snap(t, root).NumFiles()
	old := time.Now().Add(-5 * 24 * time.Hour)
	for v := 0; v <= 11; v++ {
		for _, n := range []string{fmt.Sprintf("%020d.json", v), fmt.Sprintf("%020d.checkpoint.parquet", v)} {
			os.Chtimes(filepath.Join(root, delta.LogDir, n), old, old)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := Command()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(append([]string{"cleanup-log", root}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	// The default retention (30 days) keeps everything.
	if out, err := run(); err != nil || !strings.Contains(out, "nothing to delete: no checkpoint older than the cut-off") {
		t.Fatalf("default retention: %q %v", out, err)
	}
	if _, err := run("--retain", "2d"); err == nil || !strings.Contains(err.Error(), "below the table's delta.logRetentionDuration (720h0m0s)") {
		t.Fatalf("short retention without --force: %v", err)
	}
	out, err := run("--retain", "2d", "--force", "--dry-run")
	if err != nil || !strings.Contains(out, "dry run: 10 log files before checkpoint 10") || !strings.HasPrefix(out, "00000000000000000000.json\n") {
		t.Fatalf("dry run: %q %v", out, err)
	}
	if out, err := run("--retain", "2d", "--force"); err != nil || !strings.Contains(out, "deleted 10 log files before checkpoint 10") {
		t.Fatalf("cleanup: %q %v", out, err)
	}
	h, err := ReadHistory(context.Background(), root, 0)
	if err != nil || h.Oldest != 10 || len(h.Commits) != 4 || h.Version != 13 {
		t.Fatalf("history after cleanup: %+v %v", h, err)
	}
	if s := snap(t, root); s.NumFiles() != files {
		t.Fatalf("%d live files after cleanup, %d before", s.NumFiles(), files)
	}
}
