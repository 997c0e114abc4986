package readfiles_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/internal/peertest"
)

// TestParquetInt96Pyarrow: a Parquet file pyarrow writes with INT96 timestamps (as Spark and
// Impala do) over years 1 to 9999, top-level and inside a struct, a list and a map, in three
// row groups, is read by read-files as timestamp[µs, UTC] with every instant exact (pqarrow's
// nanosecond decoding failed outside 1677 to 2262), also with --columns picking and reordering
// two of the columns.
func TestParquetInt96Pyarrow(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	peertest.RunPython(t, py, `
import sys, os, datetime
import pyarrow as pa, pyarrow.parquet as pq
utc = datetime.timezone.utc
D = datetime.datetime
vals = [D(1, 1, 1, tzinfo=utc), D(1500, 6, 1, 12, 30, 0, 250, tzinfo=utc),
        D(9999, 12, 31, 23, 59, 59, 999999, tzinfo=utc), None, D(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc)]
ts = pa.timestamp("us", tz="UTC")
t = pa.table({
  "id": pa.array(range(5), pa.int64()),
  "ts": pa.array(vals, ts),
  "s": pa.array([{"at": v, "n": i} for i, v in enumerate(vals)], pa.struct([("at", ts), ("n", pa.int32())])),
  "l": pa.array([[v, vals[0]] if v else [] for v in vals], pa.list_(ts)),
  "m": pa.array([[("k", v)] for v in vals], pa.map_(pa.string(), ts)),
})
path = os.path.join(sys.argv[1], "int96.parquet")
pq.write_table(t, path, use_deprecated_int96_timestamps=True, row_group_size=2)
f = pq.ParquetFile(path)
types = [f.schema.column(i).physical_type for i in range(len(f.schema))]
assert types.count("INT96") == 4 and f.metadata.num_row_groups == 3, (types, f.metadata.num_row_groups)
`, dir)
	read := func(args ...string) (string, []string) {
		t.Helper()
		cmd := exec.Command(peertest.Binary(t), append([]string{"read-files", "--progress", "off"}, append(args, filepath.Join(dir, "int96.parquet"))...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		if err != nil {
			t.Fatalf("read-files %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		sch, rows := jsonRows(t, raw, mem)
		for _, f := range sch.Fields() {
			// Spark's TIMESTAMP in µs, as read-delta reads INT96, not pqarrow's ns.
			if typ := f.Type.String(); strings.Contains(typ, "timestamp") && !strings.Contains(typ, "timestamp[us, tz=UTC]") {
				t.Errorf("column %s: type %s, want timestamp[us, tz=UTC]", f.Name, typ)
			}
		}
		return schema.DDL(sch), rows
	}
	const (
		t1    = `"0001-01-01T00:00:00Z"`
		t1500 = `"1500-06-01T12:30:00.00025Z"`
		t9999 = `"9999-12-31T23:59:59.999999Z"`
		tNeg  = `"1969-12-31T23:59:59.999999Z"`
	)
	ddl, rows := read()
	wantDDL := "id bigint, ts timestamp, s struct<at:timestamp,n:int>, l array<timestamp>, m map<string,timestamp>, _rescued_data string"
	if ddl != wantDDL {
		t.Errorf("schema\n%s\nwant\n%s", ddl, wantDDL)
	}
	row := func(id, v, l string) string {
		return `{"_rescued_data":null,"id":` + id + `,"l":` + l + `,"m":[{"key":"k","value":` + v + `}],"s":{"at":` + v + `,"n":` + id + `},"ts":` + v + `}`
	}
	want := []string{
		row("0", t1, "["+t1+","+t1+"]"),
		row("1", t1500, "["+t1500+","+t1+"]"),
		row("2", t9999, "["+t9999+","+t1+"]"),
		row("3", "null", "[]"),
		row("4", tNeg, "["+tNeg+","+t1+"]"),
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	ddl, rows = read("--columns", "m,ts")
	if wantDDL := "m map<string,timestamp>, ts timestamp, _rescued_data string"; ddl != wantDDL {
		t.Errorf("--columns m,ts: schema\n%s\nwant\n%s", ddl, wantDDL)
	}
	want = []string{
		`{"_rescued_data":null,"m":[{"key":"k","value":` + t1 + `}],"ts":` + t1 + `}`,
		`{"_rescued_data":null,"m":[{"key":"k","value":` + t1500 + `}],"ts":` + t1500 + `}`,
		`{"_rescued_data":null,"m":[{"key":"k","value":` + t9999 + `}],"ts":` + t9999 + `}`,
		`{"_rescued_data":null,"m":[{"key":"k","value":null}],"ts":null}`,
		`{"_rescued_data":null,"m":[{"key":"k","value":` + tNeg + `}],"ts":` + tNeg + `}`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("--columns m,ts: rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestParquetSparkLegacyRebase: Parquet files Spark wrote in LEGACY rebase mode hold, before
// 1582-10-15, readings of the Julian calendar; read-files rebases them as Spark's Parquet
// reader does (break-test finding: DATE'0001-01-01' and TIMESTAMP'1000-06-15 12:34:56' of
// Spark's LEGACY files came out as 0000-12-30 and 1000-06-21, while read-delta read the same
// files right): INT96 values by org.apache.spark.legacyINT96, DATE and INT64 TIMESTAMP values
// by org.apache.spark.legacyDateTime, a Spark version before 3.0 by itself, and never a
// TIMESTAMP_NTZ; the same values without the keys, or from Spark 3.5 without them, are read as
// written. The files are pyarrow's with Spark's key-value metadata and the Julian readings
// Spark stores (proleptic days -719164 for 0001-01-01, +6 days for 1000-06-15, +10 for
// 1582-10-04).
func TestParquetSparkLegacyRebase(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	peertest.RunPython(t, py, `
import sys, os
import pyarrow as pa, pyarrow.parquet as pq
DAY = 86400 * 10**6
# Julian readings as Spark's LEGACY writer stores them: days since the epoch, proleptic.
julian = [-719164, -354114, -141428, 10957]   # Julian 0001-01-01, 1000-06-15, 1582-10-04; 2000-01-01
tod = [0, 45296789012, 86399999999, 1]
us = [d * DAY + t for d, t in zip(julian, tod)]
def table(meta, ntz):
    cols = {"id": pa.array(range(4), pa.int32()),
            "d": pa.array(julian, pa.int32()).cast(pa.date32()),
            "ts": pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
           }
    cols["s"] = pa.StructArray.from_arrays([cols["ts"]], ["t"])
    if ntz:
        cols["ntz"] = pa.array(us, pa.int64()).cast(pa.timestamp("us"))
    return pa.table(cols).replace_schema_metadata(meta)
cases = {
  "int96_legacy": ({"org.apache.spark.version": "3.5.1", "org.apache.spark.legacyINT96": "", "org.apache.spark.legacyDateTime": ""}, True),
  "int96_plain": ({"org.apache.spark.version": "3.5.1"}, True),
  "int64_legacy": ({"org.apache.spark.version": "3.5.1", "org.apache.spark.legacyDateTime": ""}, False),
  "int64_spark24": ({"org.apache.spark.version": "2.4.5"}, False),
  "int64_plain": ({}, False),
}
for name, (meta, int96) in cases.items():
    pq.write_table(table(meta, not int96), os.path.join(sys.argv[1], name + ".parquet"), use_deprecated_int96_timestamps=int96, coerce_timestamps=None if int96 else "us")
    kv = pq.ParquetFile(os.path.join(sys.argv[1], name + ".parquet")).metadata.metadata
    assert all(k.encode() in kv for k in meta), (name, kv)
`, dir)
	read := func(name string) []string {
		t.Helper()
		cmd := exec.Command(peertest.Binary(t), "read-files", "--progress", "off", filepath.Join(dir, name+".parquet"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		if err != nil {
			t.Fatalf("read-files %s: %v\n%s", name, err, stderr.String())
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		_, rows := jsonRows(t, raw, mem)
		return rows
	}
	row := func(id int, d, ts, ntz string) string {
		r := `{"_rescued_data":null,"d":"` + d + `","id":` + string(rune('0'+id))
		if ntz != "" {
			r += `,"ntz":"` + ntz + `"`
		}
		return r + `,"s":{"t":"` + ts + `"},"ts":"` + ts + `"}`
	}
	rebasedDays := [4]string{"0001-01-01", "1000-06-15", "1582-10-04", "2000-01-01"}
	writtenDays := [4]string{"0000-12-30", "1000-06-21", "1582-10-14", "2000-01-01"}
	tods := [4]string{"T00:00:00", "T12:34:56.789012", "T23:59:59.999999", "T00:00:00.000001"}
	rows := func(days [4]string, ntz bool) []string {
		var out []string
		for i := range days {
			n := ""
			if ntz {
				n = writtenDays[i] + tods[i] // TIMESTAMP_NTZ is never rebased
			}
			out = append(out, row(i, days[i], days[i]+tods[i]+"Z", n))
		}
		return out
	}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"int96_legacy", rows(rebasedDays, false)},
		{"int96_plain", rows(writtenDays, false)},
		{"int64_legacy", rows(rebasedDays, true)},
		{"int64_spark24", rows(rebasedDays, true)},
		{"int64_plain", rows(writtenDays, true)},
	} {
		if rows := read(c.name); strings.Join(rows, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: rows\n%s\nwant\n%s", c.name, strings.Join(rows, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
