package window

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamkit/streamkit/internal/peertest"
)

// nanInput writes an Arrow IPC stream (argv[1]) of float64 and float32 values with NaN, ±Inf,
// ±0 and nulls in groups k, all in one hour; nanCompare compares the window output (argv[2])
// with DuckDB's min and max per k over the same rows, NaN equal to NaN (DuckDB orders NaN
// above +Inf, as Spark does).
const nanInput = `
import sys, math, pyarrow as pa
nan, inf = math.nan, math.inf
rows = [("a", 1.0), ("a", nan), ("a", 3.0), ("b", -inf), ("b", nan), ("b", inf),
        ("c", nan), ("c", nan), ("d", None), ("d", 2.0), ("d", nan), ("e", nan), ("e", -5.0),
        ("f", None), ("f", None), ("g", inf), ("g", -inf), ("h", -0.0), ("h", 7.0)]
t = pa.table({"k": [r[0] for r in rows],
              "x": pa.array([r[1] for r in rows], pa.float64()),
              "y": pa.array([r[1] for r in rows], pa.float32()),
              "ts": pa.array([1714550400000000 + i for i in range(len(rows))], pa.timestamp("us", "UTC"))})
with pa.ipc.new_stream(sys.argv[1], t.schema) as w:
    for b in t.to_batches(max_chunksize=4):
        w.write_batch(b)
`

const nanCompare = `
import sys, duckdb, pyarrow as pa
con = duckdb.connect()
con.sql("set enable_progress_bar = false")  # a slow query would print its bar to stdout
con.register("input", pa.ipc.open_stream(sys.argv[1]).read_all())
con.register("got", pa.ipc.open_stream(sys.argv[2]).read_all())
want = con.sql("select k, min(x) mnx, max(x) mxx, min(y) mny, max(y) mxy from input group by k").fetchall()
bad = con.sql("""
  select w.k, w.mnx, g.mnx, w.mxx, g.mxx, w.mny, g.mny, w.mxy, g.mxy
  from (select k, min(x) mnx, max(x) mxx, min(y) mny, max(y) mxy from input group by k) w
  full join got g on g.k = w.k
  where g.k is null or w.k is null
     or w.mnx is distinct from g.mnx or w.mxx is distinct from g.mxx
     or w.mny is distinct from g.mny or w.mxy is distinct from g.mxy""").fetchall()
print("ok %d groups" % len(want) if not bad else "differ: %r" % bad)
`

// TestMinMaxNaNLikeDuckDB (issue #25 item 5): min and max of floats with NaN follow Spark and
// DuckDB — NaN equals NaN and is larger than every other value, +Inf included; nulls are
// skipped — for float64 and float32, equal to DuckDB's GROUP BY over the same rows. Before,
// min was NaN and max ignored NaN (NaN sorted first).
func TestMinMaxNaNLikeDuckDB(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.arrows"), filepath.Join(dir, "out.arrows")
	peertest.RunPython(t, py, nanInput, in)
	_, stderr, code := peertest.Pipeline(t, dir, nil, "$SK window tumbling --size 1h --time ts --key k "+
		"--agg 'min(x) as mnx, max(x) as mxx, min(y) as mny, max(y) as mxy' < in.arrows > out.arrows")
	if code != 0 {
		t.Fatalf("window: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	if res := string(peertest.RunPython(t, py, nanCompare, in, out)); !strings.HasPrefix(res, "ok ") {
		t.Fatalf("window min/max differ from DuckDB's: %s", res)
	}
}

// nanKeys compares window --key x --agg count (argv[2]) and dedup --key x (argv[3]) with
// DuckDB's GROUP BY x over the rows of nanInput (argv[1]): -0.0 and 0.0 are one group, every
// NaN (any payload or sign) one group, null one group, as Spark normalizes them in grouping.
const nanKeys = `
import sys, math, struct, duckdb, pyarrow as pa
con = duckdb.connect()
con.sql("set enable_progress_bar = false")  # a slow query would print its bar to stdout
t = pa.ipc.open_stream(sys.argv[1]).read_all()
con.register("input", t)
con.register("got", pa.ipc.open_stream(sys.argv[2]).read_all())
con.register("kept", pa.ipc.open_stream(sys.argv[3]).read_all())
want = con.sql("select x, count(*) n from input group by x").fetchall()
bad = con.sql("""select * from (select x, count(*) n from input group by x) w full join got g on g.x = w.x or (g.x is null and w.x is null)
  where w.n is distinct from g.count""").fetchall()
kept = con.sql("select count(*) from kept").fetchone()[0]
print("ok %d groups" % len(want) if not bad and kept == len(want) else "differ: %r, dedup kept %d of %d" % (bad, kept, len(want)))
`

// TestFloatKeysLikeDuckDB (issue #25 item 5, keys): window --key and dedup --key on a float
// column group -0.0 with 0.0 and all NaNs together, as DuckDB's GROUP BY and Spark's grouping
// (which normalizes them) do. Also passed before the min/max fix: keys were already normalized.
func TestFloatKeysLikeDuckDB(t *testing.T) {
	py := peertest.Python(t)
	dir := t.TempDir()
	peertest.RunPython(t, py, nanInput+`
import struct
neg = struct.unpack('<d', struct.pack('<Q', 0xfff8000000000001))[0]  # a negative NaN with a payload
t2 = pa.table({"k": ["z", "z", "z"], "x": pa.array([neg, 0.0, -0.0], pa.float64()), "y": pa.array([1.0, 2.0, 3.0], pa.float32()),
               "ts": pa.array([1714550400000100 + i for i in range(3)], pa.timestamp("us", "UTC"))})
with pa.ipc.new_stream(sys.argv[1], t.schema) as w:
    for b in pa.concat_tables([t, t2]).to_batches(max_chunksize=4):
        w.write_batch(b)
`, dir+"/in.arrows")
	_, stderr, code := peertest.Pipeline(t, dir, nil, "$SK window tumbling --size 1h --time ts --key x --agg count < in.arrows > got.arrows && $SK dedup --key x < in.arrows > kept.arrows")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res := string(peertest.RunPython(t, py, nanKeys, dir+"/in.arrows", dir+"/got.arrows", dir+"/kept.arrows")); !strings.HasPrefix(res, "ok ") {
		t.Fatalf("float keys differ from DuckDB: %s", res)
	}
}
