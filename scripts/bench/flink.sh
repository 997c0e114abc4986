#!/usr/bin/env bash
# The Flink engine of make bench (BENCH_SPEC.md engine interface):
#
#   scripts/bench/flink.sh <w1|w2|w3> <OUTDIR>
#
# Runs scripts/bench/flink_job.py with PyFlink 2.3 in a local mini-cluster (parallelism 2,
# streaming mode, checkpoint every 10 s to files): bounded Kafka source (earliest to the latest offsets
# at start, JSON values) -> Parquet files in OUTDIR (filesystem connector). See
# scripts/bench/README-flink.md for what each workload runs and how it differs.
#
# Environment: BENCH_KAFKA (required), BENCH_TOPIC (default bench-<workload>),
# BENCH_WATERMARK_DELAY (w2, required), BENCH_PARTITIONS (unused: the Kafka source reads every
# partition; parallelism stays 2). Tuning: FLINK_PARALLELISM (2), FLINK_CHECKPOINT_INTERVAL
# ("10 s"), FLINK_STATE_TTL (w3, "10 min"), FLINK_STATE_BACKEND (hashmap for w1/w2, rocksdb
# for w3), FLINK_W3_ORDER (rowtime or proctime), FLINK_JVM_ARGS (extra JVM options).
#
# Installs on first use with scripts/bench/flink_setup.sh (milliseconds once installed; run it
# before timing). Exit 3 with one line on stderr: Flink is not available on this machine.
# OUTDIR must be absent or empty (the filesystem sink appends to what is there).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
IT="$ROOT/.it"

die() { printf 'flink.sh: %s\n' "$*" >&2; exit 1; }

[[ $# -eq 2 ]] || { printf 'usage: %s <w1|w2|w3> <OUTDIR>\n' "$0" >&2; exit 2; }
workload="$1" outdir="$2"
case "$workload" in w1|w2|w3) ;; *) printf 'flink.sh: unknown workload %q (want w1, w2 or w3)\n' "$workload" >&2; exit 2 ;; esac
[[ -n "${BENCH_KAFKA:-}" ]] || die "BENCH_KAFKA is not set (Kafka bootstrap, e.g. 127.0.0.1:29092)"
if [[ -e "$outdir" ]] && [[ -n "$(ls -A "$outdir")" ]]; then
  die "OUTDIR $outdir is not empty (the Parquet sink would add to it)"
fi

# Install (or check the stamp); its exit 3 and one-line reason pass through.
"$ROOT/scripts/bench/flink_setup.sh"

jars=""
for j in "$IT"/flink-jars/*.jar; do jars+="$j;"; done
mkdir -p "$outdir" "$IT/flink-logs" "$IT/flink-checkpoints"
export FLINK_JARS="${jars%;}"
export FLINK_LOG_DIR="$IT/flink-logs"
export FLINK_CHECKPOINT_ROOT="$IT/flink-checkpoints"
export JVM_ARGS="-Duser.timezone=UTC ${FLINK_JVM_ARGS:-}"
export BENCH_TOPIC="${BENCH_TOPIC:-bench-$workload}"
exec "$IT/flink-venv/bin/python" "$ROOT/scripts/bench/flink_job.py" "$workload" "$outdir"
