"""One Spark + delta-spark session taking commands on stdin, for write-delta's tests of tables
with table features (type widening, clustering): the test runs SQL in Spark (CREATE, ALTER,
INSERT, OPTIMIZE), streamkit writes in between, and Spark reads the result.

    delta_features.py spark-server

Commands, one JSON object a line; each answer is one line "RESULT {json}" with "ok":
    {"cmd": "sql", "sql": [STATEMENT, ...]}   run the statements in order
    {"cmd": "rows", "query": SQL}             the query's rows, each as compact JSON with sorted
                                              keys (dates and timestamps ISO 8601, decimals
                                              as strings), sorted; and its column types
    {"cmd": "detail", "path": P}              DESCRIBE DETAIL of the table at P
    {"cmd": "quit"}
"""
import datetime
import decimal
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def plain(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def rows(spark, query):
    df = spark.sql(query)
    out = [json.dumps(plain(r.asDict(recursive=True)), sort_keys=True, separators=(",", ":")) for r in df.collect()]
    return {"rows": sorted(out), "types": {f.name: f.dataType.simpleString() for f in df.schema.fields}}


def detail(spark, path):
    r = spark.sql("DESCRIBE DETAIL delta.`%s`" % path).collect()[0].asDict(recursive=True)
    return {"detail": plain(r)}


def run_sql(spark, cmd):
    for stmt in cmd["sql"]:
        spark.sql(stmt).collect()
    return {}


if __name__ == "__main__":
    if sys.argv[1:] != ["spark-server"]:
        sys.exit(__doc__)
    import delta_interop

    delta_interop.spark_serve("streamkit-delta-features-it", {
        "sql": run_sql,
        "rows": lambda spark, cmd: rows(spark, cmd["query"]),
        "detail": lambda spark, cmd: detail(spark, cmd["path"]),
    })
