"""The readers and writers of Delta tables on the S3 test server, for e2e/s3_test.go (issue #19).

Each command prints one JSON document on stdout. Tables are s3://BUCKET/PREFIX URIs (Spark is
given them as s3a://); the server and its credentials come from the environment that
internal/s3test's Env gives a child process (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ALLOW_HTTP), so no secret is ever in argv.

    s3tables.py ids URI            {"version": V, "deltars": [id…], "duckdb": [id…]}
                                   the int64 column id of the latest snapshot, sorted, read by
                                   delta-rs and by DuckDB's delta_scan (through an S3 secret)
    s3tables.py spark-ids URI      {"spark": [id…]}: the same through Spark's s3a:// filesystem
    s3tables.py input-ids GLOB     {"rows": N, "ids": [distinct id…]}: DuckDB's read_json over
                                   the input files (s3://BUCKET/in/*.json)
    s3tables.py write-deltars URI FROM N   delta-rs appends ids FROM … FROM+N-1 (name = "r<id>")
    s3tables.py write-spark URI FROM N     Spark appends the same rows through s3a://
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "py"))

import duckdb_delta  # noqa: E402


def env(name):
    v = os.environ.get(name)
    if not v:
        raise SystemExit(f"s3tables.py: {name} is not set (internal/s3test's Env)")
    return v


def endpoint_hostport():
    ep = env("AWS_ENDPOINT_URL")
    if not ep.startswith("http://"):
        raise SystemExit(f"s3tables.py: AWS_ENDPOINT_URL={ep} is not http://")
    return ep[len("http://"):].rstrip("/")


def duck():
    con = duckdb_delta.connect()
    import duckdb_extension_httpfs

    base = os.path.join(os.path.dirname(os.path.abspath(duckdb_extension_httpfs.__file__)), "extensions")
    import duckdb

    con.execute(f"LOAD '{os.path.join(base, 'v' + duckdb.__version__, 'httpfs.duckdb_extension')}'")
    if not os.environ.get("AWS_ENDPOINT_URL"):
        return con  # local tables (STREAMKIT_S3E2E_ROOT=local)
    con.execute(
        f"CREATE SECRET s3test (TYPE S3, KEY_ID '{env('AWS_ACCESS_KEY_ID')}', SECRET '{env('AWS_SECRET_ACCESS_KEY')}', "
        f"REGION '{os.environ.get('AWS_REGION', 'us-east-1')}', ENDPOINT '{endpoint_hostport()}', URL_STYLE 'path', USE_SSL false)"
    )
    return con


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def storage_options():
    # delta-rs writes to S3 need a lock or conditional puts; these tests write with one
    # delta-rs process at a time.
    return {"AWS_S3_ALLOW_UNSAFE_RENAME": "true", "AWS_ALLOW_HTTP": "true"}


def ids(uri):
    from deltalake import DeltaTable

    dt = DeltaTable(uri, storage_options=storage_options())
    rs = sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist())
    con = duck()
    dd = [r[0] for r in con.sql(f"SELECT id FROM delta_scan({sql_str(uri)}) ORDER BY id").fetchall()]
    return {"version": dt.version(), "deltars": rs, "duckdb": dd}


def input_ids(glob):
    con = duck()
    rel = f"read_json({sql_str(glob)}, format='newline_delimited', columns={{'id': 'BIGINT'}})"
    rows = con.sql(f"SELECT count(*) FROM {rel}").fetchone()[0]
    dist = [r[0] for r in con.sql(f"SELECT DISTINCT id FROM {rel} ORDER BY id").fetchall()]
    return {"rows": rows, "ids": dist}


def spark():
    import spark_delta

    jars_dir = os.environ.get("STREAMKIT_SPARK_S3_JARS") or os.path.join(spark_delta.ROOT, ".it", "spark-s3-jars")
    import glob

    s3jars = sorted(glob.glob(os.path.join(jars_dir, "*.jar")))
    if not any(os.path.basename(j).startswith("hadoop-aws-") for j in s3jars):
        raise SystemExit(f"s3tables.py: no hadoop-aws jar in {jars_dir} (STREAMKIT_SPARK_S3_JARS)")
    if not os.environ.get("AWS_ENDPOINT_URL"):
        return spark_delta.session(app_name="streamkit-s3")  # local tables
    conf = {
        "spark.hadoop.fs.s3a.endpoint": env("AWS_ENDPOINT_URL"),
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION", "us-east-1"),
        "spark.hadoop.fs.s3a.aws.credentials.provider": "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    }
    conf["spark.jars"] = ",".join(spark_delta.delta_jars() + s3jars)
    return spark_delta.session(app_name="streamkit-s3", extra_conf=conf)


def s3a(uri):
    return "s3a://" + uri[len("s3://"):] if uri.startswith("s3://") else uri


def spark_ids(uri):
    s = spark()
    try:
        rows = s.read.format("delta").load(s3a(uri)).select("id").collect()
        return {"spark": sorted(r[0] for r in rows)}
    finally:
        s.stop()


def rows(start, n):
    import pyarrow as pa

    ids_ = list(range(start, start + n))
    return pa.table({"id": pa.array(ids_, pa.int64()), "name": pa.array([f"r{i}" for i in ids_], pa.string())})


def write_deltars(uri, start, n):
    from deltalake import write_deltalake

    write_deltalake(uri, rows(start, n), mode="append", storage_options=storage_options())
    return {"written": n}


def write_spark(uri, start, n):
    s = spark()
    try:
        df = s.createDataFrame([(i, f"r{i}") for i in range(start, start + n)], "id bigint, name string")
        df.write.format("delta").mode("append").save(s3a(uri))
        return {"written": n}
    finally:
        s.stop()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "ids":
        out = ids(args[0])
    elif cmd == "spark-ids":
        out = spark_ids(args[0])
    elif cmd == "input-ids":
        out = input_ids(args[0])
    elif cmd == "write-deltars":
        out = write_deltars(args[0], int(args[1]), int(args[2]))
    elif cmd == "write-spark":
        out = write_spark(args[0], int(args[1]), int(args[2]))
    else:
        raise SystemExit(f"s3tables.py: unknown command {cmd}")
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
    # delta-rs can abort at interpreter exit after the work is done (delta-io/delta-rs#2184).
    os._exit(0)


if __name__ == "__main__":
    main()
