#!/usr/bin/env bash
# make bench engine: kcat -C -e -J | python deltalake (delta-rs write_deltalake in batches of
# BENCH_KCAT_BATCH rows, default 1,000,000) into OUTDIR/table, or into the bucket table
# BENCH_TABLE_URL when set; W1 only. Interface: BENCH_SPEC in run.sh.
#   scripts/bench/kcat-deltalake.sh w1 OUTDIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${BENCH_PYTHON:-$ROOT/.venv/bin/python}"
KCAT="${BENCH_KCAT:-$ROOT/.it/bin/kcat}"
[[ "${1:-}" == w1 ]] || { echo "kcat | deltalake runs W1 only (ingest); no window or dedup" >&2; exit 3; }
[[ -n "${2:-}" ]] || { echo "usage: kcat-deltalake.sh w1 OUTDIR" >&2; exit 2; }
[[ -x "$KCAT" ]] || { echo "no kcat at $KCAT (scripts/peers.sh kcat)" >&2; exit 3; }
"$PY" -c 'import deltalake' 2>/dev/null || { echo "deltalake not in $PY (scripts/peers.sh python)" >&2; exit 3; }
mkdir -p "$2"
"$KCAT" -C -b "$BENCH_KAFKA" -t "$BENCH_TOPIC" -o beginning -e -J -q -X log_level=0 \
  | "$PY" "$HERE/kcat_deltalake.py" "${BENCH_TABLE_URL:-$2/table}" "${BENCH_KCAT_BATCH:-1000000}"
