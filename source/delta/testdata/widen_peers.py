"""Type-widened tables written by Spark + delta-spark, and Spark's own reads of them, for
read-delta's type widening peer test (widen_peer_test.go).

    widen_peers.py spark DIR      make the tables under DIR (one Spark session) and write
                                  DIR/manifest.json: per case the read-delta arguments, and
                                  the file holding Spark's rows and column types
    widen_peers.py compare MANIFEST
                                  compare each case's read-delta output (Arrow IPC stream at
                                  the case's "out") with Spark's; prints "ok NAME N" per case
                                  or exits 1 at the first difference

Data files are written before and between the ALTER TABLE … CHANGE COLUMN … TYPE commits, so
the latest version holds files of every older type.
"""
import json
import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (canon, canon_rows, _hard_exit)

COLUMNS = """id INT, b BYTE, s SHORT, i INT, f FLOAT, i2d INT, d DATE, dec DECIMAL(6,2),
    i2dec INT, l2dec BIGINT, st STRUCT<x: INT, y: FLOAT>, arr ARRAY<SHORT>, m MAP<STRING, INT>"""

# The widenings, in order, each one ALTER TABLE commit (PROTOCOL.md "Type Widening").
FIRST = [
    ("b", "SHORT"),
    ("s", "INT"),
    ("i", "BIGINT"),
    ("f", "DOUBLE"),
    ("i2d", "DOUBLE"),
    ("d", "TIMESTAMP_NTZ"),
    ("dec", "DECIMAL(10,4)"),
    ("i2dec", "DECIMAL(12,2)"),
    ("l2dec", "DECIMAL(22,2)"),
    ("st.x", "BIGINT"),
    ("arr.element", "INT"),
    ("m.value", "BIGINT"),
]
SECOND = [("b", "INT"), ("b", "BIGINT"), ("st.y", "DOUBLE")]

# Predicates for --where: each must return Spark's rows (files are skipped by statistics written
# under the old types). f > 1.1 and f = 1.100000023841858 hold for the old float 1.1, which
# reads as the double 1.100000023841858.
WHERE = [
    "f > 1.1",
    "f = 1.100000023841858",
    "f <= 1.1",
    "i > 2147483647",
    "b >= 100",
    "d >= '2024-01-02' AND d < '2024-01-02 12:00:00'",
    "dec = 1.23 OR i2dec >= 40",
    "l2dec > 9223372036854775806 AND st.x > 5000000000",
]


def rows_sql(lo, hi, wide):
    """VALUES of rows lo..hi-1; wide: values that only fit the widened types."""
    out = []
    for k in range(lo, hi):
        big = 1 << 40 if wide else 0
        b = 1000 + k if wide else k % 120
        f = "1.1" if k % 2 else "0.25"
        if wide:
            f = "1.1000000001" if k % 3 == 0 else "2.5"
        d = "DATE'2024-01-0%d'" % (1 + k % 3)
        if wide:
            d = "TIMESTAMP_NTZ'2024-01-02 %02d:30:00.123456'" % (k % 24)
        dec = "1.23" if k % 4 == 0 else "%d.%02d" % (k, k % 100)
        if wide:
            dec = "%d.4567" % (100000 + k)
        st = "named_struct('x', %d, 'y', CAST(%s AS FLOAT))" % (k + big * 3, "0.1" if k % 2 else "3.5")
        arr = "array(%d, %d)" % (k, k + 40000 if wide else k + 1)
        m = "map('k%d', %d)" % (k, k + big)
        if k % 7 == 5:
            st, arr, m = "NULL", "NULL", "NULL"
        out.append(
            "(%d, %s, %s, %s, CAST(%s AS %s), %s, %s, %s, %s, %s, %s, %s, %s)"
            % (
                k,
                "NULL" if k % 5 == 4 else b,
                k + (70000 if wide else 0),
                k + big,
                f,
                "DOUBLE" if wide else "FLOAT",
                k + 0.5 if wide else k,
                d,
                dec,
                "%d.25" % k if wide else k,
                (k + (1 << 63) + 100) if wide else (k + (1 << 62) if k % 2 else k),
                st,
                arr,
                m,
            )
        )
    return ", ".join(out)


def spark(base):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts", "py"))
    import spark_delta

    s = spark_delta.session(app_name="read-delta-type-widening")
    cases = []

    def expect(name, df, args, skipped=None):
        path = os.path.join(base, name + ".want.json")
        rows = [json.dumps(peers.canon(r.asDict(recursive=True)), sort_keys=True) for r in df.collect()]
        want = {"schema": json.loads(df.schema.json()), "rows": sorted(rows)}
        if skipped is not None and skipped != len(rows):
            want["spark_skipping_rows"] = skipped
        with open(path, "w") as f:
            json.dump(want, f)
        cases.append({"name": name, "args": args, "want": path, "out": os.path.join(base, name + ".arrows")})

    try:
        p = os.path.join(base, "spark_widened")
        t = "delta.`%s`" % p
        s.sql("CREATE TABLE %s (%s) USING DELTA TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')" % (t, COLUMNS))
        s.sql("INSERT INTO %s VALUES %s" % (t, rows_sql(0, 20, False)))
        s.sql("INSERT INTO %s VALUES %s" % (t, rows_sql(20, 30, False)))
        v_old = s.sql("DESCRIBE HISTORY %s LIMIT 1" % t).collect()[0]["version"]
        for col, typ in FIRST:
            s.sql("ALTER TABLE %s CHANGE COLUMN %s TYPE %s" % (t, col, typ))
        s.sql("INSERT INTO %s VALUES %s" % (t, rows_sql(30, 45, True)))
        v_mid = s.sql("DESCRIBE HISTORY %s LIMIT 1" % t).collect()[0]["version"]
        for col, typ in SECOND:
            s.sql("ALTER TABLE %s CHANGE COLUMN %s TYPE %s" % (t, col, typ))
        s.sql("INSERT INTO %s VALUES %s" % (t, rows_sql(45, 50, True)))

        def reader():
            return s.read.format("delta")

        expect("latest", reader().load(p), [p])
        expect("old", reader().option("versionAsOf", v_old).load(p), [p, "--version", str(v_old)])
        expect("mid", reader().option("versionAsOf", v_mid).load(p), [p, "--version", str(v_mid)])
        # Spark's data skipping reads an old float file's statistic "1.1" as the double 1.1 and
        # skips the file for f > 1.1 and f = 1.100000023841858, although the rows it reads
        # from it hold 1.100000023841858: the rows are Spark's filter without data skipping,
        # and the count with it is kept to report the difference.
        skipped = {pred: reader().load(p).where(pred).count() for pred in WHERE if pred.startswith("f ")}
        s.conf.set("spark.databricks.delta.stats.skipping", "false")
        for k, pred in enumerate(WHERE):
            expect("where%d" % k, reader().load(p).where(pred), [p, "--where", pred], skipped.get(pred))
        s.conf.set("spark.databricks.delta.stats.skipping", "true")

        # A partitioned table whose partition column and a data column are widened.
        q = os.path.join(base, "spark_widened_part")
        u = "delta.`%s`" % q
        s.sql("CREATE TABLE %s (id INT, p INT, v SHORT) USING DELTA PARTITIONED BY (p) TBLPROPERTIES ('delta.enableTypeWidening' = 'true')" % u)
        s.sql("INSERT INTO %s VALUES %s" % (u, ", ".join("(%d, %d, %d)" % (k, k % 3, k) for k in range(12))))
        s.sql("ALTER TABLE %s CHANGE COLUMN p TYPE BIGINT" % u)
        s.sql("ALTER TABLE %s CHANGE COLUMN v TYPE INT" % u)
        s.sql("INSERT INTO %s VALUES %s" % (u, ", ".join("(%d, %d, %d)" % (k, (1 << 35) + k % 2, 100000 + k) for k in range(12, 20))))
        expect("part", reader().load(q), [q])
        expect("part_where", reader().load(q).where("p > 1 AND v < 100005"), [q, "--where", "p > 1 AND v < 100005"])
    finally:
        s.stop()
    with open(os.path.join(base, "manifest.json"), "w") as f:
        json.dump({"table": p, "cases": cases}, f, indent=1)
    print(os.path.join(base, "manifest.json"))


# The Arrow type read-delta must give each Spark primitive type (schema JSON names).
ARROW = {
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp_ntz": pa.timestamp("us"),
    "string": pa.string(),
}


def type_diff(want, at):
    """"" when Arrow type at is the one for Spark schema-JSON type want, else what differs."""
    if isinstance(want, str):
        if want.startswith("decimal("):
            p, sc = want[len("decimal("):-1].split(",")
            exp = pa.decimal128(int(p), int(sc))
        else:
            exp = ARROW[want]
        return "" if at == exp else "%s, not %s" % (at, exp)
    kind = want["type"]
    if kind == "struct":
        if not pa.types.is_struct(at) or [f.name for f in at] != [f["name"] for f in want["fields"]]:
            return "%s, not a struct of %s" % (at, [f["name"] for f in want["fields"]])
        for k, f in enumerate(want["fields"]):
            d = type_diff(f["type"], at.field(k).type)
            if d:
                return f["name"] + ": " + d
        return ""
    if kind == "array":
        if not pa.types.is_list(at):
            return "%s, not a list" % at
        return type_diff(want["elementType"], at.value_type)
    if kind == "map":
        if not pa.types.is_map(at):
            return "%s, not a map" % at
        return type_diff(want["keyType"], at.key_type) or type_diff(want["valueType"], at.item_type)
    return "unknown Spark type %r" % kind


def maps_as_dicts(v, at):
    """Arrow's to_pylist gives maps as lists of pairs, Spark's rows as dicts: use dicts."""
    if v is None:
        return None
    if pa.types.is_map(at):
        return {k: maps_as_dicts(x, at.item_type) for k, x in v}
    if pa.types.is_struct(at):
        return {f.name: maps_as_dicts(v[f.name], f.type) for f in at}
    if pa.types.is_list(at):
        return [maps_as_dicts(x, at.value_type) for x in v]
    return v


def compare(manifest):
    with open(manifest) as f:
        m = json.load(f)
    for c in m["cases"]:
        with open(c["want"]) as f:
            want = json.load(f)
        with open(c["out"], "rb") as f:
            got = ipc.open_stream(f).read_all()
        names = [f["name"] for f in want["schema"]["fields"]]
        if got.column_names != names:
            sys.exit("%s: columns %s, Spark %s" % (c["name"], got.column_names, names))
        for f in want["schema"]["fields"]:
            d = type_diff(f["type"], got.schema.field(f["name"]).type)
            if d:
                sys.exit("%s: column %s has Arrow type %s (Spark: %s)" % (c["name"], f["name"], d, json.dumps(f["type"])))
        g = sorted(
            json.dumps(peers.canon({n: maps_as_dicts(r[n], got.schema.field(n).type) for n in names}), sort_keys=True)
            for r in got.to_pylist()
        )
        if g != want["rows"]:
            print("%s: %d rows, Spark %d" % (c["name"], len(g), len(want["rows"])))
            for a, b in zip(g, want["rows"]):
                if a != b:
                    print("first difference:\n read-delta %s\n Spark      %s" % (a, b))
                    break
            sys.exit(1)
        note = ""
        if "spark_skipping_rows" in want:
            note = " (Spark with data skipping: %d)" % want["spark_skipping_rows"]
        print("ok %s %d%s" % (c["name"], len(g), note))


def _run():
    cmd = sys.argv[1]
    if cmd == "spark":
        spark(sys.argv[2])
    elif cmd == "compare":
        compare(sys.argv[2])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    peers._hard_exit(_run)
