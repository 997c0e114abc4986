"""Small end-to-end check of the Flink bench engine against a real broker (not part of run.sh).

    .venv/bin/python scripts/bench/flink_e2e.py --kafka 127.0.0.1:39092 [--rows N] [--flights F]

Recreates the topics bench-w1 (2 partitions), bench-w2 (1) and bench-w3 (2) on the broker,
fills them with N records each in the BENCH_SPEC.md JSON shapes through
`streamkit write-kafka --value-format json` (W1 from `streamkit generate --preset nexmark-bids
--seed 1`; W2 the first F flights of flights-3m.parquet plus the "__END__" sentinel; W3 events
with 10% exact re-sends of an event at most 2,500 events earlier), runs
`scripts/bench/flink.sh w1|w2|w3`, then checks each output with DuckDB against the records read
back from Kafka:
  W1  row count, distinct (partition, offset), sum(price), sum(auction), min/max date_time, and
      every row's fields by (partition, offset)
  W2  the full set of (window_start, window_end, origin, flights, total_delay, max_distance)
      equals a DuckDB GROUP BY over the input (the sentinel excluded)
  W3  one row per id, every input id present, ts and payload those of the id's events
Needs bin/streamkit (go build -o bin/streamkit ./cmd/streamkit) and the peers venv (.venv:
pyarrow, duckdb, confluent-kafka). Exits 1 on the first mismatch. Deletes and recreates the
three topics: use a broker of your own.
"""

import argparse
import datetime as dt
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

import duckdb
import pyarrow as pa
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STREAMKIT = os.path.join(ROOT, "bin", "streamkit")


def fail(msg):
    print(f"flink_e2e: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def recreate_topics(bootstrap, specs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = [t for t in specs if t in admin.list_topics(timeout=10).topics]
    if existing:
        for f in admin.delete_topics(existing).values():
            f.result()
        time.sleep(2)
    for f in admin.create_topics([NewTopic(t, p, 1) for t, p in specs.items()]).values():
        f.result()


def write_kafka(bootstrap, topic, ipc_stream=None, generate_args=None):
    """Pipes an Arrow IPC stream (bytes) or a `streamkit generate` into write-kafka."""
    sink = [STREAMKIT, "write-kafka", "-b", bootstrap, "-t", topic, "--value-format", "json",
            "--progress", "off"]
    if generate_args:
        gen = subprocess.Popen([STREAMKIT, "generate", *generate_args, "--progress", "off"],
                               stdout=subprocess.PIPE)
        subprocess.run(sink, stdin=gen.stdout, check=True)
        if gen.wait() != 0:
            fail("streamkit generate failed")
    else:
        subprocess.run(sink, input=ipc_stream, check=True)


def ipc(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def flights(path, n):
    t = duckdb.sql(f"SELECT date::TIMESTAMP AS date, delay, distance, origin, destination "
                   f"FROM read_parquet('{path}') LIMIT {n}").to_arrow_table()
    schema = pa.schema([("date", pa.timestamp("us", "UTC")), ("delay", pa.int64()),
                        ("distance", pa.int64()), ("origin", pa.string()),
                        ("destination", pa.string())])
    t = t.cast(schema)
    last = max(t.column("date").to_pylist())
    sentinel = pa.table({"date": [last + dt.timedelta(days=30)], "delay": [0], "distance": [0],
                         "origin": ["__END__"], "destination": ["__END__"]}, schema=schema)
    return pa.concat_tables([t, sentinel])


def events(n, seed=7):
    rnd = random.Random(seed)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):
        if rows and rnd.random() < 0.1:
            rows.append(rows[rnd.randint(max(0, len(rows) - 2500), len(rows) - 1)])
        else:
            ts = base + dt.timedelta(milliseconds=100 * i, microseconds=rnd.randint(0, 999999))
            rows.append(("%032x" % rnd.getrandbits(128), ts, "p" * 40 + "%040d" % i))
    return pa.table({"id": [r[0] for r in rows],
                     "ts": pa.array([r[1] for r in rows], pa.timestamp("us", "UTC")),
                     "payload": [r[2] for r in rows]})


def read_topic(bootstrap, topic):
    """Every record of the topic as its JSON object plus _p (partition) and _o (offset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "flink-e2e",
                  "enable.auto.commit": False})
    rows = []
    for p in c.list_topics(topic, timeout=10).topics[topic].partitions:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        c.assign([TopicPartition(topic, p, lo)])
        while lo < hi:
            m = c.poll(10)
            if m is None:
                fail(f"timeout reading {topic}/{p}")
            if m.error():
                fail(f"reading {topic}/{p}: {m.error()}")
            d = json.loads(m.value())
            d["_p"], d["_o"] = p, m.offset()
            rows.append(d)
            lo = m.offset() + 1
    c.close()
    return pa.Table.from_pylist(rows)


def one(con, sql):
    return con.sql(sql).fetchall()


def check(con, workload, outdir, inp):
    con.register("inp", inp)
    con.sql(f"CREATE OR REPLACE VIEW o AS SELECT * FROM read_parquet('{outdir}/part-*')")
    types = one(con, "SELECT column_name, column_type FROM (DESCRIBE o)")
    print(f"{workload}: Parquet columns {types}")
    utc = "::TIMESTAMPTZ::TIMESTAMP"  # RFC 3339 text -> UTC wall clock, as Flink writes it
    if workload == "w1":
        got = one(con, 'SELECT count(*), count(DISTINCT (partition, "offset")), sum(price), '
                       'sum(auction), min(date_time), max(date_time) FROM o')
        want = one(con, f"SELECT count(*), count(DISTINCT (_p, _o)), sum(price), sum(auction), "
                        f"min(date_time{utc}), max(date_time{utc}) FROM inp")
        diff = one(con, f'SELECT count(*) FROM o JOIN inp ON o.partition = inp._p AND '
                        f'o."offset" = inp._o WHERE (o.auction, o.bidder, o.price, o.channel, '
                        f'o.url, o.date_time, o.extra) IS DISTINCT FROM (inp.auction, '
                        f'inp.bidder, inp.price, inp.channel, inp.url, inp.date_time{utc}, '
                        f'inp.extra)')[0][0]
        print(f"  out {got}\n  in  {want}\n  rows differing by (partition, offset): {diff}")
        if got != want or diff:
            fail("w1 output differs from the input")
    elif workload == "w2":
        want = (f"SELECT time_bucket(INTERVAL 1 HOUR, date{utc}) AS ws, "
                f"time_bucket(INTERVAL 1 HOUR, date{utc}) + INTERVAL 1 HOUR AS we, origin, "
                f"count(*), sum(delay), max(distance) FROM inp WHERE origin <> '__END__' "
                f"GROUP BY ALL")
        got = ("SELECT window_start, window_end, origin, flights, total_delay, max_distance "
               "FROM o WHERE origin <> '__END__'")
        n_want = one(con, f"SELECT count(*) FROM ({want})")[0][0]
        n_got = one(con, f"SELECT count(*) FROM ({got})")[0][0]
        missing = one(con, f"SELECT count(*) FROM (({want}) EXCEPT ALL ({got}))")[0][0]
        extra = one(con, f"SELECT count(*) FROM (({got}) EXCEPT ALL ({want}))")[0][0]
        print(f"  windows: expected {n_want}, got {n_got}, missing {missing}, extra {extra}")
        if n_want != n_got or missing or extra or n_want == 0:
            fail("w2 windows differ from a GROUP BY over the input")
    else:
        rows, ids = one(con, "SELECT count(*), count(DISTINCT id) FROM o")[0]
        in_rows, in_ids = one(con, "SELECT count(*), count(DISTINCT id) FROM inp")[0]
        missing = one(con, "SELECT count(*) FROM ((SELECT DISTINCT id FROM inp) "
                           "EXCEPT (SELECT id FROM o))")[0][0]
        wrong = one(con, f"SELECT count(*) FROM o WHERE (id, ts, payload) NOT IN "
                         f"(SELECT (id, ts{utc}, payload) FROM inp)")[0][0]
        print(f"  out rows {rows}, distinct ids {ids}; input rows {in_rows}, distinct ids "
              f"{in_ids}; ids missing {missing}; rows not in the input {wrong}")
        if rows != ids or ids != in_ids or missing or wrong or in_rows == in_ids:
            fail("w3 output is not one input event per id")
    print(f"{workload}: OK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kafka", required=True, help="bootstrap of a broker of your own")
    ap.add_argument("--rows", type=int, default=5000, help="records of W1 and W3")
    ap.add_argument("--flights", type=int, default=20000, help="flights of W2")
    ap.add_argument("--flights-file", default=os.environ.get(
        "BENCH_FLIGHTS", "/tmp/vega/package/data/flights-3m.parquet"))
    ap.add_argument("--workloads", default="w1,w2,w3")
    args = ap.parse_args()
    todo = args.workloads.split(",")
    recreate_topics(args.kafka, {f"bench-{w}": (1 if w == "w2" else 2) for w in todo})
    inputs = {}
    if "w1" in todo:
        write_kafka(args.kafka, "bench-w1", generate_args=[
            "--preset", "nexmark-bids", "--seed", "1", "--rows", str(args.rows)])
    disorder = 0
    if "w2" in todo:
        fl = flights(args.flights_file, args.flights)
        write_kafka(args.kafka, "bench-w2", ipc(fl))
        # The watermark delay: the largest lag of a row behind the latest date before it.
        con0 = duckdb.connect()
        con0.register("fl", fl)
        disorder = con0.sql(
            "SELECT coalesce(max(epoch(m) - epoch(date)), 0)::BIGINT FROM (SELECT date, "
            "max(date) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS m FROM "
            "(SELECT date, row_number() OVER () AS i FROM fl))").fetchall()[0][0]
    if "w3" in todo:
        write_kafka(args.kafka, "bench-w3", ipc(events(args.rows)))
    con = duckdb.connect()
    con.sql("SET TimeZone = 'UTC'")
    env = dict(os.environ, BENCH_KAFKA=args.kafka, BENCH_WATERMARK_DELAY=f"{disorder}s")
    with tempfile.TemporaryDirectory(prefix="flink-e2e-") as tmp:
        for w in todo:
            outdir = os.path.join(tmp, w)
            t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
            log = os.path.join(tmp, f"{w}.log")
            with open(log, "w") as err:
                rc = subprocess.run([os.path.join(ROOT, "scripts", "bench", "flink.sh"), w, outdir],
                                    env=dict(env, BENCH_TOPIC=f"bench-{w}"), stderr=err).returncode
            if rc != 0:
                with open(log) as err:
                    sys.stderr.write("".join(err.readlines()[-30:]))
                fail(f"scripts/bench/flink.sh {w} exited {rc}")
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            print(f"{w}: flink.sh took {time.monotonic() - t0:.1f}s wall, {cpu:.1f} CPU-s "
                  f"(user+sys of it and its JVM), max RSS {r1.ru_maxrss / 1e6:.2f} GB "
                  f"(largest child so far)")
            inputs[w] = read_topic(args.kafka, f"bench-{w}")
            check(con, w, outdir, inputs[w])
    print("flink_e2e: all OK")


if __name__ == "__main__":
    main()
