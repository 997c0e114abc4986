package deltacmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/deltatest"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestOptimizeInt96: delta optimize compacts data files with INT96 timestamps (as Spark
// writes them; here by pyarrow), top-level and in a list, over years 1 to 9999: every instant
// is kept exactly (pqarrow's nanosecond decoding failed outside 1677 to 2262) and the new
// file stores INT64 µs timestamps.
func TestOptimizeInt96(t *testing.T) {
	py := peertest.Python(t)
	root := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	peertest.RunPython(t, py, `
import sys, os, datetime
import pyarrow as pa, pyarrow.parquet as pq
utc = datetime.timezone.utc
D = datetime.datetime
ts = pa.timestamp("us", tz="UTC")
parts = [[(0, D(1, 1, 1, tzinfo=utc)), (1, D(1500, 6, 1, 12, 30, 0, 250, tzinfo=utc))],
         [(2, D(9999, 12, 31, 23, 59, 59, 999999, tzinfo=utc)), (3, None)]]
for i, rows in enumerate(parts):
    t = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "ts": pa.array([r[1] for r in rows], ts),
                  "l": pa.array([[r[1]] if r[1] else [] for r in rows], pa.list_(ts))})
    pq.write_table(t, os.path.join(sys.argv[1], "part-%d.parquet" % i), use_deprecated_int96_timestamps=True)
`, root)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "l", Type: arrow.ListOf(&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}), Nullable: true},
	}, nil)
	tbl := commitParquetFiles(t, root, sc, 2, "part-0.parquet", "part-1.parquet")
	want := []string{
		`{"id":0,"l":["0001-01-01T00:00:00Z"],"ts":"0001-01-01T00:00:00Z"}`,
		`{"id":1,"l":["1500-06-01T12:30:00.00025Z"],"ts":"1500-06-01T12:30:00.00025Z"}`,
		`{"id":2,"l":["9999-12-31T23:59:59.999999Z"],"ts":"9999-12-31T23:59:59.999999Z"}`,
		`{"id":3,"l":[],"ts":null}`,
	}
	if got := deltatest.JSONRows(t, memory.DefaultAllocator, tbl); !slices.Equal(got, want) {
		t.Fatalf("before optimize:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	res, err := Optimize(context.Background(), tbl.Store(), OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 2 || res.FilesAdded != 1 || res.Rows != 4 {
		t.Fatalf("result %+v", res)
	}
	if got := deltatest.JSONRows(t, memory.DefaultAllocator, tbl); !slices.Equal(got, want) {
		t.Errorf("after optimize:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := snap(t, root)
	f := s.Files()[0]
	pf, err := file.OpenParquetFile(filepath.Join(root, f.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	for i := 0; i < pf.MetaData().Schema.NumColumns(); i++ {
		if c := pf.MetaData().Schema.Column(i); c.PhysicalType() == parquet.Types.Int96 {
			t.Errorf("optimize's file %s: column %s is still INT96", f.Path, c.Path())
		}
	}
}

// TestOptimizeLegacyRebase: files marked as Spark's LEGACY rebase mode (the
// org.apache.spark.legacyINT96 and legacyDateTime keys) hold hybrid-Julian readings before
// 1582-10-15; read-delta rebases them, and the file delta optimize writes, which has no such
// keys, must hold the rebased values, so the table reads the same after optimize.
func TestOptimizeLegacyRebase(t *testing.T) {
	py := peertest.Python(t)
	root := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	peertest.RunPython(t, py, `
import sys, os, datetime
import pyarrow as pa, pyarrow.parquet as pq
utc = datetime.timezone.utc
D = datetime.datetime
ts = pa.timestamp("us", tz="UTC")
rows = [(0, D(1, 1, 1, tzinfo=utc), datetime.date(1, 1, 1)), (1, D(1500, 6, 1, 12, 30, tzinfo=utc), datetime.date(1500, 6, 1)),
        (2, D(1900, 1, 1, tzinfo=utc), datetime.date(1900, 1, 1))]
for i, r in enumerate(rows):
    t = pa.table({"id": pa.array([r[0]], pa.int64()), "ts": pa.array([r[1]], ts), "d": pa.array([r[2]], pa.date32()),
                  "s": pa.array([{"ts": r[1]}], pa.struct([("ts", ts)]))})
    t = t.replace_schema_metadata({"org.apache.spark.version": "3.5.1", "org.apache.spark.legacyINT96": "", "org.apache.spark.legacyDateTime": ""})
    pq.write_table(t, os.path.join(sys.argv[1], "part-%d.parquet" % i), use_deprecated_int96_timestamps=True)
`, root)
	tsT := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: tsT, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "ts", Type: tsT, Nullable: true}), Nullable: true},
	}, nil)
	tbl := commitParquetFiles(t, root, sc, 1, "part-0.parquet", "part-1.parquet", "part-2.parquet")
	before := deltatest.JSONRows(t, memory.DefaultAllocator, tbl)
	// The rebase moves the pre-1582 values (by 2 days in year 1, 10 in 1500) and not 1900's.
	if len(before) != 3 || strings.Contains(before[0], `"0001-01-01T00:00:00Z"`) || !strings.Contains(before[2], `"1900-01-01T00:00:00Z"`) {
		t.Fatalf("before optimize, the LEGACY files read as:\n%s", strings.Join(before, "\n"))
	}
	if _, err := Optimize(context.Background(), tbl.Store(), OptimizeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := deltatest.JSONRows(t, memory.DefaultAllocator, tbl); !slices.Equal(got, before) {
		t.Errorf("after optimize:\n%s\nbefore:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
}

// commitParquetFiles makes root a Delta table of schema sc whose first commit adds the
// Parquet files names (written beside it by another writer), each of perFile rows.
func commitParquetFiles(t *testing.T, root string, sc *arrow.Schema, perFile int, names ...string) *delta.Table {
	t.Helper()
	p, m, err := delta.NewTableMetadata(sc, delta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var adds []delta.Add
	for _, name := range names {
		st, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, delta.Add{Path: name, PartitionValues: map[string]*string{}, Size: st.Size(), ModificationTime: 1, DataChange: true, Stats: fmt.Sprintf(`{"numRecords":%d}`, perFile)})
	}
	tbl := delta.NewTable(root, nil)
	if _, err := tbl.Commit(context.Background(), delta.CommitRequest{Protocol: p, Metadata: m, Adds: adds}); err != nil {
		t.Fatal(err)
	}
	return tbl
}
