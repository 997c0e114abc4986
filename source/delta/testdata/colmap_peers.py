"""Column-mapped Delta tables written by Apache Spark with delta-spark, for colmap_peer_test.go.

One Spark session serves the whole test, in two phases over stdin/stdout:

  colmap_peers.py BASE
    phase 1: makes the tables cm_name and cm_id (column mapping modes name and id) through
    appends, RENAME COLUMN, DROP COLUMN, ADD COLUMN with the dropped name, a nested struct
    field rename (also inside an array of structs) and a partition column rename, writes
    Spark's read of every version (and of a few WHERE conditions) to BASE/expected/*.json,
    and prints one JSON line: {"tables": {name: path}, "cases": [{"name", "table",
    "version", "where", "expected"}]}.
    phase 2: reads one JSON line from stdin: {"compare": [[expected, got.arrows], ...],
    "appended": [{"table", "before", "rows": [arrows files], "got": arrows}]}. It compares
    each streamkit output with Spark's rows; for each appended table Spark reads the whole
    table back and it must equal the rows Spark read before the append plus the appended
    rows (columns the rows lack are null), and equal streamkit's own read (got). Prints
    "ok NAME N" per check, or a difference, and exits non-zero on any difference.
"""

import datetime
import decimal
import json
import math
import os
import sys

import pyarrow.ipc as ipc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))


def canon(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return 0.0 if v == 0 else v
    if isinstance(v, (datetime.date, datetime.datetime, decimal.Decimal)):
        return str(v)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        # pyarrow gives maps as lists of (key, value) tuples; Spark rows give dicts.
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: canon(x) for k, x in sorted(v)}
        return [canon(x) for x in v]
    return v


def spark_rows(df):
    def conv(x):
        if hasattr(x, "asDict"):
            return {k: conv(v) for k, v in x.asDict().items()}
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, list):
            return [conv(v) for v in x]
        return x

    return sorted(json.dumps(canon(conv(r)), sort_keys=True) for r in df.collect())


def arrow_rows(path):
    with open(path, "rb") as f:
        t = ipc.open_stream(f).read_all()
    return t.column_names, sorted(json.dumps(canon(r), sort_keys=True) for r in t.to_pylist())


def diff(name, got, want):
    if got == want:
        print("ok %s %d" % (name, len(got)))
        return True
    print("%s: %d rows, Spark %d" % (name, len(got), len(want)))
    for a, b in zip(got, want):
        if a != b:
            print(" first difference:\n  streamkit %s\n  Spark     %s" % (a, b))
            break
    else:
        print(" extra: %s" % ((got[len(want):] or want[len(got):])[:2],))
    return False


def make(s, base, mode):
    p = os.path.join(base, "cm_" + mode)
    t = "delta.`%s`" % p
    n = [0]

    def insert(cols):
        # cols: SQL expressions over k (the row number) naming the table's current columns.
        lo, hi = n[0], n[0] + 10
        n[0] = hi
        s.sql("INSERT INTO %s SELECT %s FROM range(%d, %d) AS r(k)" % (t, ", ".join(cols), lo, hi))

    s.sql(
        "CREATE TABLE %s (id BIGINT, name STRING, amount DOUBLE, part STRING, "
        "info STRUCT<city: STRING, zip: INT>, tags ARRAY<STRUCT<k: STRING, v: INT>>, attrs MAP<STRING, INT>) "
        "USING delta PARTITIONED BY (part) TBLPROPERTIES ('delta.columnMapping.mode' = '%s', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')" % (t, mode)
    )
    common = [
        "k AS id",
        "CASE WHEN k % 7 = 3 THEN NULL ELSE concat('n', k) END",
        "k * 1.5",
        "CASE WHEN k % 3 = 0 THEN 'a' WHEN k % 3 = 1 THEN 'b' ELSE NULL END",
    ]
    info = "named_struct('city', concat('c', k % 4), 'zip', CAST(k AS INT))"
    tags = "array(named_struct('k', concat('t', k), 'v', CAST(k AS INT)), named_struct('k', 'z', 'v', NULL))"
    attrs = "map('m', CAST(k AS INT))"
    insert(common + [info, tags, attrs])  # v1
    s.sql("ALTER TABLE %s RENAME COLUMN name TO full_name" % t)  # v2
    insert(common + [info, tags, attrs])  # v3
    s.sql("ALTER TABLE %s DROP COLUMN amount" % t)  # v4
    insert(common[:2] + common[3:] + [info, tags, attrs])  # v5
    s.sql("ALTER TABLE %s ADD COLUMNS (amount STRING)" % t)  # v6: the dropped name again
    insert(common[:2] + common[3:] + [info, tags, attrs, "concat('s', k)"])  # v7
    s.sql("ALTER TABLE %s RENAME COLUMN info.city TO town" % t)  # v8
    s.sql("ALTER TABLE %s RENAME COLUMN tags.element.k TO key" % t)  # v9
    insert(common[:2] + common[3:] + [info, tags, attrs, "concat('s', k)"])  # v10 (checkpoint)
    s.sql("ALTER TABLE %s RENAME COLUMN part TO region" % t)  # v11
    insert(common[:2] + common[3:] + [info, tags, attrs, "concat('s', k)"])  # v12
    return p


def phase1(s, base):
    os.makedirs(os.path.join(base, "expected"), exist_ok=True)
    tables, cases = {}, []
    for mode in ("name", "id"):
        p = make(s, base, mode)
        name = "cm_" + mode
        tables[name] = p

        def case(cname, version, where, df):
            path = os.path.join(base, "expected", cname + ".json")
            with open(path, "w") as f:
                json.dump(spark_rows(df), f)
            cases.append({"name": cname, "table": name, "version": version, "where": where, "expected": path})

        # The versions right after a rename, a drop and the re-add (Spark is slow: a few).
        for v in (2, 4, 6, 9):
            case("%s@%d" % (name, v), v, "", s.read.format("delta").option("versionAsOf", v).load(p))
        cur = s.read.format("delta").load(p)
        for i, w in enumerate(["region = 'a' AND id >= 45", "info.town = 'c1' AND amount IS NOT NULL", "full_name IS NULL OR region IS NULL"]):
            case("%s?%d" % (name, i), -1, w, cur.where(w))
        with open(os.path.join(base, "expected", name + ".latest.json"), "w") as f:
            json.dump(spark_rows(cur), f)
    print(json.dumps({"tables": tables, "cases": cases}), flush=True)


def phase2(s, req):
    ok = True
    for want_path, got_path in req.get("compare", []):
        with open(want_path) as f:
            want = json.load(f)
        _, got = arrow_rows(got_path)
        ok &= diff(os.path.basename(want_path)[: -len(".json")] + " <- " + os.path.basename(got_path), got, want)
    for a in req.get("appended", []):
        df = s.read.format("delta").load(a["table"])
        spark_now = spark_rows(df)
        cols = df.columns
        with open(a["before"]) as f:
            expected = [json.loads(r) for r in json.load(f)]
        for rf in a["rows"]:
            with open(rf, "rb") as f:
                expected += ipc.open_stream(f).read_all().to_pylist()
        expected = sorted(json.dumps(canon({c: r.get(c) for c in cols}), sort_keys=True) for r in expected)
        ok &= diff(os.path.basename(a["table"]) + " Spark after streamkit appends", spark_now, expected)
        _, got = arrow_rows(a["got"])
        ok &= diff(os.path.basename(a["table"]) + " streamkit after its appends", got, spark_now)
    sys.stdout.flush()
    return ok


def main():
    import spark_delta

    base = sys.argv[1]
    s = spark_delta.session(app_name="colmap-fixtures")
    try:
        phase1(s, base)
        line = sys.stdin.readline()
        if not line:
            sys.exit("no phase 2 request on stdin")
        if not phase2(s, json.loads(line)):
            sys.exit(1)
    finally:
        s.stop()


if __name__ == "__main__":
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (print(e.code, file=sys.stderr) or 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
