"""Reference evaluator of expr's differential test: reads the Arrow IPC table and a JSON list
of expressions, evaluates each in DuckDB or (for the documented differences) in one local
pyspark session, and writes one result per expression: {"err": message} or {"vals": [...]}
with every value in the canonical text form the Go side prints."""
import datetime
import decimal
import json
import math
import sys

import pyarrow as pa
import pyarrow.ipc


def canon(v):
    if v is None:
        return "NULL"
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
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return "t:" + v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return "d:" + v.isoformat()
    return "?:" + repr(v)


def main():
    ipc_path, spec_path, out_path = sys.argv[1:4]
    table = pa.ipc.open_file(ipc_path).read_all()
    spec = json.load(open(spec_path))
    out = {}
    duck = [e for e in spec if e["engine"] == "duckdb"]
    spark = [e for e in spec if e["engine"] == "spark"]
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
                out[e["id"]] = {"vals": [canon(v) for v in col.to_pylist()]}
            except Exception as ex:  # noqa: BLE001 - the message is the result
                out[e["id"]] = {"err": str(ex).split("\n")[0]}
    if spark:
        from pyspark.sql import SparkSession
        from pyspark.sql import types as T
        s = (SparkSession.builder.master("local[1]").config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false").config("spark.sql.ansi.enabled", "true").getOrCreate())
        s.sparkContext.setLogLevel("OFF")
        fields = []
        for f in table.schema:
            t = f.type
            if pa.types.is_int32(t):
                st = T.IntegerType()
            elif pa.types.is_int64(t):
                st = T.LongType()
            elif pa.types.is_float64(t):
                st = T.DoubleType()
            elif pa.types.is_decimal(t):
                st = T.DecimalType(t.precision, t.scale)
            elif pa.types.is_string(t):
                st = T.StringType()
            elif pa.types.is_boolean(t):
                st = T.BooleanType()
            elif pa.types.is_date32(t):
                st = T.DateType()
            elif pa.types.is_timestamp(t):
                st = T.TimestampType()
            else:
                raise SystemExit(f"no spark type for {t}")
            fields.append(T.StructField(f.name, st, True))
        df = s.createDataFrame(table.to_pylist(), T.StructType(fields)).orderBy("rid").cache()
        df.count()
        # many expressions per query; a chunk that fails is rerun one expression at a time
        def run(chunk):
            rows = df.selectExpr(*[f"{e['spark']} AS r{k}" for k, e in enumerate(chunk)]).collect()
            for k, e in enumerate(chunk):
                out[e["id"]] = {"vals": [canon(r[k]) for r in rows]}
        for at in range(0, len(spark), 40):
            chunk = spark[at:at + 40]
            try:
                run(chunk)
            except Exception:  # noqa: BLE001
                for e in chunk:
                    try:
                        run([e])
                    except Exception as ex:  # noqa: BLE001
                        out[e["id"]] = {"err": str(ex).split("\n")[0]}
        s.stop()
    json.dump(out, open(out_path, "w"))


main()
