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
