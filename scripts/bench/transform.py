#!/usr/bin/env python3
"""The transform workload of make bench (issue #21): filter and select over one Arrow IPC file,
streamkit side by side with DuckDB and pyspark (scripts/bench/run.sh, workload "transform").

    transform.py prep ROWS DIR                 DIR/transform.arrows, .parquet, .json (once)
    transform.py queries                       the query names: filter select select-substring
    transform.py expr QUERY                    the query's expression (streamkit's argument)
    transform.py duckdb QUERY DIR OUT.json
    transform.py spark QUERY DIR OUT.json
    transform.py count < IPC stream            {"rows": N} of the stream on stdin

Data: ROWS rows in batches of 65,536 (streamkit's --batch-rows), 10 columns; row i holds
id = i (bigint), a = i % 1000 (bigint), b = i * 7 % 10007 (bigint, null when i % 97 = 0),
c = i % 97 (int), d = i % 13 (int), x = i * 0.5 (double), y = (i % 100) / 3 (double),
s = ["Alpha", "BETA", "gamma", "Delta-Force", "epsilon"][i % 5] (string, null when
i % 89 = 0), t = 'k%06d' % (i % 5000) (string), ts = 1,700,000,000 s + i × 1.000003 s
(timestamp µs UTC) — the values of expr/bench_test.go's benchBatches. transform.parquet holds
the same rows (pyarrow, snappy, row groups of 1M rows) for Spark, which cannot read Arrow IPC.

The queries (one text for all three engines):
    filter   a > 500 AND c < 50                                              (25.7% kept)
    select   id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls,
             date_trunc('HOUR', ts) AS hr, regexp_extract(t, 'k(\\d+)', 1) AS tk
    select-substring   the same with substring(t, 2, 6) AS tk for regexp_extract (for builds
             that lack regexp_extract)
(DuckDB's CAST(double AS BIGINT) rounds where Spark's truncates; the work is the same.)

DuckDB: python duckdb over the IPC file read as a pyarrow RecordBatchReader (streamed, not
loaded whole), threads=2, the result fetched as Arrow record batches and written as an Arrow
IPC stream to /dev/null; CPU = getrusage(RUSAGE_SELF) user+sys around open, query and write
(DuckDB's threads included; interpreter start and imports excluded).

Spark: pyspark local[2] (scripts/py/spark_delta.py's session, ANSI mode as Spark 4's default),
spark.read.parquet of transform.parquet, .filter(PRED) or .selectExpr(...), written with the
`noop` format (every row computed, nothing stored). The query runs twice; CPU = the utime+stime
of every process of the session (the Python driver and the JVM, from /proc) across each run,
session start excluded. The first run includes the JVM's JIT warm-up; the figure compared is
the second. The output row count comes from a separate count() (not measured).
"""
import json
import os
import resource
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCH = 65536
FILTER = "a > 500 AND c < 50"
SELECTS = {
    "select": ("id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, "
               "date_trunc('HOUR', ts) AS hr, regexp_extract(t, 'k(\\\\d+)', 1) AS tk"),
    # The same list with substring for regexp_extract, for builds without regexp_extract.
    "select-substring": ("id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, "
                         "date_trunc('HOUR', ts) AS hr, substring(t, 2, 6) AS tk"),
}
QUERIES = ["filter", *SELECTS]
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.int64()),
    ("c", pa.int32()), ("d", pa.int32()), ("x", pa.float64()), ("y", pa.float64()),
    ("s", pa.string()), ("t", pa.string()), ("ts", pa.timestamp("us", tz="UTC")),
])


def batches(rows):
    """The rows in batches of BATCH, computed by DuckDB (one SQL for all the column formulas)."""
    import duckdb

    con = duckdb.connect()
    for lo in range(0, rows, BATCH):
        hi = min(lo + BATCH, rows)
        t = con.execute(f"""
            SELECT i AS id, i % 1000 AS a, CASE WHEN i % 97 = 0 THEN NULL ELSE i * 7 % 10007 END AS b,
                   CAST(i % 97 AS INTEGER) AS c, CAST(i % 13 AS INTEGER) AS d, i * 0.5 AS x, (i % 100) / 3 AS y,
                   CASE WHEN i % 89 = 0 THEN NULL ELSE ['Alpha', 'BETA', 'gamma', 'Delta-Force', 'epsilon'][i % 5 + 1] END AS s,
                   printf('k%06d', i % 5000) AS t, make_timestamp(1700000000000000 + i * 1000003) AS ts
            FROM range({lo}, {hi}) r(i) ORDER BY i""").arrow()
        if isinstance(t, pa.RecordBatchReader):
            t = t.read_all()
        yield t.cast(SCHEMA).combine_chunks().to_batches()[0]


def prep(rows, out):
    arrows, parquet = os.path.join(out, "transform.arrows"), os.path.join(out, "transform.parquet")
    kept = 0
    with pa.OSFile(arrows + ".tmp", "wb") as f, ipc.new_stream(f, SCHEMA) as w, \
            pq.ParquetWriter(parquet + ".tmp", SCHEMA, compression="snappy") as pw:
        group = []
        for b in batches(rows):
            w.write_batch(b)
            kept += pc.sum(pc.and_(pc.greater(b["a"], 500), pc.less(b["c"], 50)).cast(pa.int64())).as_py() or 0
            group.append(b)
            if sum(g.num_rows for g in group) >= 1 << 20:
                pw.write_table(pa.Table.from_batches(group))
                group = []
        if group:
            pw.write_table(pa.Table.from_batches(group))
    os.replace(arrows + ".tmp", arrows)
    os.replace(parquet + ".tmp", parquet)
    with open(os.path.join(out, "transform.json"), "w") as f:
        json.dump({"rows": rows, "batch_rows": BATCH, "filter_kept": kept,
                   "arrows_bytes": os.path.getsize(arrows), "parquet_bytes": os.path.getsize(parquet)}, f, indent=1)


def cpu_self():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_duckdb(query, data, out):
    import duckdb

    t0, c0 = time.monotonic(), cpu_self()
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET TimeZone = 'UTC'")
    src = ipc.open_stream(pa.OSFile(os.path.join(data, "transform.arrows"), "rb"))
    con.register("src", src)
    # DuckDB's string literals take no backslash escapes: 'k(\\d+)' in Spark is 'k(\d+)' here.
    sql = f"SELECT * FROM src WHERE {FILTER}" if query == "filter" else \
        f"SELECT {SELECTS[query].replace(chr(92) * 2, chr(92))} FROM src"
    res = con.execute(sql).to_arrow_reader(BATCH)
    rows = 0
    with pa.OSFile(os.devnull, "wb") as f, ipc.new_stream(f, res.schema) as w:
        for b in res:
            rows += b.num_rows
            w.write_batch(b)
    cpu, wall = cpu_self() - c0, time.monotonic() - t0
    json.dump({"engine": "duckdb", "query": query, "sql": sql, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
               "rows_out": rows, "duckdb": duckdb.__version__}, open(out, "w"), indent=1)


def tree_cpu(root):
    """utime+stime (s) of root and every process below it, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                s = open(f"/proc/{d}/stat", "rb").read()
            except OSError:
                continue
            rest = s[s.rfind(b")") + 2:].split()
            procs[int(d)] = (int(rest[1]), (int(rest[11]) + int(rest[12])) / tick)
    total, todo = 0.0, [root]
    while todo:
        p = todo.pop()
        total += procs.get(p, (0, 0.0))[1]
        todo.extend(c for c, (pp, _) in procs.items() if pp == p)
    return total


def run_spark(query, data, out):
    sys.path.insert(0, os.path.join(ROOT, "scripts", "py"))
    import spark_delta

    t_start = time.monotonic()
    spark = spark_delta.session("streamkit-bench-transform",
                                extra_conf={"spark.driver.memory": os.environ.get("BENCH_SPARK_DRIVER_MEMORY", "2g")})
    startup = time.monotonic() - t_start
    path = os.path.join(data, "transform.parquet")

    def frame():
        df = spark.read.parquet(path)
        return df.filter(FILTER) if query == "filter" else df.selectExpr(*split_select(SELECTS[query]))

    runs = []
    for _ in range(2):
        c0, t0 = tree_cpu(os.getpid()), time.monotonic()
        frame().write.format("noop").mode("overwrite").save()
        runs.append({"cpu_s": round(tree_cpu(os.getpid()) - c0, 3), "wall_s": round(time.monotonic() - t0, 3)})
    rows = frame().count()
    import pyspark
    json.dump({"engine": "spark", "query": query, "cpu_s": runs[1]["cpu_s"], "wall_s": runs[1]["wall_s"],
               "cold": runs[0], "startup_wall_s": round(startup, 3), "rows_out": rows, "pyspark": pyspark.__version__},
              open(out, "w"), indent=1)
    spark.stop()


def split_select(src):
    """The select list's items, split at top-level commas."""
    items, depth, cur, quote = [], 0, "", False
    for ch in src:
        if ch == "'":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()]


def count():
    r = ipc.open_stream(sys.stdin.buffer)
    print(json.dumps({"rows": sum(b.num_rows for b in r)}))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "prep":
        prep(int(args[0]), args[1])
    elif cmd == "expr":
        print(FILTER if args[0] == "filter" else SELECTS[args[0]])
    elif cmd == "queries":
        print(" ".join(QUERIES))
    elif cmd == "duckdb":
        run_duckdb(args[0], args[1], args[2])
    elif cmd == "spark":
        run_spark(args[0], args[1], args[2])
    elif cmd == "count":
        count()
    else:
        sys.exit(f"transform.py: unknown command {cmd}")
