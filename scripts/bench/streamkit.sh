#!/usr/bin/env bash
# make bench engine: streamkit pipelines with checkpoints (STREAMKIT_CHECKPOINT=OUTDIR/ckpt),
# read-kafka --until now ("available now") into write-delta OUTDIR/table, or into the bucket
# table BENCH_TABLE_URL (s3://…, credentials and endpoint from the AWS_* environment) when set;
# the checkpoints stay local either way. Interface: BENCH_SPEC in run.sh.
#   scripts/bench/streamkit.sh w1|w2|w3 OUTDIR
# Environment besides the common BENCH_*: BENCH_BIN (streamkit binary, default bin/streamkit),
# BENCH_STREAMKIT_SHARDS (W3: N > 1 runs keyby id --shards N -- dedup …),
# BENCH_PROFILE_DIR (each stage writes a CPU profile <stage>.prof there, STREAMKIT_CPUPROFILE;
# keyby shards add .shard-i).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SK="${BENCH_BIN:-$ROOT/bin/streamkit}"
W="${1:-}"; OUT="${2:-}"
case "$W" in w1|w2|w3) ;; *) echo "usage: streamkit.sh w1|w2|w3 OUTDIR" >&2; exit 2 ;; esac
[[ -n "$OUT" ]] || { echo "usage: streamkit.sh w1|w2|w3 OUTDIR" >&2; exit 2; }
[[ -x "$SK" ]] || { echo "no streamkit binary at $SK (make build)" >&2; exit 3; }
mkdir -p "$OUT"
export STREAMKIT_CHECKPOINT="$OUT/ckpt"
TABLE="${BENCH_TABLE_URL:-$OUT/table}"

# sk STAGE ARGS...: one streamkit stage, profiled into $BENCH_PROFILE_DIR/STAGE.prof when set.
sk() {
  local stage="$1"; shift
  if [[ -n "${BENCH_PROFILE_DIR:-}" ]]; then
    STREAMKIT_CPUPROFILE="$BENCH_PROFILE_DIR/$stage.prof" "$SK" --progress=off "$@"
  else
    "$SK" --progress=off "$@"
  fi
}

# read_kafka SCHEMA [READ-KAFKA ARGS...]
read_kafka() { local s="$1"; shift; sk read-kafka read-kafka -b "$BENCH_KAFKA" -t "$BENCH_TOPIC" --until now --value-format json --value-schema "$s" "$@"; }

case "$W" in
w1)
  # The table's columns are Spark's select("v.*", "partition", "offset") (spark_job.py), plus
  # _rescued_data (null unless a value did not fit).
  read_kafka 'auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING' \
      --columns 'value.*,partition,offset' \
    | sk write-delta write-delta "$TABLE"
  ;;
w2)
  read_kafka 'date TIMESTAMP, delay INT, distance INT, origin STRING, destination STRING' \
    | sk window window tumbling --size 1h --time value.date --key value.origin \
        --watermark-delay "$BENCH_WATERMARK_DELAY" \
        --agg 'count as flights, sum(value.delay) as total_delay, max(value.distance) as max_distance' \
    | sk write-delta write-delta "$TABLE"
  ;;
w3)
  # The value's fields only (id, ts, payload, plus _rescued_data), the columns Spark's and
  # Flink's jobs write (spark_job.py selects "v.*"). Epochs of at most 1M records, as Spark's
  # maxOffsetsPerTrigger 1,000,000: dedup forgets expired keys at each barrier, so the epoch
  # size bounds its state. Without a cap the broker's backlog is read in epochs of 5 s, ~3.5M
  # records each, and dedup holds them all. Spark's withWatermark("ts", "10 minutes") before
  # dropDuplicatesWithinWatermark is a watermark of max ts − 10 min, below which rows are late,
  # and a key's state kept until the watermark passes its ts + 10 min: --watermark-delay 10m
  # --ttl 10m. Without the delay every row behind the newest one is late (dropped, counted).
  dedup=(dedup --key id --ttl 10m --watermark-delay 10m --event-time ts)
  if (( ${BENCH_STREAMKIT_SHARDS:-1} > 1 )); then
    read_kafka 'id STRING, ts TIMESTAMP, payload STRING' --columns 'value.*' --max-records-per-epoch 1000000 \
      | sk keyby keyby id --shards "$BENCH_STREAMKIT_SHARDS" -- "${dedup[@]}" \
      | sk write-delta write-delta "$TABLE"
  else
    read_kafka 'id STRING, ts TIMESTAMP, payload STRING' --columns 'value.*' --max-records-per-epoch 1000000 \
      | sk dedup "${dedup[@]}" \
      | sk write-delta write-delta "$TABLE"
  fi
  ;;
esac
