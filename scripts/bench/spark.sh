#!/usr/bin/env bash
# make bench engine: Spark Structured Streaming (pyspark local[2], Kafka source, Delta sink,
# trigger(availableNow=True)), into OUTDIR/table or the bucket table BENCH_TABLE_URL (s3a://);
# the jobs are in spark_job.py. Interface: BENCH_SPEC in run.sh.
#   scripts/bench/spark.sh w1|w2|w3 OUTDIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${BENCH_PYTHON:-$ROOT/.venv/bin/python}"
case "${1:-}" in w1|w2|w3) ;; *) echo "usage: spark.sh w1|w2|w3 OUTDIR" >&2; exit 2 ;; esac
[[ -n "${2:-}" ]] || { echo "usage: spark.sh w1|w2|w3 OUTDIR" >&2; exit 2; }
"$PY" -c 'import pyspark, delta' 2>/dev/null || { echo "pyspark/delta-spark not in $PY (scripts/peers.sh spark)" >&2; exit 3; }
ls "$ROOT"/.it/spark-kafka-jars/spark-sql-kafka-0-10_*.jar >/dev/null 2>&1 \
  || { echo "no spark-sql-kafka jars in .it/spark-kafka-jars (scripts/peers.sh spark-kafka)" >&2; exit 3; }
if [[ -n "${BENCH_TABLE_URL:-}" ]]; then
  ls "$ROOT"/.it/spark-s3-jars/hadoop-aws-*.jar >/dev/null 2>&1 \
    || { echo "no hadoop-aws jars in .it/spark-s3-jars (scripts/peers.sh spark)" >&2; exit 3; }
fi
command -v java >/dev/null || { echo "no java on PATH" >&2; exit 3; }
mkdir -p "$2"
exec "$PY" "$HERE/spark_job.py" "$1" "$2"
