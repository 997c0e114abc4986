"""Fixtures and reference reads for read-delta --where's peer test.

    where_peers.py deltars DIR         a table written by delta-rs under DIR/rs_where
    where_peers.py spark DIR           the same rows written by Spark + delta-spark, DIR/spark_where
    where_peers.py compare T PRED OUT [T PRED OUT …]
                                       compare read-delta's output (Arrow IPC stream OUT) with
                                       DuckDB's delta_scan(T) WHERE PRED and, for a Spark
                                       table, with Spark's own spark.read…where(PRED)

The rows make every file's statistics matter: strings longer than the 32 code points writers
keep (sharing their prefix), NaN and ±0 in a double column, timestamps with µs fractions that
ms statistics truncate, decimals, dates, nulls; several files per partition. compare prints
"ok T N" per case (N rows) or exits 1 with the first difference.
"""
import datetime
import decimal
import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import canon_rows, _hard_exit  # noqa: E402

UTC = datetime.timezone.utc
LONG = "x" * 31

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("part", pa.string()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("d", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def rows(k):
    """The rows of file k (ids 10k … 10k+9)."""
    out = []
    for i in range(10 * k, 10 * k + 10):
        out.append(
            {
                "id": i,
                "part": ["A", "B", None][k % 3],
                "s": None if i % 11 == 0 else LONG + ["a", "b", "y\u00e9", "z\U0001F600"][(i + k) % 4] + str(i),
                "f": [0.5, float("nan"), -0.0, 2.5, 1e300][i % 5] + (0 if i % 5 == 1 else k),
                "d": decimal.Decimal(i) / decimal.Decimal(100),
                "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=k),
                "ts": datetime.datetime(2024, 3, 10, 12, 0, 0, tzinfo=UTC) + datetime.timedelta(microseconds=i * 1234 + k * 1000000),
            }
        )
    return out


FILES = 6


def deltars(base):
    from deltalake import write_deltalake

    p = os.path.join(base, "rs_where")
    for k in range(FILES):
        write_deltalake(p, pa.Table.from_pylist(rows(k), SCHEMA), partition_by=["part"], mode="append")
    print("rs_where")


def spark(base):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
    import spark_delta

    s = spark_delta.session(app_name="read-delta-where")
    try:
        s.conf.set("spark.sql.session.timeZone", "UTC")
        p = os.path.join(base, "spark_where")
        from pyspark.sql import types as T

        st = T.StructType(
            [
                T.StructField("id", T.LongType()),
                T.StructField("part", T.StringType()),
                T.StructField("s", T.StringType()),
                T.StructField("f", T.DoubleType()),
                T.StructField("d", T.DecimalType(10, 2)),
                T.StructField("day", T.DateType()),
                T.StructField("ts", T.TimestampType()),
            ]
        )
        for k in range(FILES):
            data = [tuple(r[n] for n in SCHEMA.names) for r in rows(k)]
            s.createDataFrame(data, st).coalesce(1).write.format("delta").mode("append").partitionBy("part").save(p)
        print("spark_where")
    finally:
        s.stop()


def compare(args):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
    import duckdb_delta

    con = duckdb_delta.connect()
    con.sql("set enable_progress_bar = false")
    con.sql("set TimeZone = 'UTC'")
    cases = [args[i : i + 3] for i in range(0, len(args), 3)]
    sess = None
    try:
        for table, pred, out in cases:
            with open(out, "rb") as f:
                got = ipc.open_stream(f).read_all()
            duck = con.sql("select * from delta_scan('file://%s') where %s" % (os.path.abspath(table), pred)).arrow()
            if hasattr(duck, "read_all"):  # a RecordBatchReader in newer duckdb
                duck = duck.read_all()
            refs = [("DuckDB", duck)]
            if os.path.basename(table).startswith("spark"):
                if sess is None:
                    import spark_delta

                    sess = spark_delta.session(app_name="read-delta-where-check")
                    sess.conf.set("spark.sql.session.timeZone", "UTC")
                    sess.conf.set("spark.sql.ansi.enabled", "true")
                df = sess.read.format("delta").load(table).where(pred)
                refs.append(("Spark", pa.Table.from_pylist([r.asDict() for r in df.collect()])))
            g = canon_rows(got.select(SCHEMA.names))
            for name, want in refs:
                w = canon_rows(want.select(SCHEMA.names)) if want.num_rows else []
                if g != w:
                    print("%s WHERE %s: read-delta %d rows, %s %d" % (table, pred, len(g), name, len(w)))
                    for a in sorted(set(g) ^ set(w))[:3]:
                        print(" only in %s: %s" % ("read-delta" if a in g else name, a))
                    sys.exit(1)
            print("ok %s %d" % (os.path.basename(table), len(g)))
    finally:
        if sess is not None:
            sess.stop()


def _run():
    cmd = sys.argv[1]
    if cmd == "deltars":
        deltars(sys.argv[2])
    elif cmd == "spark":
        spark(sys.argv[2])
    elif cmd == "compare":
        compare(sys.argv[2:])
    else:
        sys.exit("unknown command %s" % cmd)


if __name__ == "__main__":
    _hard_exit(_run)
