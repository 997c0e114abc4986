package s3test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/arrowtest"
)

// rowsFile writes an Arrow IPC file of ids with a name (null for id 3), an amount, a flag, a
// UTC timestamp and a partition value, and returns its path.
func rowsFile(t *testing.T, name string, ids ...int64) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "part", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if id == 3 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("n" + string(rune('a'+id)))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(id) + 0.25)
		b.Field(3).(*array.BooleanBuilder).Append(id%2 == 0)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(id) * time.Second).UnixMicro()))
		b.Field(5).(*array.StringBuilder).Append([]string{"x", "y"}[id%2])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), name)
	arrowtest.WriteFile(t, path, rec)
	return path
}

// row is the canonical form bucket_delta.py gives the row of rowsFile for id.
func row(id int64) string {
	name := strconv.Quote("n" + string(rune('a'+id)))
	if id == 3 {
		name = "null"
	}
	ts := time.Date(2026, 12, 1, 12, 0, int(id), 0, time.UTC).Format("2006-01-02T15:04:05.000000")
	return fmt.Sprintf(`{"amount": %s, "id": %d, "name": %s, "ok": %t, "part": %q, "ts": "Z%s"}`,
		strconv.FormatFloat(float64(id)+0.25, 'g', -1, 64), id, name, id%2 == 0, []string{"x", "y"}[id%2], ts)
}

// TestBucketReadersAgree proves the readers' set-up on the bucket: a partitioned table that
// delta-rs writes to s3:// is read back with delta-rs, DuckDB and Spark (s3a://), and a table
// Spark writes is read by delta-rs and DuckDB; every reader sees exactly the rows written.
// One Python process runs all of it (one Spark start).
func TestBucketReadersAgree(t *testing.T) {
	bucket := Bucket(t)
	rs, sp := "s3://"+bucket+"/by-delta-rs", "s3://"+bucket+"/nested/by-spark"
	first, second := rowsFile(t, "a.arrow", 1, 2, 3), rowsFile(t, "b.arrow", 4, 5)
	res := RunTables(t,
		Write(DeltaRS, rs, first, "", "part"),
		Write(DeltaRS, rs, second, "append"),
		Read(DeltaRS, rs), Read(DuckDB, rs), Read(Spark, rs),
		Write(Spark, sp, first, ""),
		Write(Spark, sp, second, "append"),
		Read(DeltaRS, sp), Read(DuckDB, sp), Read(Spark, sp),
	)
	var want []string
	for id := int64(1); id <= 5; id++ {
		want = append(want, row(id))
	}
	slices.Sort(want)
	if res[0].Version != 0 || res[1].Version != 1 || res[5].Version != 0 || res[6].Version != 1 {
		t.Errorf("versions after the writes: delta-rs %d, %d; Spark %d, %d; want 0, 1 each",
			res[0].Version, res[1].Version, res[5].Version, res[6].Version)
	}
	for _, c := range []struct {
		i   int
		who string
	}{{2, "delta-rs reads delta-rs"}, {3, "DuckDB reads delta-rs"}, {4, "Spark reads delta-rs"},
		{7, "delta-rs reads Spark"}, {8, "DuckDB reads Spark"}, {9, "Spark reads Spark"}} {
		got := res[c.i]
		if !slices.Equal(got.Rows, want) {
			t.Errorf("%s: got\n  %s\nwant\n  %s", c.who, strings.Join(got.Rows, "\n  "), strings.Join(want, "\n  "))
		}
		// DuckDB does not report the version it read (-1).
		if wantV := map[bool]int64{true: -1, false: 1}[strings.HasPrefix(c.who, "DuckDB")]; got.Version != wantV {
			t.Errorf("%s: version %d, want %d", c.who, got.Version, wantV)
		}
	}
}
