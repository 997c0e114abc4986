#!/usr/bin/env python3
"""Output equality of make bench (BENCH_SPEC in run.sh), checked with DuckDB.

    check.py w1 OUTDIR W1_EXPECTED.json     row count, distinct (partition, offset), sum(price),
                                            sum(auction), min/max date_time vs the generated rows
    check.py w2 OUTDIR W2.parquet           every (window, origin) row vs DuckDB's GROUP BY over
                                            the input file; the sentinel's window is left out
    check.py w3 OUTDIR W3.parquet           row count, distinct ids = rows, ids = the input's
                                            distinct ids

OUTDIR holds a Delta table (OUTDIR/table or OUTDIR itself, read with delta_scan) or Parquet
files (read_parquet; names starting with . or _ are skipped). Columns are found at the top
level or inside a `value` struct (streamkit's read-kafka keeps the decoded JSON there).
OUTDIR may instead be a bucket table's URL (s3://bucket/path): delta_scan reads it through
DuckDB's httpfs with an S3 secret from the AWS_* environment (scripts/py/bucket_delta.py).
Prints one JSON object: {"status": "ok"|"FAILED", "detail": text, "rows": n, ...}; exit 0
either way (the report shows failures), 2 when the output cannot be read at all.
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "py"))
import duckdb_delta  # noqa: E402


def source(out):
    """The DuckDB table expression of an engine's output."""
    if out.startswith("s3://"):
        return "delta_scan('%s')" % out.replace("'", "''"), "delta (bucket)"
    for d in (os.path.join(out, "table"), out):
        if os.path.isdir(os.path.join(d, "_delta_log")):
            return f"delta_scan('{duckdb_delta.table_uri(d)}')", "delta"
    files = []
    for f in sorted(glob.glob(os.path.join(out, "**"), recursive=True)):
        rel = os.path.relpath(f, out)
        if os.path.isfile(f) and not any(p.startswith((".", "_")) for p in rel.split(os.sep)) \
                and not rel.endswith((".crc", ".json", ".log")):
            files.append(f)
    if not files:
        raise SystemExit(json.dumps({"status": "FAILED", "detail": f"no Delta table or Parquet files in {out}"}))
    return "read_parquet([" + ", ".join(f"'{f}'" for f in files) + "])", "parquet"


def columns(con, src):
    cols = {r[0]: r[1] for r in con.sql(f"DESCRIBE SELECT * FROM {src}").fetchall()}
    def col(name):
        if name in cols:
            return f'"{name}"'
        if "value" in cols and cols["value"].startswith("STRUCT"):
            return f'"value"."{name}"'
        raise SystemExit(json.dumps({"status": "FAILED", "detail": f"no column {name} in output ({', '.join(cols)})"}))
    return col


def us(expr):
    return f"epoch_us({expr})"


def w1(con, src, col, expected):
    want = json.load(open(expected))
    got = con.sql(f"""SELECT count(*), count(DISTINCT ({col('partition')}, {col('offset')})),
        sum({col('price')})::HUGEINT, sum({col('auction')})::HUGEINT,
        {us('min(' + col('date_time') + ')')}, {us('max(' + col('date_time') + ')')} FROM {src}""").fetchone()
    import datetime as dt
    def us_of(s):
        t = dt.datetime.fromisoformat(s)
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.timezone.utc)
        return int((t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) / dt.timedelta(microseconds=1))
    names = ["rows", "distinct (partition, offset)", "sum(price)", "sum(auction)", "min(date_time) µs", "max(date_time) µs"]
    wants = [want["rows"], want["distinct_partition_offset"], want["sum_price"], want["sum_auction"],
             us_of(want["min_date_time"]), us_of(want["max_date_time"])]
    diffs = [f"{n} {g} (want {w})" for n, g, w in zip(names, got, wants) if int(g or 0) != int(w)]
    return {"rows": got[0], "diffs": diffs}


def w2(con, src, col, inp):
    con.execute("SET TimeZone='UTC'")
    con.execute(f"""CREATE TEMP TABLE want AS SELECT epoch_us(time_bucket(INTERVAL 1 hour, date)) AS ws,
        epoch_us(time_bucket(INTERVAL 1 hour, date) + INTERVAL 1 hour) AS we, origin,
        count(*)::BIGINT AS flights, sum(delay)::BIGINT AS total_delay, max(distance)::BIGINT AS max_distance
        FROM read_parquet('{inp}') WHERE origin <> '__END__' GROUP BY ALL""")
    con.execute(f"""CREATE TEMP TABLE got AS SELECT {us(col('window_start'))} AS ws, {us(col('window_end'))} AS we,
        {col('origin')} AS origin, {col('flights')}::BIGINT AS flights, {col('total_delay')}::BIGINT AS total_delay,
        {col('max_distance')}::BIGINT AS max_distance FROM {src} WHERE {col('origin')} <> '__END__'""")
    n = con.sql("SELECT count(*) FROM got").fetchone()[0]
    missing = con.sql("SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got)").fetchone()[0]
    extra = con.sql("SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want)").fetchone()[0]
    diffs = []
    if missing or extra:
        nw = con.sql("SELECT count(*) FROM want").fetchone()[0]
        ex = con.sql("SELECT make_timestamp(ws)::VARCHAR, origin, flights, total_delay, max_distance FROM "
                     "(SELECT * FROM want EXCEPT ALL SELECT * FROM got) ORDER BY ws DESC LIMIT 1").fetchall()
        diffs.append(f"{n} window rows, want {nw}: {missing} expected rows missing or different"
                     + (f" (e.g. {ex[0]})" if ex else "") + f", {extra} rows not expected")
    return {"rows": n, "diffs": diffs}


def w3(con, src, col, inp):
    con.execute(f"CREATE TEMP TABLE want AS SELECT DISTINCT id FROM read_parquet('{inp}')")
    con.execute(f"CREATE TEMP TABLE got AS SELECT {col('id')} AS id FROM {src}")
    n, d = con.sql("SELECT count(*), count(DISTINCT id) FROM got").fetchone()
    nw = con.sql("SELECT count(*) FROM want").fetchone()[0]
    missing = con.sql("SELECT count(*) FROM want ANTI JOIN got USING (id)").fetchone()[0]
    extra = con.sql("SELECT count(*) FROM got ANTI JOIN want USING (id)").fetchone()[0]
    diffs = []
    if n != nw:
        diffs.append(f"rows {n} (want {nw})")
    if d != n:
        diffs.append(f"{n - d} duplicate ids kept")
    if missing or extra:
        diffs.append(f"{missing} ids missing, {extra} unknown ids")
    return {"rows": n, "diffs": diffs}


def main():
    w, out, ref = sys.argv[1:4]
    if out.startswith("s3://"):
        import bucket_delta

        con = bucket_delta.duck()
    else:
        con = duckdb_delta.connect()
    src, kind = source(out)
    try:
        col = columns(con, src)
        r = {"w1": w1, "w2": w2, "w3": w3}[w](con, src, col, ref)
    except SystemExit:
        raise
    except Exception as e:  # an unreadable output is a failed row, with the reason
        print(json.dumps({"status": "FAILED", "detail": f"cannot read {kind} output: {e}".splitlines()[0]}))
        return
    r["format"] = kind
    r["status"] = "FAILED" if r["diffs"] else "ok"
    r["detail"] = "; ".join(r.pop("diffs"))
    print(json.dumps(r))
    sys.stdout.flush()
    os._exit(0)  # delta-rs/duckdb threads can abort a normal interpreter shutdown


if __name__ == "__main__":
    main()
