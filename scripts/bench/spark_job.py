"""The Spark Structured Streaming jobs of make bench (scripts/bench/spark.sh; BENCH_SPEC in run.sh).

    python spark_job.py w1|w2|w3 OUTDIR
    python spark_job.py startup -      (W0: start and stop the session only)

pyspark local[2] (scripts/py/spark_delta.py: UI off, loopback, 2 shuffle partitions, session
time zone UTC) with the Kafka source (spark-sql-kafka-0-10 from .it/spark-kafka-jars, see
scripts/peers.sh spark-kafka) and the Delta sink, trigger(availableNow=True), the checkpoint in
OUTDIR/checkpoint and the table in OUTDIR/table, or in the bucket table BENCH_TABLE_URL
(s3://bucket/path, written as s3a:// through hadoop-aws with spark_delta.session(s3=True)'s
settings from the AWS_* environment; the checkpoint stays local). Environment: BENCH_KAFKA, BENCH_TOPIC,
BENCH_WATERMARK_DELAY (W2, Go-style seconds such as "60s"), BENCH_SPARK_DRIVER_MEMORY (2g),
BENCH_SPARK_MAX_OFFSETS (W3 maxOffsetsPerTrigger, default 1000000: with one micro-batch the
watermark cannot expire dedup state inside it, so all ids would be held at once).
"""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts", "py"))

import spark_delta  # noqa: E402


def kafka_jars():
    """spark-sql-kafka's Maven closure minus the jars pyspark ships."""
    import pyspark

    d = os.path.join(ROOT, ".it", "spark-kafka-jars")
    jars = sorted(glob.glob(os.path.join(d, "*.jar")))
    if not any(os.path.basename(j).startswith("spark-sql-kafka-0-10_") for j in jars):
        raise RuntimeError(f"no spark-sql-kafka jar in {d}; run scripts/peers.sh spark-kafka")
    shipped = {spark_delta._artifact(j) for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar"))}
    return [j for j in jars if spark_delta._artifact(j) not in shipped]


def s3a(uri):
    """s3a:// for s3:// (Hadoop's S3A file system)."""
    return "s3a://" + uri[len("s3://"):] if uri.startswith("s3://") else uri


def main():
    w, out = sys.argv[1], sys.argv[2]
    from pyspark.sql import functions as F

    table_url = os.environ.get("BENCH_TABLE_URL", "")
    spark = spark_delta.session(app_name=f"streamkit-bench-{w}", s3=bool(table_url), extra_conf={
        "spark.jars": ",".join(spark_delta.delta_jars() + kafka_jars()),
        "spark.driver.memory": os.environ.get("BENCH_SPARK_DRIVER_MEMORY", "2g"),
    })
    if w == "startup":  # W0: the fixed cost of a session (JVM, jars, Delta), no job
        spark.stop()
        return
    src = (spark.readStream.format("kafka")
           .option("kafka.bootstrap.servers", os.environ["BENCH_KAFKA"])
           .option("subscribe", os.environ["BENCH_TOPIC"])
           .option("startingOffsets", "earliest"))
    if w == "w3":
        src = src.option("maxOffsetsPerTrigger", os.environ.get("BENCH_SPARK_MAX_OFFSETS", "1000000"))
    raw = src.load()
    value = F.col("value").cast("string")
    if w == "w1":
        schema = ("auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
                  "date_time TIMESTAMP, extra STRING")
        df = raw.select(F.from_json(value, schema).alias("v"), "partition", "offset").select("v.*", "partition", "offset")
    elif w == "w2":
        delay = os.environ["BENCH_WATERMARK_DELAY"]
        assert delay.endswith("s"), delay
        schema = "date TIMESTAMP, delay INT, distance INT, origin STRING, destination STRING"
        df = (raw.select(F.from_json(value, schema).alias("v")).select("v.*")
              .withWatermark("date", f"{int(delay[:-1])} seconds")
              .groupBy(F.window("date", "1 hour"), "origin")
              .agg(F.count(F.lit(1)).alias("flights"), F.sum("delay").alias("total_delay"),
                   F.max("distance").alias("max_distance"))
              .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                      "origin", "flights", "total_delay", "max_distance"))
    elif w == "w3":
        schema = "id STRING, ts TIMESTAMP, payload STRING"
        df = (raw.select(F.from_json(value, schema).alias("v")).select("v.*")
              .withWatermark("ts", "10 minutes")
              .dropDuplicatesWithinWatermark(["id"]))
    else:
        sys.exit(f"spark_job.py: unknown workload {w}")
    q = (df.writeStream.format("delta").outputMode("append")
         .option("checkpointLocation", os.path.join(out, "checkpoint"))
         .trigger(availableNow=True)
         .start(s3a(table_url) if table_url else os.path.join(out, "table")))
    q.awaitTermination()
    batches = len(q.recentProgress)
    spark.stop()
    print(f"spark {w}: {batches} micro-batches", file=sys.stderr)


if __name__ == "__main__":
    main()
