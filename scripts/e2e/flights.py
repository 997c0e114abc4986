"""Data preparation and verification for the flights end-to-end job (e2e/flights_test.go).

    flights.py prepare FLIGHTS OUTDIR ROWS PARTS SEED
        OUTDIR/input.parquet       the first ROWS flights of FLIGHTS with their row number in the
                                   file as `id` (first column), 1% of the rows (chosen with SEED)
                                   repeated right after themselves, as a retrying producer does
        OUTDIR/part-NN.parquet     input.parquet cut into PARTS consecutive pieces (cron runs)
        OUTDIR/first-month.parquet DuckDB's hourly GROUP BY of the first calendar month, in the
                                   schema of the job's Delta table (the backfill flow's source)
        prints {"rows", "records", "duplicates", "parts", "first_month_rows", "first_month_end"}

    flights.py verify TABLE FLIGHTS ROWS
        reads the Delta table with delta-rs and with DuckDB's delta extension and compares every
        row with DuckDB's own GROUP BY over the first ROWS rows of FLIGHTS (which holds no
        duplicates; the injected ones exist only in Kafka); prints a JSON summary

    flights.py same TABLE_A TABLE_B
        prints {"a", "b", "only_a", "only_b"}: rows of one table missing from the other
        (multiset difference, EXCEPT ALL), read with DuckDB

The expected row of a window: window_start = the UTC hour of `date` (zone-less timestamps in
the file are UTC), window_end = window_start + 1 h, origin, count = count(*),
avg_delay = avg(delay), max_delay = max(delay), emit = 'on_time'.
"""

import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py"))
import duckdb_delta  # noqa: E402


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def connect():
    con = duckdb_delta.connect()
    con.execute("SET TimeZone='UTC'")
    return con


def expected_sql(flights, rows):
    return f"""
        SELECT time_bucket(INTERVAL 1 HOUR, date) AS window_start, origin,
               count(*) AS n, avg(delay) AS a, max(delay) AS m
        FROM read_parquet({sql_str(flights)}, file_row_number = true)
        WHERE file_row_number < {int(rows)}
        GROUP BY ALL"""


def prepare(flights, outdir, rows, parts, seed):
    rows, parts = int(rows), int(parts)
    t = pq.read_table(flights)
    if rows <= 0 or rows > t.num_rows:
        rows = t.num_rows
    t = t.slice(0, rows)
    t = t.add_column(0, "id", pa.array(range(rows), pa.int64()))
    dups = set(random.Random(int(seed)).sample(range(rows), rows // 100))
    idx = []
    for i in range(rows):
        idx.append(i)
        if i in dups:
            idx.append(i)
    full = t.take(pa.array(idx, pa.int64()))
    os.makedirs(outdir, exist_ok=True)
    pq.write_table(full, os.path.join(outdir, "input.parquet"))
    n = full.num_rows
    for k in range(parts):
        lo, hi = n * k // parts, n * (k + 1) // parts
        pq.write_table(full.slice(lo, hi - lo), os.path.join(outdir, f"part-{k:02d}.parquet"))

    con = connect()
    first = con.sql(f"SELECT date_trunc('month', min(date)) FROM read_parquet({sql_str(flights)})").fetchone()[0]
    end = con.sql(f"SELECT TIMESTAMP '{first}' + INTERVAL 1 MONTH").fetchone()[0]
    path = os.path.join(outdir, "first-month.parquet")
    con.sql(f"""
        COPY (
          SELECT timezone('UTC', window_start) AS window_start,
                 timezone('UTC', window_start + INTERVAL 1 HOUR) AS window_end,
                 origin, n AS count, a AS avg_delay, m AS max_delay, 'on_time' AS emit
          FROM ({expected_sql(flights, rows)})
          WHERE window_start < TIMESTAMP '{end}'
          ORDER BY window_start, origin
        ) TO {sql_str(path)} (FORMAT parquet)""")
    fm = pq.read_metadata(path).num_rows
    print(json.dumps({"rows": rows, "records": n, "duplicates": len(dups), "parts": parts,
                      "first_month_rows": fm, "first_month_end": str(end)}))


def verify(table, flights, rows):
    import deltalake

    dt = deltalake.DeltaTable(table)
    rs = dt.to_pyarrow_table()
    con = connect()
    con.sql(f"CREATE TABLE got AS SELECT * FROM delta_scan({sql_str(duckdb_delta.table_uri(table))})")
    con.sql(f"CREATE TABLE want AS {expected_sql(flights, rows)}")
    con.register("rs", rs)
    res = {
        "version": dt.version(),
        "deltars_rows": rs.num_rows,
        "duckdb_rows": con.sql("SELECT count(*) FROM got").fetchone()[0],
        "expected_rows": con.sql("SELECT count(*) FROM want").fetchone()[0],
        "columns": [f"{f.name}:{f.type}" for f in rs.schema],
        # the two readers must return the same multiset of rows
        "readers_differ": con.sql("SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM rs)").fetchone()[0]
        + con.sql("SELECT count(*) FROM (SELECT * FROM rs EXCEPT ALL SELECT * FROM got)").fetchone()[0],
        "duplicates": con.sql("""SELECT coalesce(sum(c - 1), 0) FROM
            (SELECT count(*) AS c FROM got GROUP BY origin, window_start HAVING count(*) > 1)""").fetchone()[0],
    }
    con.sql("""CREATE TABLE j AS SELECT g.*, w.window_start AS w_start, w.origin AS w_origin, w.n, w.a, w.m
        FROM got g FULL JOIN want w
        ON g.origin = w.origin AND timezone('UTC', g.window_start) = w.window_start""")
    res["missing"] = con.sql("SELECT count(*) FROM j WHERE origin IS NULL").fetchone()[0]
    res["extra"] = con.sql("SELECT count(*) FROM j WHERE w_origin IS NULL").fetchone()[0]
    bad = """origin IS NOT NULL AND w_origin IS NOT NULL AND (
        count <> n OR avg_delay IS DISTINCT FROM a OR max_delay <> m
        OR window_end <> window_start + INTERVAL 1 HOUR OR emit <> 'on_time')"""
    res["mismatched"] = con.sql(f"SELECT count(*) FROM j WHERE {bad}").fetchone()[0]
    res["examples"] = [
        [str(v) for v in r]
        for r in con.sql(f"""SELECT * FROM j WHERE origin IS NULL OR w_origin IS NULL OR ({bad})
            ORDER BY coalesce(w_start, timezone('UTC', window_start)), coalesce(w_origin, origin) LIMIT 5""").fetchall()
    ]
    print(json.dumps(res))


def same(a, b):
    con = connect()
    con.sql(f"CREATE TABLE a AS SELECT * FROM delta_scan({sql_str(duckdb_delta.table_uri(a))})")
    con.sql(f"CREATE TABLE b AS SELECT * FROM delta_scan({sql_str(duckdb_delta.table_uri(b))})")
    print(json.dumps({
        "a": con.sql("SELECT count(*) FROM a").fetchone()[0],
        "b": con.sql("SELECT count(*) FROM b").fetchone()[0],
        "only_a": con.sql("SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM b)").fetchone()[0],
        "only_b": con.sql("SELECT count(*) FROM (SELECT * FROM b EXCEPT ALL SELECT * FROM a)").fetchone()[0],
    }))



def _hard_exit(run):
    """Run run() and leave with its status through os._exit: delta-rs and pyarrow threads can
    abort the interpreter's own shutdown ("terminate called without an active exception") after
    the work is done, which would turn a passing check into a crash."""
    import os as _os, traceback as _tb
    code = 0
    try:
        run()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            code = 1
        else:
            code = e.code or 0
    except BaseException:
        _tb.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _os._exit(code)


def _run():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"prepare": prepare, "verify": verify, "same": same}[cmd](*args)


if __name__ == "__main__":
    _hard_exit(_run)
