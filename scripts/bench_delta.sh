#!/usr/bin/env bash
# write-delta throughput against delta-rs (issue #5): Arrow → Delta for the flights schema
# (date timestamp, delay, distance, origin, destination; vega-datasets flights-3m, repeated when
# N exceeds its 3M rows), the same Arrow IPC file for both sides:
#
#   streamkit write-delta T <flights.arrows      whole process: reads the Arrow IPC stream from
#                                                 stdin (epochs of 1Mi rows, one commit each),
#                                                 encodes, fsyncs files and commits
#   delta_bench.py deltars T flights.arrows       deltalake.write_deltalake (delta-rs) on the
#                                                 same rows held in memory: "write" is the call
#                                                 alone (as the delta-rs user pays it), "proc" the
#                                                 whole Python process (start-up, import, read)
#
#   scripts/bench_delta.sh [N] [RUNS]     (default 3000000 rows, 5 runs of each, alternating)
#
# Both write Snappy-compressed, dictionary-encoded Parquet with column statistics (the script
# prints the file count, bytes and row groups of each table). For every run it prints wall
# seconds, CPU seconds (user + system, all threads) and rows/s, rows per CPU-second; then the
# medians and the ratios streamkit ÷ delta-rs (> 1: streamkit is faster). The machine may be
# shared: the CPU figures are the stable ones.
#
# Then the commit overhead per epoch: EPOCHS epochs (default 200) of 100 rows each through one
# write-delta process with a checkpoint directory (exactly-once markers, a classic checkpoint
# every 10 commits), divided by the number of epochs (process start-up included).
#
# WORK=dir keeps the input (and reuses it) between invocations; FLIGHTS=path overrides the
# flights-3m.parquet location (default: the vega cache of internal/peertest, .cache/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-3000000}"
RUNS="${2:-5}"
EPOCHS="${EPOCHS:-200}"
WORK="${WORK:-}"
PY="${STREAMKIT_PYTHON:-$ROOT/.venv/bin/python}"
BENCH="$ROOT/scripts/py/delta_bench.py"
FLIGHTS="${FLIGHTS:-$ROOT/.cache/vega-datasets-3.2.1/data/flights-3m.parquet}"
if [ -z "$WORK" ]; then
	WORK="$(mktemp -d)"
	trap 'rm -rf "$WORK"' EXIT
fi
if [ ! -s "$FLIGHTS" ]; then
	# The Go test helper fetches and caches vega-datasets (npm pack) on first use.
	(cd "$ROOT" && STREAMKIT_REQUIRE_PEERS=1 go test -count=1 -run '^$' -bench 'WriteDeltaVsDeltaRS' -benchtime 1x \
		./tools/writedelta >/dev/null) || true
fi
[ -s "$FLIGHTS" ] || {
	echo "bench_delta.sh: $FLIGHTS missing (set FLIGHTS=.../flights-3m.parquet)" >&2
	exit 1
}
BIN="$WORK/streamkit"
(cd "$ROOT" && go build -o "$BIN" ./cmd/streamkit)
IN="$WORK/flights-$N.arrows"
[ -s "$IN" ] || "$PY" "$BENCH" prepare "$IN" --rows "$N" --source "$FLIGHTS" >/dev/null
echo "input: $N rows of flights-3m, $(du -m "$IN" | cut -f1) MB Arrow IPC; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" -c 'import deltalake, pyarrow; print("delta-rs", deltalake.__version__, "pyarrow", pyarrow.__version__)'

# tableinfo DIR: data files, bytes, row groups, rows per row group.
tableinfo() {
	"$PY" - "$1" <<'EOF'
import glob, os, sys
import pyarrow.parquet as pq
files = sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.parquet"), recursive=True))
rgs = sum(pq.ParquetFile(f).metadata.num_row_groups for f in files)
rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
print(f"{len(files)} files, {sum(os.path.getsize(f) for f in files) / 1e6:.1f} MB, {rgs} row groups of {rows // max(rgs, 1)} rows on average")
EOF
}

: >"$WORK/times"
for i in $(seq "$RUNS"); do
	rm -rf "$WORK/sk" "$WORK/rs"
	/usr/bin/time -o "$WORK/time" -f '%e %U %S' "$BIN" --progress off write-delta "$WORK/sk" <"$IN" 2>"$WORK/stderr" || {
		cat "$WORK/stderr" >&2
		exit 1
	}
	read -r wall user sys <"$WORK/time"
	echo "streamkit $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" >>"$WORK/times"
	/usr/bin/time -o "$WORK/time" -f '%e %U %S' "$PY" "$BENCH" deltars "$WORK/rs" "$IN" >"$WORK/rs.json"
	read -r wall user sys <"$WORK/time"
	echo "deltars-proc $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" >>"$WORK/times"
	"$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print("deltars-write", r["seconds"], r["cpu_seconds"])' "$WORK/rs.json" >>"$WORK/times"
	tail -n 3 "$WORK/times" | awk -v n="$N" -v i="$i" '{
		printf "run %d %-14s wall %6.3f s  cpu %6.3f s  %6.2f M rows/s  %6.2f M rows/cpu-s\n", i, $1, $2, $3, n / $2 / 1e6, n / $3 / 1e6 }'
done
echo "streamkit table: $(tableinfo "$WORK/sk")"
echo "delta-rs table:  $(tableinfo "$WORK/rs")"
awk -v n="$N" '
	function median(a, k,   i, j, t) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	{ k[$1]++; w[$1, k[$1]] = $2; c[$1, k[$1]] = $3 }
	END {
		split("streamkit deltars-write deltars-proc", names, " ")
		for (x = 1; x <= 3; x++) {
			name = names[x]
			for (i = 1; i <= k[name]; i++) { ww[i] = w[name, i]; cc[i] = c[name, i] }
			mw[name] = median(ww, k[name]); mc[name] = median(cc, k[name])
			printf "median %-14s wall %6.3f s  cpu %6.3f s  %6.2f M rows/s  %6.2f M rows/cpu-s\n",
				name, mw[name], mc[name], n / mw[name] / 1e6, n / mc[name] / 1e6
		}
		printf "streamkit / delta-rs write_deltalake call: %.2fx rows/s (wall), %.2fx rows per CPU-second\n",
			mw["deltars-write"] / mw["streamkit"], mc["deltars-write"] / mc["streamkit"]
		printf "streamkit / delta-rs whole process:        %.2fx rows/s (wall), %.2fx rows per CPU-second\n",
			mw["deltars-proc"] / mw["streamkit"], mc["deltars-proc"] / mc["streamkit"]
	}' "$WORK/times"

# Commit overhead: EPOCHS epochs of 100 rows, one process, exactly-once checkpoint markers.
SMALL="$WORK/small-$EPOCHS.arrows"
[ -s "$SMALL" ] || "$PY" "$BENCH" prepare "$SMALL" --rows $((EPOCHS * 100)) --epoch-rows 100 --batch-rows 100 --source "$FLIGHTS" >/dev/null
for i in 1 2 3; do
	rm -rf "$WORK/small" "$WORK/ck"
	/usr/bin/time -o "$WORK/time" -f '%e %U %S' "$BIN" --progress off write-delta "$WORK/small" --checkpoint "$WORK/ck" <"$SMALL" 2>"$WORK/stderr" || {
		cat "$WORK/stderr" >&2
		exit 1
	}
	read -r wall user sys <"$WORK/time"
	awk -v e="$EPOCHS" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN {
		printf "commit overhead: %d epochs of 100 rows in %.2f s: %.1f ms/epoch wall, %.1f ms CPU/epoch\n", e, w, w * 1000 / e, (u + s) * 1000 / e }'
done
echo "versions: $(ls "$WORK/small/_delta_log" | grep -c '\.json$') commits; load average $(cut -d' ' -f1-3 /proc/loadavg)"
