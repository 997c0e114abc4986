#!/usr/bin/env python3
"""Data preparation helpers of make bench (scripts/bench/run.sh; see BENCH_SPEC in run.sh).

    prep.py w2 FLIGHTS.parquet SCALE DIR      DIR/w2.parquet, DIR/w2.arrows, DIR/w2.json
    prep.py w3 SCALE SEED DIR                 DIR/w3.parquet, DIR/w3.arrows, DIR/w3.json
    prep.py w1-expected < IPC stream          JSON of the W1 equality figures on stdout
    prep.py topic BOOTSTRAP TOPIC             JSON {"cluster", "partitions", "records"}
    prep.py create-topic BOOTSTRAP TOPIC N    (re)create TOPIC with N partitions
    prep.py create-bucket NAME                create bucket NAME on the S3 server of the AWS_*
                                              environment (scripts/s3.sh env); it may exist
    prep.py remove-prefix s3://BUCKET/PREFIX  delete every object under PREFIX
    prep.py remove-bucket NAME                delete bucket NAME and everything in it

W2: the first round(3,000,000 × SCALE) flights of vega-datasets flights-3m.parquet in file
order (date taken as UTC), then one sentinel row (origin and destination "__END__", date
2002-01-01T00:00:00Z, six months after the last flight, delay and distance 0) that closes every
window of append-mode engines. The watermark delay is the measured maximum out-of-orderness of
the rows in that order (max over rows of the latest earlier date minus the row's date) plus one
minute, rounded up to whole minutes: Spark counts a row whose time equals the watermark as late.

W3: N = round(20,000,000 × SCALE) events, of which N_dup = round(N / 10) are re-sends and
N_orig = N − N_dup originals. Original k (0 ≤ k < N_orig): id = md5('w3:SEED:k') (32 hex
chars), ts = 2024-01-01T00:00:00Z + k ms (one original per millisecond of event time),
payload = 80 hex chars (md5 of 'p:SEED:k', of 'q:SEED:k' and half of 'r:SEED:k').
Re-send r (0 ≤ r < N_dup): a copy (same id, ts, payload) of original
k = md5_number('k:SEED:r') mod N_orig that arrives d = 1 + md5_number('d:SEED:r') mod 300000
ms of event time after it (within 5 minutes). The stream is every event in arrival order
(originals arrive at their ts; ties: originals first, then by k or r), so event time advances
through the stream and the first event of each id is its original. Expected output: the N_orig
originals.
"""
import json
import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

BATCH = 65536


def parquet_to_arrows(src, dst):
    """Copy a Parquet file to an Arrow IPC stream file (what write-kafka reads on stdin)."""
    f = pq.ParquetFile(src)
    tmp = dst + ".tmp"
    with ipc.new_stream(tmp, f.schema_arrow) as w:
        for b in f.iter_batches(batch_size=BATCH):
            w.write_batch(b)
    os.replace(tmp, dst)


def write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def w2(flights, scale, out):
    n = round(3_000_000 * float(scale))
    c = duckdb.connect()
    c.execute("SET TimeZone='UTC'")
    c.execute(f"""CREATE TABLE f AS
        SELECT (date AT TIME ZONE 'UTC') AS date, delay::BIGINT AS delay, distance::BIGINT AS distance,
               origin, destination, file_row_number AS rn
        FROM read_parquet('{flights}', file_row_number=true) ORDER BY rn LIMIT {n}""")
    ooo = c.sql("""SELECT coalesce(max(epoch(rm) - epoch(date)), 0) FROM (
        SELECT date, max(date) OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) rm FROM f)""").fetchone()[0]
    delay = int(-(-(ooo + 60) // 60) * 60)
    tmp = f"{out}/w2.parquet.tmp"
    c.execute(f"""COPY (
        SELECT date, delay, distance, origin, destination FROM (
          SELECT date, delay, distance, origin, destination, rn FROM f
          UNION ALL
          SELECT TIMESTAMPTZ '2002-01-01 00:00:00+00', 0, 0, '__END__', '__END__', {n} + 1)
        ORDER BY rn) TO '{tmp}' (FORMAT parquet, ROW_GROUP_SIZE {BATCH})""")
    os.replace(tmp, f"{out}/w2.parquet")
    parquet_to_arrows(f"{out}/w2.parquet", f"{out}/w2.arrows")
    write_json(f"{out}/w2.json", {"rows": n, "records": n + 1, "max_out_of_order_s": ooo,
                                  "watermark_delay_s": delay})


def w3(scale, seed, out):
    n = round(20_000_000 * float(scale))
    ndup = round(n / 10)
    norig = n - ndup
    c = duckdb.connect()
    c.execute("SET TimeZone='UTC'")
    s = int(seed)
    tmp = f"{out}/w3.parquet.tmp"
    c.execute(f"""COPY (
      WITH orig AS (
        SELECT k, md5('w3:{s}:' || k) AS id,
               TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_milliseconds(k) AS ts,
               md5('p:{s}:' || k) || md5('q:{s}:' || k) || substr(md5('r:{s}:' || k), 1, 16) AS payload
        FROM range({norig}) t(k)),
      dup AS (
        SELECT r, (md5_number('k:{s}:' || r) % {norig})::BIGINT AS k,
               (1 + md5_number('d:{s}:' || r) % 300000)::BIGINT AS d
        FROM range({ndup}) t(r))
      SELECT id, ts, payload FROM (
        SELECT id, ts, payload, ts AS arrival, 0 AS kind, k AS n FROM orig
        UNION ALL
        SELECT o.id, o.ts, o.payload, o.ts + to_milliseconds(dup.d), 1, dup.r FROM dup JOIN orig o USING (k))
      ORDER BY arrival, kind, n
    ) TO '{tmp}' (FORMAT parquet, ROW_GROUP_SIZE {BATCH})""")
    os.replace(tmp, f"{out}/w3.parquet")
    parquet_to_arrows(f"{out}/w3.parquet", f"{out}/w3.arrows")
    write_json(f"{out}/w3.json", {"records": n, "originals": norig, "resends": ndup, "seed": s})


def w1_expected():
    """W1 figures of the generated rows (an IPC stream on stdin), independent of any engine."""
    r = ipc.open_stream(sys.stdin.buffer)
    rows, sp, sa, lo, hi = 0, 0, 0, None, None
    import pyarrow.compute as pc
    for b in r:
        if b.num_rows == 0:
            continue
        rows += b.num_rows
        sp += pc.sum(b.column("price")).as_py()
        sa += pc.sum(b.column("auction")).as_py()
        mm = pc.min_max(b.column("date_time")).as_py()
        lo = mm["min"] if lo is None else min(lo, mm["min"])
        hi = mm["max"] if hi is None else max(hi, mm["max"])
    json.dump({"rows": rows, "distinct_partition_offset": rows, "sum_price": sp, "sum_auction": sa,
               "min_date_time": lo.isoformat(), "max_date_time": hi.isoformat()}, sys.stdout)
    print()


def admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def topic(bootstrap, name):
    from confluent_kafka import Consumer, TopicPartition
    md = admin(bootstrap).list_topics(timeout=30)
    out = {"cluster": md.cluster_id, "partitions": 0, "records": 0}
    t = md.topics.get(name)
    if t is None or t.error is not None:
        print(json.dumps(out))
        return
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamkit-bench-probe",
                  "enable.auto.commit": False})
    for p in t.partitions:
        lo, hi = c.get_watermark_offsets(TopicPartition(name, p), timeout=30)
        out["records"] += hi - lo
    c.close()
    out["partitions"] = len(t.partitions)
    print(json.dumps(out))


def create_topic(bootstrap, name, parts):
    import time
    from confluent_kafka.admin import NewTopic
    a = admin(bootstrap)
    if name in a.list_topics(timeout=30).topics:
        for f in a.delete_topics([name]).values():
            f.result()
        for _ in range(300):
            if name not in a.list_topics(timeout=30).topics:
                break
            time.sleep(0.2)
    for _ in range(50):
        try:
            for f in a.create_topics([NewTopic(name, num_partitions=int(parts), replication_factor=1)]).values():
                f.result()
            return
        except Exception as e:  # deletion still in progress on the broker
            if "TOPIC_ALREADY_EXISTS" not in str(e) and "marked for deletion" not in str(e):
                raise
            time.sleep(0.5)
    sys.exit(f"prep.py: cannot create topic {name}")


def s3fs():
    """pyarrow's S3 file system on the server of the AWS_* environment (keys never in argv)."""
    from pyarrow import fs
    ep = os.environ["AWS_ENDPOINT_URL"]
    scheme, host = ep.split("://", 1)
    return fs.S3FileSystem(access_key=os.environ["AWS_ACCESS_KEY_ID"], secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                           region=os.environ.get("AWS_REGION") or "us-east-1", endpoint_override=host.rstrip("/"),
                           scheme=scheme, force_virtual_addressing=False,
                           allow_bucket_creation=True, allow_bucket_deletion=True)


def create_bucket(name):
    s3fs().create_dir(name)


def remove_prefix(url):
    assert url.startswith("s3://") and url.count("/") >= 3, url
    s3fs().delete_dir(url[len("s3://"):])


def remove_bucket(name):
    s3fs().delete_dir(name)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"w2": w2, "w3": w3, "w1-expected": w1_expected, "topic": topic, "create-topic": create_topic,
     "create-bucket": create_bucket, "remove-prefix": remove_prefix,
     "remove-bucket": remove_bucket}[cmd](*args)
