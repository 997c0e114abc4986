"""Delta tables on the test object store (scripts/s3.sh) written and read by the real peers,
for the Go tests (internal/s3test: ReadTable, WriteTable, RunTables).

    bucket_delta.py OPS.json

OPS.json is a list of operations, run in order in this one process (Spark, slow to start, is
started once and only when an operation names it):

    {"op": "read",  "engine": "deltalake"|"duckdb"|"spark", "uri": "s3://bucket/path"}
    {"op": "write", "engine": "deltalake"|"spark", "uri": "s3://bucket/path",
     "rows": "/abs/rows.arrow", "mode": "append"|"overwrite", "partition_by": ["col", ...]}

Prints one line "RESULT <json>": a list with one entry per operation, in order:
    read:  {"rows": ["<row as JSON>", ...], "version": N}
           rows normalised by check_table.norm (sink/delta/testdata: timestamps to UTC ISO text,
           decimals to text, ...), each a JSON object with sorted keys, the list sorted;
           version is the table version the reader saw (-1 for DuckDB, which does not say)
    write: {"version": N}   the table version after the write (as delta-rs reads it)
rows.arrow is an Arrow IPC file (file format).

The server and its credentials come from the environment `scripts/s3.sh env` exports
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP), never
from argv:
  - delta-rs: storage_options with those keys (path-style requests are object_store's
    default; commits use conditional puts, so AWS_S3_ALLOW_UNSAFE_RENAME is not needed);
  - DuckDB: the httpfs extension from the pinned duckdb-extension-httpfs wheel and
    CREATE SECRET (TYPE s3, ENDPOINT host:port, URL_STYLE 'path', USE_SSL false), then
    delta_scan('s3://...');
  - Spark: hadoop-aws + the AWS SDK bundle (.it/spark-s3-jars, scripts/peers.sh spark) on the
    driver classpath, s3a:// for s3:// with fs.s3a.endpoint, path-style access, no TLS.
"""

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "sink", "delta", "testdata"))

import check_table  # noqa: E402  (norm, _hard_exit)

ENV_KEYS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP")


def env(k):
    v = os.environ.get(k)
    if not v:
        sys.exit("bucket_delta.py: %s is not set (eval \"$(scripts/s3.sh env)\")" % k)
    return v


def storage_options():
    """delta-rs / object_store options for the test server."""
    return {k: env(k) for k in ENV_KEYS}


def canonical(table):
    out = [json.dumps({k: check_table.norm(v) for k, v in r.items()}, sort_keys=True) for r in table.to_pylist()]
    out.sort()
    return out


def read_arrow(path):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.memory_map(path) as src:
        return ipc.open_file(src).read_all()


# --- delta-rs ---


def deltars_read(uri):
    from deltalake import DeltaTable

    dt = DeltaTable(uri, storage_options=storage_options())
    return {"rows": canonical(dt.to_pyarrow_table()), "version": dt.version()}


def deltars_write(uri, rows, mode, partition_by):
    from deltalake import DeltaTable, write_deltalake

    so = storage_options()
    write_deltalake(uri, read_arrow(rows), mode=mode, partition_by=partition_by or None, storage_options=so)
    return {"version": DeltaTable(uri, storage_options=so).version()}


# --- DuckDB ---

_duck = None


def duck():
    global _duck
    if _duck is None:
        import duckdb_delta

        con = duckdb_delta.connect(httpfs=True)
        host = env("AWS_ENDPOINT_URL").split("://", 1)[-1].rstrip("/")
        # Prepared parameters are not accepted in CREATE SECRET; the values are test settings
        # without quotes, checked here so none can break out of its literal.
        vals = [env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), host, env("AWS_REGION")]
        if any("'" in v for v in vals):
            raise RuntimeError("S3 settings must not contain a quote")
        con.execute("CREATE SECRET streamkit_s3 (TYPE s3, PROVIDER config, KEY_ID '%s', SECRET '%s', "
                    "ENDPOINT '%s', URL_STYLE 'path', USE_SSL false, REGION '%s')" % tuple(vals))
        _duck = con
    return _duck


def duckdb_read(uri):
    t = duck().sql("SELECT * FROM delta_scan('%s')" % uri.replace("'", "''")).arrow()
    if hasattr(t, "read_all"):  # DuckDB >= 1.4 gives a RecordBatchReader
        t = t.read_all()
    return {"rows": canonical(t), "version": -1}


# --- Spark ---

_spark = None


def s3a(uri):
    return "s3a://" + uri[len("s3://"):] if uri.startswith("s3://") else uri


def spark():
    global _spark
    if _spark is None:
        import spark_delta

        _spark = spark_delta.session(app_name="streamkit-bucket", s3=True)
    return _spark


def spark_read(uri):
    from delta.tables import DeltaTable

    s = spark()
    df = s.read.format("delta").load(s3a(uri))
    version = DeltaTable.forPath(s, s3a(uri)).history(1).collect()[0]["version"]
    return {"rows": canonical(df.toArrow()), "version": version}


def spark_write(uri, rows, mode, partition_by):
    from delta.tables import DeltaTable

    s = spark()
    w = s.createDataFrame(read_arrow(rows)).write.format("delta").mode(mode)
    if partition_by:
        w = w.partitionBy(*partition_by)
    w.save(s3a(uri))
    return {"version": DeltaTable.forPath(s, s3a(uri)).history(1).collect()[0]["version"]}


READ = {"deltalake": deltars_read, "duckdb": duckdb_read, "spark": spark_read}
WRITE = {"deltalake": deltars_write, "spark": spark_write}


def run(op):
    if op["op"] == "read":
        return READ[op["engine"]](op["uri"])
    if op["op"] == "write":
        return WRITE[op["engine"]](op["uri"], op["rows"], op.get("mode") or "append", op.get("partition_by"))
    raise ValueError("unknown op %r" % op["op"])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        ops = json.load(f)
    results = []
    for op in ops:
        t0 = time.monotonic()
        results.append(run(op))
        print("%s %s %s: %.1fs" % (op["op"], op["engine"], op["uri"], time.monotonic() - t0), file=sys.stderr)
    print("RESULT " + json.dumps(results))
    if _spark is not None:
        _spark.stop()


if __name__ == "__main__":
    check_table._hard_exit(main)
