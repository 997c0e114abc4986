"""Compare streamkit window output (an Arrow IPC stream file) with DuckDB's GROUP BY.

usage: compare_duckdb.py STREAMKIT_OUT.arrows PARQUET SIZE_HOURS SLIDE_HOURS
Windows are [start, start+size) with starts every slide hours, aligned to the Unix epoch in
UTC, keyed by origin; aggregates count, avg(delay), max(delay). Prints "ok N" or the first
differences and exits 1.
"""
import sys
import duckdb
import pyarrow as pa

out, parquet, size, slide = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with pa.OSFile(out, "rb") as f:
    got = pa.ipc.open_stream(f).read_all()
con = duckdb.connect()
con.register("got", got)
k = size // slide
q = f"""
WITH t AS (SELECT date, delay, origin, time_bucket(INTERVAL {slide} HOUR, date) AS b FROM read_parquet('{parquet}')),
w AS (SELECT b - INTERVAL (j * {slide}) HOUR AS ws, delay, origin FROM t CROSS JOIN range({k}) r(j))
SELECT ws, ws + INTERVAL {size} HOUR AS we, origin, count(*) AS n, avg(delay) AS a, max(delay) AS m
FROM w GROUP BY ALL"""
diff = con.execute(f"""
WITH want AS ({q}),
have AS (SELECT window_start::TIMESTAMP AS ws, window_end::TIMESTAMP AS we, origin, "count" AS n, avg_delay AS a,
                max_delay AS m FROM got WHERE emit = 'on_time')
SELECT 'missing' AS side, * FROM (SELECT * FROM want EXCEPT SELECT * FROM have)
UNION ALL SELECT 'extra', * FROM (SELECT * FROM have EXCEPT SELECT * FROM want)
""").fetchall()
# avg may differ in the last bits between engines: re-check numeric closeness before failing
if diff:
    close = con.execute(f"""
    WITH want AS ({q}),
    have AS (SELECT window_start::TIMESTAMP AS ws, window_end::TIMESTAMP AS we, origin, "count" AS n, avg_delay AS a,
                    max_delay AS m FROM got WHERE emit = 'on_time')
    SELECT count(*) FROM want FULL OUTER JOIN have USING (ws, we, origin)
    WHERE want.n IS DISTINCT FROM have.n OR want.m IS DISTINCT FROM have.m OR abs(want.a - have.a) > 1e-9 * greatest(1, abs(want.a))
       OR want.a IS NULL <> have.a IS NULL""").fetchone()[0]
    if close:
        print("differences:", close, diff[:10])
        sys.exit(1)
n = con.execute(f"SELECT count(*) FROM ({q})").fetchone()[0]
late = con.execute("SELECT count(*) FROM got WHERE emit <> 'on_time'").fetchone()[0]
if late:
    print("unexpected non-on_time rows:", late)
    sys.exit(1)
print("ok", n)
