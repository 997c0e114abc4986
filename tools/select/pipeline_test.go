package selecttool

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// pyWriter writes a streamkit stream with pyarrow: two partitions' batches (streamkit.partition),
// a barrier, a watermark, the declared key and event time in the schema, and end=final.
const pyWriter = `
import sys, pyarrow as pa
schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64()),
                    ("ts", pa.timestamp("us", tz="UTC"))],
                   metadata={"streamkit.key": "id", "streamkit.event_time": "ts", "owner": "team-a"})
w = pa.ipc.new_stream(sys.stdout.buffer, schema)
def batch(ids, part):
    b = pa.record_batch([pa.array(ids), pa.array(["eu" if i % 2 else "us" for i in ids]),
                         pa.array([i * 1.5 if i != 4 else None for i in ids]),
                         pa.array([1714550400000000 + i * 1000000 for i in ids], pa.timestamp("us", tz="UTC"))], schema=schema)
    w.write_batch(b, custom_metadata={"streamkit.partition": part})
empty = pa.record_batch([pa.array([], f.type) for f in schema], schema=schema)
batch([1, 2, 3], "orders/0")
batch([4, 5, 6], "orders/1")
w.write_batch(empty, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": "1"})
w.write_batch(empty, custom_metadata={"streamkit.control": "watermark", "streamkit.watermark": "2024-05-01T08:00:03.000000Z"})
batch([7, 8], "orders/0")
w.write_batch(empty, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": "2"})
w.write_batch(empty, custom_metadata={"streamkit.control": "end", "streamkit.end": "final"})
w.close()
`

// pyReader prints what pyarrow reads: the schema and its metadata, then one line per batch.
const pyReader = `
import sys, pyarrow as pa
r = pa.ipc.open_stream(sys.stdin.buffer)
md = {k.decode(): v.decode() for k, v in (r.schema.metadata or {}).items()}
print("schema", [f"{f.name}:{f.type}" for f in r.schema], sorted(md.items()))
while True:
    try:
        b, cm = r.read_next_batch_with_custom_metadata()
    except StopIteration:
        break
    cm = {k.decode(): v.decode() for k, v in (cm or {}).items()}
    if b.num_rows == 0:
        print("control", cm.get("streamkit.control"), cm.get("streamkit.epoch") or cm.get("streamkit.watermark") or cm.get("streamkit.end"))
    else:
        print("batch", cm.get("streamkit.partition"), b.to_pylist())
`

// TestPyarrowOnBothEnds: pyarrow writes a stream, streamkit filter | select transform it over
// real pipes, and pyarrow reads the result: the rows, the partition of each batch, the controls
// in order, the schema metadata (the key followed through a rename, the event time dropped,
// other keys kept).
func TestPyarrowOnBothEnds(t *testing.T) {
	bin := peertest.Binary(t)
	py := peertest.Python(t)
	dir := t.TempDir()
	for name, src := range map[string]string{"w.py": pyWriter, "r.py": pyReader} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c",
		`"$PY" w.py | "$SK" filter 'amount > 2 OR region = '"'us'" | "$SK" select "id AS order_id, upper(region) AS region, round(amount * 2, 1) AS twice" | "$PY" r.py`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PY="+py, "SK="+bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want := `schema ['order_id:int64', 'region:string', 'twice:double'] [('owner', 'team-a'), ('streamkit.key', 'order_id')]
batch orders/0 [{'order_id': 2, 'region': 'US', 'twice': 6.0}, {'order_id': 3, 'region': 'EU', 'twice': 9.0}]
batch orders/1 [{'order_id': 4, 'region': 'US', 'twice': None}, {'order_id': 5, 'region': 'EU', 'twice': 15.0}, {'order_id': 6, 'region': 'US', 'twice': 18.0}]
control barrier 1
control watermark 2024-05-01T08:00:03.000000Z
batch orders/0 [{'order_id': 7, 'region': 'EU', 'twice': 21.0}, {'order_id': 8, 'region': 'US', 'twice': 24.0}]
control barrier 2
control end final
`
	if string(out) != want {
		t.Errorf("pyarrow read:\n%s\nwant:\n%s\nstderr:\n%s", out, want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "streamkit.event_time=ts") {
		t.Errorf("no warning that the event time is no longer declared:\n%s", stderr.String())
	}
}

// duckCompare compares a Delta table read by DuckDB's delta extension with the same query run
// by DuckDB on the source Parquet files: it prints "equal N" or the first differences.
const duckCompare = `
import sys, os, glob, duckdb
site = os.path.dirname(os.path.dirname(duckdb.__file__))
ext = glob.glob(os.path.join(site, "duckdb_extension_delta", "extensions", "*", "delta.duckdb_extension"))
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
con.sql("set enable_progress_bar = false")
con.execute("SET TimeZone='UTC'")
con.execute("LOAD '%s'" % ext[0].replace("'", "''"))
table, files = sys.argv[1], sys.argv[2]
got = con.execute("SELECT route, delay, day, hours FROM delta_scan(?) ORDER BY ALL", [os.path.abspath(table)]).fetchall()
want = con.execute("""SELECT origin || '-' || destination, delay, CAST(date AS DATE), round(CAST(delay AS DOUBLE) / 60, 2)
    FROM read_parquet(?) WHERE delay > 60 AND distance BETWEEN 200 AND 2000 AND origin NOT LIKE 'S%' ORDER BY ALL""", [files]).fetchall()
if got == want:
    print("equal", len(got))
else:
    g, w = set(got), set(want)
    print("differ", len(got), len(want), sorted(g - w)[:3], sorted(w - g)[:3])
`

// TestFilterSelectIntoDelta: read-files | filter | select | write-delta over the demo flights,
// with checkpoints; the table DuckDB reads holds exactly the rows DuckDB computes from the
// same Parquet files with the same WHERE and SELECT.
func TestFilterSelectIntoDelta(t *testing.T) {
	bin := peertest.Binary(t)
	py := peertest.Python(t)
	dir := t.TempDir()
	files := filepath.Join(peertest.Root(t), "testdata", "demo", "landing", "*.parquet")
	cmd := exec.Command("bash", "-o", "pipefail", "-c", `"$SK" read-files "$FILES" --max-files-per-epoch 1 `+
		`| "$SK" filter "delay > 60 AND distance BETWEEN 200 AND 2000 AND origin NOT LIKE 'S%'" `+
		`| "$SK" select "origin || '-' || destination AS route, delay, CAST(date AS DATE) AS day, round(CAST(delay AS DOUBLE) / 60, 2) AS hours" `+
		`| "$SK" write-delta table`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SK="+bin, "FILES="+files, "STREAMKIT_CHECKPOINT="+filepath.Join(dir, "ckpt"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, out)
	}
	check := exec.Command(py, "-c", duckCompare, filepath.Join(dir, "table"), files)
	out, err := check.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "equal ") || got == "equal 0" {
		t.Errorf("the Delta table differs from DuckDB's query over the same files: %s", got)
	} else {
		t.Log(got, "rows")
	}
}
