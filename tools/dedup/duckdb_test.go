package dedup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// duckInput writes flights-3m (vega-datasets, real data) as an Arrow IPC stream with injected
// duplicates: every 10th flight again ~5,000 rows later, every 7th of those a third time
// ~20,000 rows later, and null origins on every 997th flight (null is a key value too). seq
// numbers the rows in stream order.
const duckInput = `
import sys, duckdb, pyarrow as pa
src, out = sys.argv[1], sys.argv[2]
con = duckdb.connect()
con.sql("set enable_progress_bar = false")
con.sql(f"""
create table base as
select file_row_number as rn, date, delay, distance,
       case when file_row_number % 997 = 0 then null else origin end as origin, destination
from read_parquet('{src}', file_row_number = true)""")
tbl = con.sql("""
select seq, date, delay, distance, origin, destination from (
  select rn * 4 as seq, * from base
  union all select (rn + 5000) * 4 + 1, * from base where rn % 10 = 3
  union all select (rn + 20000) * 4 + 2, * from base where rn % 70 = 3
) order by seq""").arrow()
if hasattr(tbl, "read_all"):
    tbl = tbl.read_all()
with pa.ipc.new_stream(out, tbl.schema) as w:
    for b in tbl.to_batches(max_chunksize=65536):
        w.write_batch(b)
print(tbl.num_rows)
`

// duckCheck compares a dedup output (Arrow IPC stream) with DuckDB's first row per key, by
// DISTINCT ON and by ROW_NUMBER.
const duckCheck = `
import sys, json, duckdb, pyarrow as pa
inp, outs = sys.argv[1], sys.argv[2:]
con = duckdb.connect()
con.sql("set enable_progress_bar = false")
con.register("input", pa.ipc.open_stream(inp).read_all())
key = "date, delay, distance, origin, destination"
con.sql(f"create table rownum as select seq from input qualify row_number() over (partition by {key} order by seq) = 1")
con.sql(f"create table distincton as select distinct on ({key}) seq from input order by {key}, seq")
q = lambda s: con.sql(s).fetchone()[0]
res = {"input": q("select count(*) from input"), "rownum": q("select count(*) from rownum"),
       "distincton": q("select count(*) from distincton"),
       "rownum_vs_distincton": q("select count(*) from (select seq from rownum except select seq from distincton)"),
       "outputs": []}
for out in outs:
    con.register("got", pa.ipc.open_stream(out).read_all())
    res["outputs"].append({
      "got": q("select count(*) from got"),
      "got_distinct": q("select count(distinct seq) from got"),
      "missing": q("select count(*) from (select seq from rownum except select seq from got)"),
      "extra": q("select count(*) from (select seq from got except select seq from rownum)"),
      "rows_differ": q(f"select count(*) from (select seq, {key} from got except select seq, {key} from input)"),
    })
    con.unregister("got")
print(json.dumps(res))
`

// TestAgainstDuckDB cross-checks dedup with DuckDB on real data: flights-3m with injected
// duplicates and null keys; the rows dedup keeps (one dedup, and keyby --shards 2 -- dedup)
// must be exactly DuckDB's first row per key (window ROW_NUMBER and SELECT DISTINCT ON).
func TestAgainstDuckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("3.3M rows through DuckDB and the binary")
	}
	py := peertest.Python(t)
	src := peertest.VegaFile(t, "flights-3m.parquet")
	bin := peertest.Binary(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "flights-dup.arrow")
	peertest.RunPython(t, py, duckInput, src, in)
	cases := []struct {
		name string
		args []string
	}{
		{"dedup", []string{"dedup", "--key", "date,delay,distance,origin,destination"}},
		{"keyby --shards 2 -- dedup", []string{"keyby", "date,delay,distance,origin,destination", "--shards", "2", "--", "dedup"}},
	}
	outs := []string{in}
	for i, c := range cases {
		out := filepath.Join(dir, fmt.Sprintf("out%d.arrow", i))
		outs = append(outs, out)
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		inF, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, c.args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inF, f, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, stderr.Bytes())
		}
		inF.Close()
		f.Close()
	}
	var r struct {
		Input              int64 `json:"input"`
		Rownum             int64 `json:"rownum"`
		Distincton         int64 `json:"distincton"`
		RownumVsDistincton int64 `json:"rownum_vs_distincton"`
		Outputs            []struct {
			Got         int64 `json:"got"`
			GotDistinct int64 `json:"got_distinct"`
			Missing     int64 `json:"missing"`
			Extra       int64 `json:"extra"`
			RowsDiffer  int64 `json:"rows_differ"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(peertest.RunPython(t, py, duckCheck, outs...), &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("DuckDB: %d input rows, %d first rows per key (ROW_NUMBER), %d (DISTINCT ON)", r.Input, r.Rownum, r.Distincton)
	if r.Input < 3_300_000 || r.Rownum >= r.Input || r.Rownum != r.Distincton || r.RownumVsDistincton != 0 || len(r.Outputs) != len(cases) {
		t.Fatalf("the DuckDB reference is off: %+v", r)
	}
	for i, o := range r.Outputs {
		t.Logf("%s: %+v", cases[i].name, o)
		if o.Got != r.Rownum || o.GotDistinct != o.Got || o.Missing != 0 || o.Extra != 0 || o.RowsDiffer != 0 {
			t.Fatalf("%s differs from DuckDB: %+v", cases[i].name, o)
		}
	}
}
