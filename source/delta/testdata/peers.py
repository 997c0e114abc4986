"""Fixtures and reference reads for read-delta's peer tests.

    peers.py deltars DIR            tables written by delta-rs (deltalake) under DIR
    peers.py spark DIR              tables written by Spark + delta-spark under DIR
    peers.py compare-spark J OUT... compare read-delta outputs of spark_int96_range with
                                    Spark's own read J (spark_int96_range.json)
    peers.py compare-rows J OUT [PRED OUT]...
                                    compare read-delta's read (and --where PRED reads) of
                                    spark_legacy or spark_colmap_int96 with Spark's, J
    peers.py int96-readers J T      DuckDB's and delta-rs's reads of spark_int96_range T
                                    against Spark's J
    peers.py compare T OUT [T OUT]  compare read-delta's output (Arrow IPC stream files OUT)
                                    with delta-rs's own read of table T; a table argument
                                    may be "T@V" (version V) or "T?col=val" (partition filter)

Each fixture command prints the names of the tables it created, one a line. compare prints
"ok N" per pair (N rows) or exits 1 with the first difference.
"""
import datetime
import decimal
import json
import math
import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

UTC = datetime.timezone.utc


def rows_rich(n, start=0):
    out = []
    for i in range(start, start + n):
        out.append(
            {
                "id": i,
                "part": ["A/A", "B B", "R&D", "50%", "é", None, "x=y:z", "#{[]}^'*\\"][i % 8],
                "day": datetime.date(2024, 1, 1 + i % 3),
                "flag": [True, False, None][i % 3],
                "f64": [1.5, float("nan"), float("inf"), None, -0.0][i % 5],
                "f32": float(i) / 4,
                "i16": i % 30000,
                "i8": i % 100,
                "dec": decimal.Decimal(i) / decimal.Decimal(100),
                "ts": datetime.datetime(2024, 3, 10, 12, 0, 0, i * 7 % 1000000, tzinfo=UTC),
                "s": None if i % 7 == 0 else "row %d" % i,
                "b": bytes([i % 256, 0, 255]),
            }
        )
    return out


RICH = pa.schema(
    [
        ("id", pa.int64()),
        ("part", pa.string()),
        ("day", pa.date32()),
        ("flag", pa.bool_()),
        ("f64", pa.float64()),
        ("f32", pa.float32()),
        ("i16", pa.int16()),
        ("i8", pa.int8()),
        ("dec", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("s", pa.string()),
        ("b", pa.binary()),
    ]
)

NESTED = pa.schema(
    [
        ("id", pa.int64()),
        (
            "user",
            pa.struct(
                [
                    ("name", pa.string()),
                    ("address", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
                    ("tags", pa.list_(pa.string())),
                ]
            ),
        ),
        ("scores", pa.map_(pa.string(), pa.float64())),
        ("events", pa.list_(pa.struct([("at", pa.timestamp("us", tz="UTC")), ("kind", pa.string())]))),
    ]
)


def rows_nested(n, start=0):
    out = []
    for i in range(start, start + n):
        out.append(
            {
                "id": i,
                "user": None
                if i % 5 == 4
                else {
                    "name": "u%d" % i,
                    "address": None if i % 3 == 0 else {"city": "c%d" % (i % 4), "zip": 1000 + i},
                    "tags": None if i % 4 == 0 else ["t%d" % j for j in range(i % 3)],
                },
                "scores": None if i % 6 == 0 else [("k%d" % j, j * 0.5) for j in range(i % 3)],
                "events": [
                    {"at": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=i * 10 + j), "kind": "e%d" % j}
                    for j in range(i % 2 + 1)
                ],
            }
        )
    return out


def deltars(base):
    from deltalake import DeltaTable, write_deltalake

    # Partitioned by a string with special characters and nulls, and a date; two commits.
    p = os.path.join(base, "rs_partitioned")
    rows = rows_rich(40)
    write_deltalake(p, pa.Table.from_pylist(rows[:25], RICH), partition_by=["part", "day"])
    write_deltalake(p, pa.Table.from_pylist(rows[25:], RICH), partition_by=["part", "day"], mode="append")
    print("rs_partitioned")

    # Checkpointed: 23 commits, a checkpoint at 10 and 20 (delta-rs writes none by itself),
    # then the commits before 20 removed, _last_checkpoint pointing at 10 (stale).
    p = os.path.join(base, "rs_checkpointed")
    for k in range(23):
        write_deltalake(p, pa.Table.from_pylist(rows_rich(3, 3 * k), RICH), mode="append")
        if k in (10, 20):
            DeltaTable(p).create_checkpoint()
    log = os.path.join(p, "_delta_log")
    with open(os.path.join(log, "_last_checkpoint")) as f:
        last = json.load(f)
    assert last["version"] == 20, last
    for v in range(0, 20):
        os.remove(os.path.join(log, "%020d.json" % v))
    with open(os.path.join(log, "_last_checkpoint"), "w") as f:
        json.dump(dict(last, version=10), f)
    print("rs_checkpointed")
    # The same without _last_checkpoint: the newest checkpoint is found by listing.
    import shutil

    q = os.path.join(base, "rs_checkpointed_no_last")
    shutil.copytree(p, q)
    os.remove(os.path.join(q, "_delta_log", "_last_checkpoint"))
    print("rs_checkpointed_no_last")

    # Nested types.
    p = os.path.join(base, "rs_nested")
    rows = rows_nested(30)
    write_deltalake(p, pa.Table.from_pylist(rows[:20], NESTED))
    write_deltalake(p, pa.Table.from_pylist(rows[20:], NESTED), mode="append")
    print("rs_nested")

    # Timestamps around and before the epoch (ns/ms/INT96 files are covered by the unit
    # tests and the Spark fixtures).
    p = os.path.join(base, "rs_timestamps")
    t = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), None, datetime.datetime(1960, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
        }
    )
    write_deltalake(p, t)
    print("rs_timestamps")
    # Schema evolution: a column added in a later commit (older files read it as null).
    p = os.path.join(base, "rs_evolved")
    write_deltalake(p, pa.table({"id": pa.array([1, 2], pa.int64())}))
    write_deltalake(p, pa.table({"id": pa.array([3], pa.int64()), "extra": pa.array(["x"], pa.string())}), mode="append", schema_mode="merge")
    print("rs_evolved")


def spark(base):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
    import spark_delta
    from pyspark.sql import types as T

    s = spark_delta.session(app_name="read-delta-fixtures")
    try:
        rich = T.StructType(
            [
                T.StructField("id", T.LongType()),
                T.StructField("part", T.StringType()),
                T.StructField("day", T.DateType()),
                T.StructField("flag", T.BooleanType()),
                T.StructField("f64", T.DoubleType()),
                T.StructField("f32", T.FloatType()),
                T.StructField("i16", T.ShortType()),
                T.StructField("i8", T.ByteType()),
                T.StructField("dec", T.DecimalType(10, 2)),
                T.StructField("ts", T.TimestampType()),
                T.StructField("s", T.StringType()),
                T.StructField("b", T.BinaryType()),
            ]
        )

        def df(rows):
            return s.createDataFrame([tuple(r[f.name] for f in rich.fields) for r in rows], rich)

        # Partitioned; Spark's default INT96 timestamps.
        s.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
        p = os.path.join(base, "spark_partitioned_int96")
        rows = rows_rich(40)
        df(rows[:25]).write.format("delta").partitionBy("part", "day").save(p)
        df(rows[25:]).write.format("delta").mode("append").partitionBy("part", "day").save(p)
        print("spark_partitioned_int96")

        # Checkpointed (Spark writes one every 10 commits), micros timestamps.
        s.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        p = os.path.join(base, "spark_checkpointed")
        for k in range(12):
            df(rows_rich(3, 3 * k)).coalesce(1).write.format("delta").mode("append").save(p)
        print("spark_checkpointed")

        # Nested, INT96 timestamps inside structs and lists.
        s.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
        nested = T.StructType(
            [
                T.StructField("id", T.LongType()),
                T.StructField(
                    "user",
                    T.StructType(
                        [
                            T.StructField("name", T.StringType()),
                            T.StructField("address", T.StructType([T.StructField("city", T.StringType()), T.StructField("zip", T.IntegerType())])),
                            T.StructField("tags", T.ArrayType(T.StringType())),
                        ]
                    ),
                ),
                T.StructField("scores", T.MapType(T.StringType(), T.DoubleType())),
                T.StructField("events", T.ArrayType(T.StructType([T.StructField("at", T.TimestampType()), T.StructField("kind", T.StringType())]))),
            ]
        )
        p = os.path.join(base, "spark_nested_int96")
        nrows = rows_nested(30)

        def conv(r):
            return (
                r["id"],
                None if r["user"] is None else (r["user"]["name"], None if r["user"]["address"] is None else (r["user"]["address"]["city"], r["user"]["address"]["zip"]), r["user"]["tags"]),
                None if r["scores"] is None else dict(r["scores"]),
                [(e["at"], e["kind"]) for e in r["events"]],
            )

        s.createDataFrame([conv(r) for r in nrows], nested).write.format("delta").save(p)
        print("spark_nested_int96")

        # INT96 over years 1 to 9999 (issue #22) with the CORRECTED rebase modes (proleptic
        # Gregorian as written, no Julian rebase), all rows in one file, year 1 first, top-level
        # (ts) and nested: st struct<ts timestamp>, arr array<timestamp> (the instant and a
        # null). Not printed: delta-rs reads INT96 through nanoseconds. Spark's own read, as µs
        # since the epoch, goes to spark_int96_range.json for compare-spark.
        s.conf.set("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED")
        s.conf.set("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED")
        p = os.path.join(base, "spark_int96_range")
        micros = [-62135596800000000, -1, 0, 253402300799999999, None]
        s.createDataFrame([(i, m) for i, m in enumerate(micros)], "id LONG, us LONG").selectExpr(
            "id", "timestamp_micros(us) AS ts").selectExpr(
            "id", "ts", "named_struct('ts', ts) AS st", "array(ts, CAST(NULL AS TIMESTAMP)) AS arr").coalesce(1).sortWithinPartitions(
            "id").write.format("delta").save(p)
        got = s.read.format("delta").load(p).selectExpr(
            "id", "unix_micros(ts)", "unix_micros(st.ts)", "transform(arr, x -> unix_micros(x))").collect()
        with open(p + ".json", "w") as f:
            json.dump(sorted([list(r) for r in got]), f)

        legacy_fixtures(s, base)
    finally:
        s.stop()


# The values of spark_legacy: DATE and TIMESTAMP before the Gregorian switch (1582-10-15), in
# its gap (1582-10-05 … 10-14, days the hybrid Julian calendar has not) and after, over years
# 1 to 9999, and a null.
LEGACY_VALUES = [
    ("0001-01-01", "0001-01-01 00:00:00"),
    ("1000-03-01", "1000-03-01 01:02:03.456789"),
    ("1500-06-01", "1500-06-01 12:00:00"),
    ("1582-10-04", "1582-10-04 23:59:59.999999"),
    ("1582-10-10", "1582-10-10 10:10:10"),
    ("1582-10-14", "1582-10-14 00:00:00"),
    ("1582-10-15", "1582-10-15 00:00:00"),
    ("1900-01-01", "1900-01-01 00:00:00"),
    ("1969-12-31", "1969-12-31 23:59:59.999999"),
    ("9999-12-31", "9999-12-31 23:59:59.999999"),
    (None, None),
]

# Predicates of read-delta --where near the pre-1582 bounds of spark_legacy (whose first
# commit has a file per row, so the Delta log's statistics decide which files are read).
LEGACY_WHERE = [
    "d < DATE '1500-06-01'",
    "d >= DATE '1500-06-01' AND d <= DATE '1582-10-04'",
    "d = DATE '0001-01-01'",
    "d > DATE '1582-10-04' AND d < DATE '1582-10-15'",
    "d = DATE '1582-10-15'",  # also what a LEGACY file's 1582-10-10 reads as; its statistics say 10-10
    "ts < TIMESTAMP '1500-06-01 12:00:00'",
    "ts >= TIMESTAMP '1000-03-01 01:02:03.456789' AND ts <= TIMESTAMP '1582-10-04 23:59:59.999999'",
]

# Spark's read of spark_legacy, every DATE as days and every TIMESTAMP as µs since the epoch.
LEGACY_READ = [
    "id",
    "unix_date(d) AS d",
    "unix_micros(ts) AS ts",
    "unix_micros(CAST(ntz AS TIMESTAMP)) AS ntz",
    "IF(st IS NULL, NULL, named_struct('d', unix_date(st.d), 'ts', unix_micros(st.ts))) AS st",
    "transform(arr, x -> IF(x IS NULL, NULL, named_struct('d', unix_date(x.d), 'ts', unix_micros(x.ts)))) AS arr",
]


def legacy_fixtures(s, base):
    """Tables of the LEGACY rebase modes and of column mapping with nested INT96 (issue #22),
    each with Spark's own read in TABLE.json ({"rows": [...], "where": {pred: [ids]}}) for
    compare-rows.

    spark_legacy: DATE, INT96 or INT64 TIMESTAMP and TIMESTAMP_NTZ values (LEGACY_VALUES) at
    the top level, in a struct and in an array of structs, one commit per combination of
    datetimeRebaseModeInWrite / int96RebaseModeInWrite / outputTimestampType, ids 100·k + i:
    k=0 LEGACY/LEGACY/INT96 (both keys; a file per row), 1 LEGACY/CORRECTED/INT96
    (legacyDateTime only), 2 CORRECTED/LEGACY/INT96 (legacyINT96 only), 3
    LEGACY/-/TIMESTAMP_MICROS (legacyDateTime, INT64 timestamps).

    spark_colmap_int96: column mapping name mode, st struct<ts timestamp, n int> as INT96 over
    years 1 to 9999, then st.ts renamed to at and st to s2, then a row under the new names.
    """
    cfg = "spark.sql.parquet."
    combos = [("LEGACY", "LEGACY", "INT96"), ("LEGACY", "CORRECTED", "INT96"), ("CORRECTED", "LEGACY", "INT96"), ("LEGACY", "CORRECTED", "TIMESTAMP_MICROS")]
    p = os.path.join(base, "spark_legacy")
    for k, (dt, i96, out) in enumerate(combos):
        s.conf.set(cfg + "datetimeRebaseModeInWrite", dt)
        s.conf.set(cfg + "int96RebaseModeInWrite", i96)
        s.conf.set(cfg + "outputTimestampType", out)
        rows = [(100 * k + i, d, t) for i, (d, t) in enumerate(LEGACY_VALUES)]
        df = s.createDataFrame(rows, "id LONG, ds STRING, tss STRING").selectExpr(
            "id", "CAST(ds AS DATE) AS d", "CAST(tss AS TIMESTAMP) AS ts", "CAST(tss AS TIMESTAMP_NTZ) AS ntz").selectExpr(
            "id", "d", "ts", "ntz", "IF(id % 100 = 10, NULL, named_struct('d', d, 'ts', ts)) AS st",
            "array(named_struct('d', d, 'ts', ts), NULL, IF(d >= DATE'9999-12-31', NULL, named_struct('d', date_add(d, 1), 'ts', ts + INTERVAL 1 DAY))) AS arr")
        df = df.repartitionByRange(len(rows), "id") if k == 0 else df.coalesce(1)
        df.write.format("delta").mode("append").save(p)
    t = s.read.format("delta").load(p)
    want = {"rows": [r.asDict(recursive=True) for r in t.selectExpr(*LEGACY_READ).collect()], "where": {}}
    for pred in LEGACY_WHERE:
        want["where"][pred] = sorted(r.id for r in t.where(pred).select("id").collect())
    with open(p + ".json", "w") as f:
        json.dump(want, f)

    s.conf.set(cfg + "datetimeRebaseModeInWrite", "CORRECTED")
    s.conf.set(cfg + "int96RebaseModeInWrite", "CORRECTED")
    s.conf.set(cfg + "outputTimestampType", "INT96")
    p = os.path.join(base, "spark_colmap_int96")
    q = "delta.`%s`" % p
    s.sql("CREATE TABLE %s (id BIGINT, st STRUCT<ts: TIMESTAMP, n: INT>) USING delta TBLPROPERTIES "
          "('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')" % q)
    s.sql("INSERT INTO %s VALUES (0, named_struct('ts', TIMESTAMP'0001-01-01 00:00:00', 'n', 0)), "
          "(1, named_struct('ts', TIMESTAMP'9999-12-31 23:59:59.999999', 'n', 1)), (2, NULL), "
          "(3, named_struct('ts', CAST(NULL AS TIMESTAMP), 'n', 3)), (4, named_struct('ts', TIMESTAMP'1969-12-31 23:59:59.999999', 'n', 4))" % q)
    s.sql("ALTER TABLE %s RENAME COLUMN st.ts TO at" % q)
    s.sql("ALTER TABLE %s RENAME COLUMN st TO s2" % q)
    s.sql("INSERT INTO %s VALUES (5, named_struct('at', TIMESTAMP'1500-06-01 12:00:00', 'n', 5))" % q)
    rows = s.read.format("delta").load(p).selectExpr(
        "id", "IF(s2 IS NULL, NULL, named_struct('at', unix_micros(s2.at), 'n', s2.n)) AS s2").collect()
    with open(p + ".json", "w") as f:
        json.dump({"rows": [r.asDict(recursive=True) for r in rows], "where": {}}, f)


def canon(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v == 0:
            return 0.0  # -0.0 and 0.0 compare equal in Spark and delta-rs
        return v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        return v.astimezone(UTC).isoformat()
    if isinstance(v, (datetime.date, decimal.Decimal)):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: canon(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v


def canon_rows(table):
    # Maps come out of to_pylist as lists of (key, value) tuples: sort them.
    out = []
    for r in table.to_pylist():
        c = canon(r)
        out.append(json.dumps(c, sort_keys=True))
    return sorted(out)


def reference(spec):
    from deltalake import DeltaTable

    version = None
    filters = None
    if "?" in spec:
        spec, f = spec.split("?", 1)
        col, val = f.split("=", 1)
        filters = [(col, "=", val)]
    if "@" in spec:
        spec, v = spec.rsplit("@", 1)
        version = int(v)
    dt = DeltaTable(spec, version=version)
    return dt.to_pyarrow_table(filters=filters)


def compare(args):
    for spec, out in zip(args[0::2], args[1::2]):
        want = reference(spec)
        with open(out, "rb") as f:
            got = ipc.open_stream(f).read_all()
        if set(got.column_names) != set(want.column_names):
            print("%s: columns %s, delta-rs %s" % (spec, got.column_names, want.column_names))
            sys.exit(1)
        got = got.select(want.column_names)
        g, w = canon_rows(got), canon_rows(want)
        if g != w:
            print("%s: %d rows, delta-rs %d" % (spec, len(g), len(w)))
            for a, b in zip(g, w):
                if a != b:
                    print("first difference:\n read-delta %s\n delta-rs   %s" % (a, b))
                    break
            sys.exit(1)
        print("ok %s %d" % (spec, len(g)))



def compare_spark(args):
    """compare-spark EXPECTED OUT...: read-delta outputs OUT (columns id, ts, st.ts and arr)
    hold the rows of EXPECTED (Spark's read: [id, µs of ts, µs of st.ts, [µs of arr's items]])."""
    import pyarrow.compute as pc

    with open(args[0]) as f:
        want = json.load(f)
    for out in args[1:]:
        with open(out, "rb") as f:
            got = ipc.open_stream(f).read_all()
        ids = got.column("id").to_pylist()
        us = pc.cast(got.column("ts"), pa.int64()).to_pylist()
        st = pc.cast(pc.struct_field(got.column("st"), "ts"), pa.int64()).to_pylist()
        arr = pc.cast(got.column("arr"), pa.list_(pa.int64())).to_pylist()
        rows = sorted([list(r) for r in zip(ids, us, st, arr)])
        if rows != want:
            print("%s: read-delta %s\n Spark %s" % (out, rows, want))
            sys.exit(1)
        print("ok %s %d" % (out, len(rows)))


def _micros_type(t, final):
    """t with every timestamp as timestamp[µs] (final: as int64 µs, every date32 as int32)."""
    if pa.types.is_timestamp(t):
        return pa.int64() if final else pa.timestamp("us", tz=t.tz)
    if pa.types.is_date32(t):
        return pa.int32() if final else t
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _micros_type(f.type, final), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, _micros_type(t.value_type, final), t.value_field.nullable))
    return t


def int_rows(table):
    """The rows of an Arrow table, sorted by id, every date as days and every timestamp as µs
    since the epoch (as Spark's unix_date / unix_micros give them)."""
    import pyarrow.compute as pc

    cols = {}
    for name in table.column_names:
        c = table.column(name)
        c = pc.cast(c, _micros_type(c.type, False), safe=False)  # ns: the µs they hold
        cols[name] = pc.cast(c, _micros_type(c.type, True)).to_pylist()
    rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
    return sorted(rows, key=lambda r: r["id"])


def compare_rows(args):
    """compare-rows J OUT [PRED OUT]...: read-delta's output OUT holds the rows of J["rows"]
    (Spark's read, dates as days, timestamps as µs), and each OUT after a predicate holds the
    ids of J["where"][PRED] (Spark's filter)."""
    with open(args[0]) as f:
        want = json.load(f)

    def read(out):
        with open(out, "rb") as f:
            return int_rows(ipc.open_stream(f).read_all())

    got = read(args[1])
    w = sorted(want["rows"], key=lambda r: r["id"])
    if [json.dumps(r, sort_keys=True) for r in got] != [json.dumps(r, sort_keys=True) for r in w]:
        for a, b in zip(got, w):
            if a != b:
                print("%s: first difference:\n read-delta %s\n Spark      %s" % (args[1], a, b))
                break
        else:
            print("%s: %d rows, Spark %d" % (args[1], len(got), len(w)))
        sys.exit(1)
    print("ok %s %d" % (args[1], len(got)))
    for pred, out in zip(args[2::2], args[3::2]):
        ids = [r["id"] for r in read(out)]
        if ids != want["where"][pred]:
            print("--where %s: read-delta ids %s, Spark %s" % (pred, ids, want["where"][pred]))
            sys.exit(1)
        print("ok %s %d" % (pred, len(ids)))


def int96_readers(args):
    """int96-readers J TABLE: DuckDB's delta_scan and delta-rs's reads (its query engine and its
    to_pyarrow_table) of spark_int96_range TABLE against Spark's (J, as compare-spark takes it). Prints, per reader, "READER equal ID…" for
    the rows it reads as Spark does and "READER differs ID GOT" per other row, or
    "READER fails ERROR" when it cannot read the table."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
    import duckdb_delta
    from deltalake import DeltaTable

    with open(args[0]) as f:
        want = {r[0]: r for r in json.load(f)}

    def duck():
        con = duckdb_delta.connect()
        con.sql("set TimeZone = 'UTC'")
        t = con.sql("select * from delta_scan('file://%s')" % os.path.abspath(args[1])).arrow()
        return t.read_all() if hasattr(t, "read_all") else t

    def deltars():
        from deltalake import QueryBuilder

        r = QueryBuilder().register("t", DeltaTable(args[1])).execute("select * from t")
        return pa.table(r.read_all() if hasattr(r, "read_all") else r)

    readers = (
        ("duckdb", duck),
        ("deltars", deltars),  # delta-rs's own engine (DataFusion)
        ("deltars-pyarrow", lambda: DeltaTable(args[1]).to_pyarrow_table()),  # its pyarrow dataset
    )
    for name, read in readers:
        try:
            rows = int_rows(read())
        except Exception as e:  # noqa: BLE001 (the failure is the finding)
            print("%s fails %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        equal = []
        for r in rows:
            got = [r["id"], r["ts"], None if r["st"] is None else r["st"]["ts"], r["arr"]]
            if got == want.get(r["id"]):
                equal.append(str(r["id"]))
            else:
                print("%s differs %d %s" % (name, r["id"], json.dumps(got)))
        print("%s equal %s" % (name, " ".join(equal)))


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
    cmd = sys.argv[1]
    if cmd == "deltars":
        deltars(sys.argv[2])
    elif cmd == "spark":
        spark(sys.argv[2])
    elif cmd == "compare":
        compare(sys.argv[2:])
    elif cmd == "compare-spark":
        compare_spark(sys.argv[2:])
    elif cmd == "compare-rows":
        compare_rows(sys.argv[2:])
    elif cmd == "int96-readers":
        int96_readers(sys.argv[2:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    _hard_exit(_run)
