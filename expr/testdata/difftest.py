"""Reference evaluator of expr's differential test: reads the Arrow IPC table and a JSON list
of expressions, evaluates each in DuckDB or (for the documented differences) in one local
pyspark session, and writes one result per expression: {"err": message} or {"vals": [...]}
with every value in the canonical text form the Go side prints."""
import datetime
import time
import decimal
import json
import math
import sys

import pyarrow as pa
import pyarrow.ipc


def canon_typed(t, v):
    """canon for a DuckDB result of Arrow type t: structs arrive as dicts, maps as lists of
    (key, value) pairs; both print as the Go side prints them."""
    if v is None:
        return "NULL"
    if pa.types.is_struct(t):
        return "{" + ",".join(canon_typed(t.field(k).type, v[t.field(k).name]) for k in range(t.num_fields)) + "}"
    if pa.types.is_map(t):
        return "{" + ",".join(sorted(canon_typed(t.key_type, k) + ":" + canon_typed(t.item_type, x) for k, x in v)) + "}"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "[" + ",".join(canon_typed(t.value_type, x) for x in v) + "]"
    return canon(v)


def canon(v):
    if v is None:
        return "NULL"
    if hasattr(v, "asDict"):  # a pyspark Row: a struct
        return "{" + ",".join(canon(x) for x in v) + "}"
    if isinstance(v, dict):  # a pyspark map (entries sorted: pyspark does not keep their order)
        return "{" + ",".join(sorted(canon(k) + ":" + canon(x) for k, x in v.items())) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return "n:" + str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "f:NaN"
        if math.isinf(v):
            return "f:Inf" if v > 0 else "f:-Inf"
        return "f:" + repr(v)
    if isinstance(v, decimal.Decimal):
        s = format(v.normalize(), "f") if v != 0 else "0"
        return "n:" + s
    if isinstance(v, str):
        return "s:" + v
    if isinstance(v, (bytes, bytearray)):
        return "b:" + bytes(v).hex()
    if isinstance(v, datetime.timedelta):  # a day-time interval, in µs
        return "i:" + str((v.days * 86400 + v.seconds) * 1000000 + v.microseconds)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return "t:" + v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return "d:" + v.isoformat()
    return "?:" + repr(v)


def main():
    """usage: difftest.py IPC SPEC OUT [IPC SPEC OUT ...]: one DuckDB connection and one Spark
    session (started only if some case needs it) for every set."""
    t0 = time.time()
    args = sys.argv[1:]
    if not args or len(args) % 3:
        sys.exit("usage: difftest.py IPC SPEC OUT [IPC SPEC OUT ...]")
    sets = [args[k:k + 3] for k in range(0, len(args), 3)]
    session = []

    def spark():
        if not session:
            from pyspark.sql import SparkSession
            s = (SparkSession.builder.master("local[1]").config("spark.sql.session.timeZone", "UTC")
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "1").config("spark.ui.showConsoleProgress", "false").config("spark.sql.ansi.enabled", "true").getOrCreate())
            s.sparkContext.setLogLevel("OFF")
            session.append(s)
        return session[0]

    n_duck = n_spark = 0
    t_duck = 0.0
    for ipc_path, spec_path, out_path in sets:
        td = time.time()
        table = pa.ipc.open_file(ipc_path).read_all()
        spec = json.load(open(spec_path))
        out = {}
        duck = [e for e in spec if e["engine"] == "duckdb"]
        spark_cases = [e for e in spec if e["engine"] == "spark"]
        n_duck += len(duck)
        n_spark += len(spark_cases)
        if duck:
            import duckdb
            con = duckdb.connect()
            con.execute("SET TimeZone='UTC'")
            con.register("t", table)
            for e in duck:
                try:
                    res = con.execute(f"SELECT {e['duck']} AS r FROM t ORDER BY rid").fetch_arrow_table()
                    col = res.column(0)
                    if pa.types.is_timestamp(col.type):
                        col = col.cast(pa.timestamp("us"))
                    out[e["id"]] = {"vals": [canon_typed(col.type, v) for v in col.to_pylist()]}
                except Exception as ex:  # noqa: BLE001 - the message is the result
                    out[e["id"]] = {"err": str(ex).split("\n")[0]}
            con.close()
        t_duck += time.time() - td
        if spark_cases:
            s = spark()
            # through Parquet, so that Spark reads the table in the JVM (no Python workers)
            import os
            import pyarrow.parquet as pq
            pq_path = os.path.splitext(out_path)[0] + ".parquet"
            pq.write_table(table, pq_path)
            df = s.read.parquet(pq_path).orderBy("rid").coalesce(1).cache()
            df.count()

            # many expressions per query; a chunk that fails is rerun one expression at a time
            def run(chunk):
                rows = df.selectExpr(*[f"{e['spark']} AS r{k}" for k, e in enumerate(chunk)]).collect()
                for k, e in enumerate(chunk):
                    out[e["id"]] = {"vals": [canon(r[k]) for r in rows]}

            def bisect(chunk):
                try:
                    run(chunk)
                except Exception as ex:  # noqa: BLE001
                    if len(chunk) == 1:
                        out[chunk[0]["id"]] = {"err": str(ex).split("\n")[0]}
                        return
                    bisect(chunk[:len(chunk) // 2])
                    bisect(chunk[len(chunk) // 2:])
            for e in spark_cases:
                if e.get("alone"):
                    bisect([e])
            batched = [e for e in spark_cases if not e.get("alone")]
            for at in range(0, len(batched), 32):
                bisect(batched[at:at + 32])
            df.unpersist()
        json.dump(out, open(out_path, "w"))
    if session:
        session[0].stop()
    print(f"reference: {n_duck} DuckDB, {n_spark} Spark expressions in {time.time() - t0:.1f}s (DuckDB {t_duck:.1f}s)", file=sys.stderr)

main()
