"""Interop checks of Delta tables written by streamkit write-delta, for the Go tests in
tools/writedelta.

    delta_interop.py check MANIFEST.json          read every table with delta-rs and DuckDB
    delta_interop.py deltars-create TABLE ROWS.arrow [--partition-by COL]...
    delta_interop.py spark-server                  one Spark session, commands on stdin
    delta_interop.py serve                         count rows of tables named on stdin

MANIFEST.json is a list of entries:

    {"name": "...", "table": "/abs/path", "expected": ["/abs/rows.arrow", ...], "key": "id",
     "empty_as_null": ["part"], "readers": ["deltalake", "duckdb", "spark"],
     "probe": ["col"], "min_versions": 12}

"expected" are Arrow IPC files (file format) with the rows the table must hold; both sides are
normalised by sink/delta/testdata/check_table.py (timestamps to UTC, decimals to text, NaN/Inf
to text, maps to sorted pairs) and compared row by row after sorting by "key". A reader not
listed in "readers" is skipped for that entry.

spark-server starts Spark + delta-spark once (it is slow to start) and then reads one JSON
command per line on stdin, answering each with one line "RESULT <json>" on stdout:

    {"cmd": "create", "path": P, "rows": ROWS.arrow, "schema": "id long, s string",
     "partition_by": [...], "properties": {...}}   Spark creates a Delta table from the rows
    {"cmd": "check", "manifest": MANIFEST.json}     Spark reads every entry listing "spark"
                                                    and runs DESCRIBE HISTORY on it
    {"cmd": "quit"}
"""

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "sink", "delta", "testdata"))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

import check_table  # noqa: E402  (norm, rows, read_expected, probe)


class Mismatch(Exception):
    pass


def expected_rows(entry):
    want = []
    for t in check_table.read_expected(",".join(entry["expected"])):
        want += check_table.rows(t, entry["key"], entry.get("empty_as_null", []), entry.get("columns"))
    want.sort(key=lambda r: repr(r[entry["key"]]))
    return want


def compare(reader, entry, table, want):
    got = check_table.rows(table, entry["key"], [], entry.get("columns"))
    if len(got) != len(want):
        raise Mismatch("%s %s: %d rows, want %d" % (reader, entry["name"], len(got), len(want)))
    for g, w in zip(got, want):
        if g != w:
            diff = ["  column %s: got %r want %r" % (k, g.get(k), w.get(k)) for k in sorted(set(g) | set(w)) if g.get(k) != w.get(k)]
            raise Mismatch("%s %s: row mismatch\n got: %r\nwant: %r\n%s" % (reader, entry["name"], g, w, "\n".join(diff)))
    return len(got)


def check(manifest):
    with open(manifest) as f:
        entries = json.load(f)
    failed = 0
    for e in entries:
        try:
            want = expected_rows(e)
            readers = e.get("readers", ["deltalake", "duckdb"])
            if "deltalake" in readers:
                from deltalake import DeltaTable

                dt = DeltaTable(e["table"])
                n = compare("deltalake", e, dt.to_pyarrow_table(), want)
                if e.get("min_versions") and dt.version() + 1 < e["min_versions"]:
                    raise Mismatch("deltalake %s: version %d" % (e["name"], dt.version()))
                print("ok deltalake %s %d rows, version %d" % (e["name"], n, dt.version()), flush=True)
            if "duckdb" in readers:
                n = compare("duckdb", e, check_table.read_duckdb(e["table"]), want)
                print("ok duckdb %s %d rows" % (e["name"], n), flush=True)
                if e.get("probe"):
                    check_table.probe(e["table"], check_table.read_expected(",".join(e["expected"])), e["probe"])
        except (Mismatch, SystemExit) as x:
            print("FAIL %s" % x, flush=True)
            failed += 1
        except Exception:
            print("FAIL %s: %s" % (e["name"], traceback.format_exc()), flush=True)
            failed += 1
    return failed


def deltars_create(argv):
    import argparse

    from deltalake import write_deltalake

    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("rows")
    ap.add_argument("--partition-by", action="append", default=None)
    a = ap.parse_args(argv)
    with pa.memory_map(a.rows) as src:
        t = ipc.open_file(src).read_all()
    write_deltalake(a.table, t, partition_by=a.partition_by)
    print("ok deltalake created %s (%d rows)" % (a.table, t.num_rows))


def serve():
    """For each table path read on stdin, print one JSON line: whether the table exists (a
    commit file is present) and, read by delta-rs and by DuckDB, its version, row count,
    distinct and min/max of the id column; or {"error": ...} when a reader fails."""
    from deltalake import DeltaTable

    con = check_table._duck()
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        log = os.path.join(path, "_delta_log")
        try:
            if not os.path.isdir(log) or not any(n.endswith(".json") and n[:20].isdigit() for n in os.listdir(log)):
                res = {"exists": False}
            else:
                dt = DeltaTable(path)
                ids = dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
                res = {"exists": True, "deltalake": {"version": dt.version(), "rows": len(ids), "distinct": len(set(ids)),
                                                      "min": min(ids) if ids else None, "max": max(ids) if ids else None}}
                r = con.execute("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM delta_scan(?)", [path]).fetchone()
                res["duckdb"] = {"rows": r[0], "distinct": r[1], "min": r[2], "max": r[3]}
        except Exception:
            res = {"error": traceback.format_exc()}
        print(json.dumps(res), flush=True)


# --- Spark --------------------------------------------------------------------------------------


def spark_create(spark, cmd):
    with pa.memory_map(cmd["rows"]) as src:
        t = ipc.open_file(src).read_all()
    df = spark.createDataFrame(t.to_pylist(), cmd["schema"])
    path = cmd["path"]
    props = cmd.get("properties") or {}
    parts = cmd.get("partition_by") or []
    if props:
        cols = ", ".join(cmd["schema"].split(","))
        tbl = ", ".join("'%s'='%s'" % kv for kv in props.items())
        pb = " PARTITIONED BY (%s)" % ", ".join(parts) if parts else ""
        spark.sql("CREATE TABLE delta.`%s` (%s) USING delta%s TBLPROPERTIES (%s)" % (path, cols, pb, tbl))
        df.write.format("delta").mode("append").save(path)
    else:
        w = df.write.format("delta")
        if parts:
            w = w.partitionBy(*parts)
        w.save(path)
    return {"rows": t.num_rows}


def spark_check(spark, manifest):
    from pyspark.sql import functions as F

    with open(manifest) as f:
        entries = json.load(f)
    results, failed = [], 0
    for e in entries:
        if "spark" not in e.get("readers", ["deltalake", "duckdb"]):
            continue
        try:
            want = expected_rows(e)
            df = spark.read.format("delta").load(e["table"])
            n = compare("spark", e, df.toArrow(), want)
            # COUNT, MIN and MAX may be answered from the file statistics: they must be exact.
            key = e["key"]
            cnt = df.count()
            mn, mx = df.agg(F.min(key), F.max(key)).first()
            keys = [w[key] for w in want if w[key] is not None]
            if cnt != len(want):
                raise Mismatch("spark %s: count() %d, want %d" % (e["name"], cnt, len(want)))
            if keys and (check_table.norm(mn), check_table.norm(mx)) != (min(keys), max(keys)):
                raise Mismatch("spark %s: min/max %r/%r, want %r/%r" % (e["name"], mn, mx, min(keys), max(keys)))
            hist = spark.sql("DESCRIBE HISTORY delta.`%s`" % e["table"]).select("version", "operation").collect()
            versions = sorted(r.version for r in hist)
            if e.get("min_versions") and len(versions) < e["min_versions"]:
                raise Mismatch("spark %s: DESCRIBE HISTORY has %d versions, want >= %d" % (e["name"], len(versions), e["min_versions"]))
            ops = sorted({r.operation for r in hist})
            msg = "ok spark %s %d rows, history %d versions %s" % (e["name"], n, len(versions), ",".join(ops))
            print(msg, file=sys.stderr, flush=True)
            results.append(msg)
        except Mismatch as x:
            failed += 1
            results.append("FAIL %s" % x)
        except Exception:
            failed += 1
            results.append("FAIL spark %s: %s" % (e["name"], traceback.format_exc()))
    return {"failed": failed, "results": results}


def spark_server():
    spark_serve("streamkit-write-delta-it", {
        "create": spark_create,
        "check": lambda spark, cmd: spark_check(spark, cmd["manifest"]),
    })


def spark_serve(app_name, handlers):
    """Run one Spark session and answer the JSON commands on stdin, one a line, with
    "RESULT {json}" lines: handlers[cmd["cmd"]](spark, cmd) returns the result's fields;
    "quit" ends. Used by this script's spark-server and by delta_features.py."""
    import spark_delta

    out = sys.stdout
    sys.stdout = sys.stderr  # anything Spark prints goes to stderr; results go to out
    spark = spark_delta.session(app_name=app_name)

    def reply(obj):
        out.write("RESULT " + json.dumps(obj) + "\n")
        out.flush()

    reply({"ok": True, "ready": True, "spark": spark.version})
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            cmd = json.loads(line)
            try:
                if cmd["cmd"] == "quit":
                    reply({"ok": True})
                    break
                if cmd["cmd"] in handlers:
                    reply(dict(ok=True, **handlers[cmd["cmd"]](spark, cmd)))
                else:
                    reply({"ok": False, "error": "unknown command %r" % cmd["cmd"]})
            except Exception:
                reply({"ok": False, "error": traceback.format_exc()})
    finally:
        spark.stop()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "check":
        sys.exit(1 if check(rest[0]) else 0)
    if cmd == "deltars-create":
        return deltars_create(rest)
    if cmd == "spark-server":
        return spark_server()
    if cmd == "serve":
        return serve()
    sys.exit("unknown command %r\n%s" % (cmd, __doc__))



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
    main()


if __name__ == "__main__":
    _hard_exit(_run)
