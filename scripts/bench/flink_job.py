"""PyFlink Table API/SQL job of make bench (issue #11, docs in scripts/bench/README-flink.md).

    flink_job.py <w1|w2|w3|smoke> <OUTDIR>

Runs one workload of BENCH_SPEC.md in a local mini-cluster (parallelism 2, streaming mode):
a bounded Kafka source (earliest offsets up to the latest offsets at start, JSON values)
into a filesystem sink writing Parquet under OUTDIR. The job ends by itself when the source
reaches the end offsets; the sink's files are committed by the final checkpoint Flink takes
when the tasks finish (execution.checkpointing.checkpoints-after-tasks-finish, on by default).

Environment (as scripts/bench/flink.sh passes it):
  BENCH_KAFKA             bootstrap servers, e.g. 127.0.0.1:29092 (required)
  BENCH_TOPIC             the workload's topic (default bench-w1/-w2/-w3)
  BENCH_WATERMARK_DELAY   W2 watermark delay, e.g. "3h", "90m", "45s", "1h30m" (required for w2)
  FLINK_JARS              ';'-separated jar paths for pipeline.jars (Kafka connector, Parquet
                          format, Hadoop client; flink.sh lists .it/flink-jars)
  FLINK_PARALLELISM       default 2
  FLINK_CHECKPOINT_INTERVAL  default "10 s" (files are committed on each checkpoint)
  FLINK_STATE_BACKEND     hashmap (state on the JVM heap; default for w1, w2) or rocksdb
                          (incremental checkpoints; default for w3)
  FLINK_CHECKPOINT_ROOT   where the run's checkpoint directory is made (default: $TMPDIR)
  FLINK_STATE_TTL         W3 state TTL, default "10 min" (table.exec.state.ttl)
  FLINK_W3_ORDER          W3 deduplication order: proctime (default, first arrival) or
                          rowtime (event time ts with a 10-minute watermark)

Output columns (Parquet types written; timestamps INT64 TIMESTAMP(MICROS, isAdjustedToUTC=false)
holding UTC wall-clock values, so readers see a zone-less timestamp to read as UTC):
  w1: auction, bidder, price (int64), channel, url (string), date_time (timestamp µs UTC),
      extra (string), partition (int32), offset (int64)
  w2: window_start, window_end (timestamp µs UTC), origin (string), flights, total_delay,
      max_distance (int64)
  w3: id (string), ts (timestamp µs UTC), payload (string)
"""

import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback

import pyflink.java_gateway
from pyflink.table import EnvironmentSettings, TableEnvironment

WORKLOADS = ("w1", "w2", "w3", "smoke")


def die(msg, code=1):
    print(f"flink_job: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_duration(text):
    """Go-style duration ("3h", "90m", "1h30m", "45s", "500ms") -> seconds (float)."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6}
    if text.strip() == "0":
        return 0.0
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|µs|h|m|s)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        die(f"BENCH_WATERMARK_DELAY={text!r}: not a duration like 3h, 90m, 1h30m, 45s")
    return sum(float(n) * units[u] for n, u in parts)


def day_to_second(seconds):
    """Seconds -> a Flink SQL INTERVAL literal (DAY TO SECOND, millisecond precision: the
    watermark expression must stay TIMESTAMP_LTZ(3))."""
    millis = round(seconds * 1000)
    days, rem = divmod(millis, 86400 * 1000)
    if days > 99:
        die(f"watermark delay {seconds}s is over 99 days")
    hours, rem = divmod(rem, 3600 * 1000)
    minutes, rem = divmod(rem, 60 * 1000)
    secs, frac = divmod(rem, 1000)
    return f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{secs:02d}.{frac:03d}' DAY TO SECOND(3)"


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def kafka_source(name, topic, bootstrap, columns, extra=""):
    """DDL of a bounded Kafka source table with JSON values."""
    return f"""
CREATE TEMPORARY TABLE {name} (
{columns}{extra}
) WITH (
  'connector' = 'kafka',
  'topic' = {quote(topic)},
  'properties.bootstrap.servers' = {quote(bootstrap)},
  'properties.group.id' = 'streamkit-bench-flink',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json',
  'json.timestamp-format.standard' = 'ISO-8601',
  'json.fail-on-missing-field' = 'true',
  'json.ignore-parse-errors' = 'false'
)"""


def parquet_sink(name, outdir, columns):
    """DDL of a filesystem sink writing Parquet, timestamps as INT64 micros (UTC)."""
    return f"""
CREATE TEMPORARY TABLE {name} (
{columns}
) WITH (
  'connector' = 'filesystem',
  'path' = {quote('file://' + os.path.abspath(outdir))},
  'format' = 'parquet',
  'parquet.write.int64.timestamp' = 'true',
  'parquet.timestamp.time.unit' = 'micros',
  'parquet.utc-timezone' = 'true',
  'parquet.compression' = 'SNAPPY'
)"""


def statements(workload, bootstrap, topic, outdir):
    """The DDL statements and the INSERT of one workload."""
    if workload == "w1":
        src = kafka_source("bench_src", topic, bootstrap, """  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  date_time TIMESTAMP_LTZ(6),
  extra STRING,
  `partition` INT METADATA VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL""")
        sink = parquet_sink("bench_out", outdir, """  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  date_time TIMESTAMP_LTZ(6),
  extra STRING,
  `partition` INT,
  `offset` BIGINT""")
        insert = """INSERT INTO bench_out
SELECT auction, bidder, price, channel, url, date_time, extra, `partition`, `offset` FROM bench_src"""
        return [src, sink], insert

    if workload == "w2":
        delay = os.environ.get("BENCH_WATERMARK_DELAY")
        if not delay:
            die("BENCH_WATERMARK_DELAY is not set (the W2 watermark delay, e.g. 3h)")
        # Flink counts a row late when its time is <= the watermark (Spark: < the watermark);
        # one more millisecond keeps a row exactly `delay` behind the maximum on time, so a
        # delay equal to the measured out-of-orderness drops no row, as in the other engines.
        interval = day_to_second(parse_duration(delay) + 0.001)
        # A rowtime attribute has at most millisecond precision (Flink: TIMESTAMP(p) or
        # TIMESTAMP_LTZ(p), p <= 3); the flights' dates are whole minutes.
        src = kafka_source("bench_src", topic, bootstrap, """  `date` TIMESTAMP_LTZ(3),
  delay BIGINT,
  distance BIGINT,
  origin STRING,
  destination STRING""", f""",
  WATERMARK FOR `date` AS `date` - {interval}""")
        sink = parquet_sink("bench_out", outdir, """  window_start TIMESTAMP_LTZ(6),
  window_end TIMESTAMP_LTZ(6),
  origin STRING,
  flights BIGINT,
  total_delay BIGINT,
  max_distance BIGINT""")
        # window_start/_end are TIMESTAMP(3) wall-clock values in the session time zone (UTC,
        # set below); CAST to TIMESTAMP_LTZ reads them in that zone.
        insert = """INSERT INTO bench_out
SELECT CAST(window_start AS TIMESTAMP_LTZ(6)), CAST(window_end AS TIMESTAMP_LTZ(6)), origin,
       COUNT(*), SUM(delay), MAX(distance)
FROM TABLE(TUMBLE(TABLE bench_src, DESCRIPTOR(`date`), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, origin"""
        return [src, sink], insert

    if workload == "smoke":
        # flink_setup.sh's check: the Kafka factory must load (planning only, no broker is
        # contacted) and a bounded streaming job must commit its Parquet files at the end.
        src = kafka_source("bench_src", topic, bootstrap, "  id STRING,\n  ts TIMESTAMP_LTZ(6)")
        sink = parquet_sink("bench_out", outdir, "  id STRING,\n  ts TIMESTAMP_LTZ(6)")
        return [src, sink], ("INSERT INTO bench_out SELECT * FROM bench_src", SMOKE_INSERT)

    # w3: deduplication keeping the first row per id (Flink's "Deduplication" query pattern).
    # proctime (default): ORDER BY PROCTIME(), the first arrival of each id, emitted at once
    # (insert-only Deduplicate(keep=FirstRow, order=PROCTIME)); the first arrival is what
    # Spark's dropDuplicatesWithinWatermark keeps too. rowtime: ORDER BY the event time ts (as
    # a millisecond rowtime attribute, Flink's limit) with a 10-minute watermark; Flink 2.3
    # plans it insert-only too, buffers each row until the watermark passes it and drops
    # events later than the watermark, at about twice the CPU (timers per row). Either way an
    # id's "seen" state lives table.exec.state.ttl of processing time, not 10 minutes of event
    # time: Flink has no event-time TTL for this state.
    order = os.environ.get("FLINK_W3_ORDER", "proctime")
    if order == "rowtime":
        extra_col, watermark, order_by = (
            "  rt AS CAST(ts AS TIMESTAMP_LTZ(3))",
            ",\n  WATERMARK FOR rt AS rt - INTERVAL '10' MINUTE", "rt")
    elif order == "proctime":
        extra_col, watermark, order_by = "  pt AS PROCTIME()", "", "pt"
    else:
        die(f"FLINK_W3_ORDER={order!r}: want rowtime or proctime")
    src = kafka_source("bench_src", topic, bootstrap, f"""  id STRING,
  ts TIMESTAMP_LTZ(6),
  payload STRING,
{extra_col}""", watermark)
    sink = parquet_sink("bench_out", outdir, """  id STRING,
  ts TIMESTAMP_LTZ(6),
  payload STRING""")
    insert = f"""INSERT INTO bench_out
SELECT id, ts, payload FROM (
  SELECT id, ts, payload, ROW_NUMBER() OVER (PARTITION BY id ORDER BY {order_by} ASC) AS rn
  FROM bench_src
) WHERE rn = 1"""
    return [src, sink], insert


class GatewayProcess:
    """Keeps the JVM that PyFlink launches (the local mini-cluster) as a waited-for child.

    PyFlink starts the JVM with Popen(stderr=PIPE) and never reads nor waits for it: its
    stderr could fill the pipe and block it, and its CPU time would be missing from the
    /usr/bin/time figures of the runner (only reaped children count). This wraps PyFlink's
    launcher to copy the JVM's stderr to ours and to wait for the JVM at the end."""

    def __init__(self):
        self.proc = None
        self._launch = pyflink.java_gateway.launch_gateway_server_process
        pyflink.java_gateway.launch_gateway_server_process = self._launched

    def _launched(self, env, args):
        self.proc = self._launch(env, args)
        threading.Thread(target=self._drain, daemon=True).start()
        return self.proc

    def _drain(self):
        for line in iter(self.proc.stderr.readline, b""):
            sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()

    def stop(self, timeout=60):
        """Closes the JVM's stdin (PythonGatewayServer exits on it) and waits for it."""
        if self.proc is None:
            return
        try:
            pyflink.java_gateway.get_gateway().shutdown()
            self.proc.stdin.close()
        except Exception as e:  # the JVM is gone already: nothing left to shut down
            print(f"flink_job: gateway shutdown: {e}", file=sys.stderr)
        try:
            self.proc.wait(timeout)
        except Exception:
            self.proc.kill()
            self.proc.wait()


SMOKE_ROWS = [("a", "2024-01-01 00:00:00.000001"), ("b", "2024-01-01 12:34:56.789012")]
SMOKE_INSERT = "INSERT INTO bench_out VALUES " + ", ".join(
    f"('{i}', CAST(TIMESTAMP '{ts}' AS TIMESTAMP_LTZ(6)))" for i, ts in SMOKE_ROWS)


def check_smoke(outdir):
    """Reads the smoke job's Parquet files back: every row, UTC microsecond timestamps."""
    import datetime as dt
    import glob

    import pyarrow.parquet as pq

    files = [f for f in glob.glob(os.path.join(outdir, "*")) if not os.path.basename(f).startswith(".")]
    if not files:
        die(f"smoke: no committed Parquet file in {outdir}: {os.listdir(outdir)}")
    rows = sorted(r for f in files for r in zip(*pq.read_table(f).to_pydict().values()))
    want = [(i, dt.datetime.fromisoformat(ts)) for i, ts in SMOKE_ROWS]
    if rows != want:
        die(f"smoke: read back {rows}, want {want}")
    print(f"flink_job: smoke: {len(rows)} rows read back from {len(files)} Parquet file(s)", file=sys.stderr)


def main(argv):
    if len(argv) != 3 or argv[1] not in WORKLOADS:
        die("usage: flink_job.py <w1|w2|w3|smoke> <OUTDIR>", 2)
    workload, outdir = argv[1], argv[2]
    bootstrap = os.environ.get("BENCH_KAFKA") or ("127.0.0.1:1" if workload == "smoke" else "")
    if not bootstrap:
        die("BENCH_KAFKA is not set (Kafka bootstrap servers, e.g. 127.0.0.1:29092)")
    topic = os.environ.get("BENCH_TOPIC") or f"bench-{workload}"
    jars = [j for j in os.environ.get("FLINK_JARS", "").split(";") if j]

    jvm = GatewayProcess()
    ckpt = None
    try:
        env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        conf = env.get_config()
        if jars:
            conf.set("pipeline.jars", ";".join("file://" + os.path.abspath(j) for j in jars))
        conf.set("parallelism.default", os.environ.get("FLINK_PARALLELISM", "2"))
        conf.set("table.local-time-zone", "UTC")
        conf.set("execution.checkpointing.interval",
                 os.environ.get("FLINK_CHECKPOINT_INTERVAL", "10 s"))
        # Checkpoints go to files (the default JobManager storage refuses state over 5 MB),
        # in a directory of this run removed at the end; a failure fails the job (the default
        # restart strategy would retry forever).
        ckpt = tempfile.mkdtemp(prefix="flink-ckpt-", dir=os.environ.get("FLINK_CHECKPOINT_ROOT"))
        conf.set("execution.checkpointing.storage", "filesystem")
        conf.set("execution.checkpointing.dir", "file://" + os.path.abspath(ckpt))
        conf.set("restart-strategy.type", "disable")
        # W3 keeps one entry per id (10-20M): RocksDB with incremental checkpoints; on the heap
        # (hashmap) 5M events took 6 GB of RSS and every checkpoint rewrote the whole state,
        # for about the same CPU as RocksDB with proctime order.
        backend = os.environ.get("FLINK_STATE_BACKEND") or ("rocksdb" if workload == "w3" else "hashmap")
        conf.set("state.backend.type", backend)
        if backend != "hashmap":
            conf.set("execution.checkpointing.incremental", "true")
        if workload == "w3":
            conf.set("table.exec.state.ttl", os.environ.get("FLINK_STATE_TTL", "10 min"))

        ddl, insert = statements(workload, bootstrap, topic, outdir)
        for stmt in ddl:
            env.execute_sql(stmt)
        if workload == "smoke":
            plan, insert = insert
            env.explain_sql(plan)
        else:
            print(f"flink_job: {workload}: plan\n{env.explain_sql(insert)}", file=sys.stderr)
        t0 = time.monotonic()
        env.execute_sql(insert).wait()
        print(f"flink_job: {workload}: job finished in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        if workload == "smoke":
            check_smoke(outdir)
    except Exception:
        # Format the error while the JVM is still there (py4j asks it for the Java stack).
        traceback.print_exc()
        jvm.stop()
        if ckpt:
            shutil.rmtree(ckpt, ignore_errors=True)
        die(f"{workload}: the Flink job failed (error above)")
    jvm.stop()
    shutil.rmtree(ckpt, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv)
