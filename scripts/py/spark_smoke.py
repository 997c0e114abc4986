"""Smoke test of the Spark + Delta peer: local[2] Spark writes a Delta table,
appends, reads it back and runs DESCRIBE HISTORY. Exits non-zero on failure.

Run: .venv/bin/python scripts/py/spark_smoke.py
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import spark_delta  # noqa: E402


def main():
    t0 = time.monotonic()
    spark = spark_delta.session(app_name="streamkit-spark-smoke")
    t1 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tbl")
            spark.range(0, 10).selectExpr("id", "cast(id % 3 as string) as k") \
                .write.format("delta").save(path)
            spark.range(10, 15).selectExpr("id", "cast(id % 3 as string) as k") \
                .write.format("delta").mode("append").save(path)
            df = spark.read.format("delta").load(path)
            n = df.count()
            s = df.agg({"id": "sum"}).collect()[0][0]
            assert (n, s) == (15, sum(range(15))), (n, s)
            hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
            ops = sorted((r.version, r.operation) for r in hist)
            assert ops == [(0, "WRITE"), (1, "WRITE")], ops
            print(f"ok spark {spark.version}: delta table {n} rows, history {ops}")
            # A Python UDF runs in a worker process: checks PYSPARK_PYTHON is the venv.
            from pyspark.sql.functions import udf

            has_pa = udf(lambda _: __import__("importlib").util.find_spec("pyarrow") is not None, "boolean")
            assert df.select(has_pa("id")).distinct().collect()[0][0] is True
            print("ok python worker runs in the venv")
            # Also let delta-rs (if installed) read what Spark wrote.
            try:
                from deltalake import DeltaTable
            except ImportError:
                pass
            else:
                dt = DeltaTable(path)
                assert dt.version() == 1 and dt.to_pyarrow_table().num_rows == 15
                print("ok deltalake reads the Spark-written table")
    finally:
        spark.stop()
    print(f"spark peers: all ok (session start {t1 - t0:.1f}s, total {time.monotonic() - t0:.1f}s)")


if __name__ == "__main__":
    main()
