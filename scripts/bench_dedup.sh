#!/usr/bin/env bash
# dedup throughput figures (issue #6): one `streamkit dedup` against
# `streamkit keyby id --shards 2 -- dedup`, both over the same pre-generated input file (the
# source is excluded): N rows with 16-byte binary ids (uuid), half of them duplicates, so about
# N/2 distinct keys end up resident in state (default N = 20M: 10M keys).
#
#   scripts/bench_dedup.sh [N] [RUNS]     (default 20000000 rows, 3 runs of each, alternating)
#
# For every run it prints wall seconds, CPU seconds (user + system, children included: the
# shards), max RSS, records/s and records per CPU-second; then the best wall time of each and
# their ratio, and the CPU ratio. The machine may be shared: the CPU figures are the stable
# ones. Wall times on a busy machine favour the sharded run (the scheduler shares CPU per
# process, and it has three), so the ratio to trust is the CPU one: on two idle cores the
# sharded stage can be at most 2 × cpu(dedup) / cpu(sharded) times as fast. One dedup's wall
# time varies most from run to run (1.8 to 2.6 s on the 2-core machine): medians are printed
# too. The halves run with GOGC=200, as keyby runs its streamkit shards (ShardGOGC). NICE=-19 runs the
# measured commands at that priority (root; it helps only against work in the same cgroup).
# WORK=dir keeps the input (and reuses it) between invocations.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-20000000}"
RUNS="${2:-3}"
WORK="${WORK:-}"
if [ -z "$WORK" ]; then
	WORK="$(mktemp -d)"
	trap 'rm -rf "$WORK"' EXIT
fi
BIN="$WORK/streamkit"
(cd "$ROOT" && go build -o "$BIN" ./cmd/streamkit)
IN="$WORK/dedup-$N.arrow"
if [ ! -s "$IN" ]; then
	"$BIN" generate --schema 'id binary, v bigint' --gen id=uuid --gen v=sequence \
		--duplicates 0.5 --rows "$N" >"$IN"
fi
echo "input: $N rows, $(du -m "$IN" | cut -f1) MB; $(nproc) cores; nice ${NICE:-0}; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME CMD...: one timed run over the input; appends "name wall cpu" to $WORK/times.
run() {
	local name="$1"
	shift
	nice -n "${NICE:-0}" /usr/bin/time -o "$WORK/time" -f '%e %U %S %M' "$@" <"$IN" >/dev/null 2>"$WORK/stderr" || {
		cat "$WORK/stderr" >&2
		return 1
	}
	read -r wall user sys rss <"$WORK/time"
	local keys
	keys="$(grep -o 'keys=[0-9]*' "$WORK/stderr" | cut -d= -f2 | paste -sd+ | bc)"
	awk -v n="$N" -v name="$name" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v k="$keys" 'BEGIN {
		c = u + s
		printf "%-26s wall %6.2f s  cpu %6.2f s  rss %5d MB  %5.2f M records/s  %5.2f M records/cpu-s  keys %d\n",
			name, w, c, m / 1024, n / w / 1e6, n / c / 1e6, k
	}'
	echo "$name $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" >>"$WORK/times"
}

: >"$WORK/times"
HALF="$WORK/dedup-$N.half"
if [ ! -s "$HALF-1.arrow" ]; then
	# shellcheck disable=SC2016 # expanded by the shard's shell
	"$BIN" keyby id --shards 2 -- sh -c 'cat >"$0-$STREAMKIT_SHARD.arrow"' "$HALF" <"$IN" >/dev/null
fi
export BIN HALF
for _ in $(seq "$RUNS"); do
	run dedup "$BIN" dedup --key id
	run "keyby --shards 2 -- dedup" "$BIN" keyby id --shards 2 -- dedup
	# shellcheck disable=SC2016 # expanded by the inner shell
	# The shards' GOGC, as keyby gives its streamkit children (ShardGOGC).
	run "halves (no keyby)" sh -c 'GOGC=${GOGC:-200}; export GOGC; "$BIN" dedup --key id <"$HALF-0.arrow" & "$BIN" dedup --key id <"$HALF-1.arrow"; wait'
done
awk -v n="$N" '
	function median(name,   k, i, j, t, a) {
		k = 0
		for (i = 1; i <= cnt[name]; i++) a[++k] = walls[name, i]
		for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return (k % 2) ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
	}
	{ name = ($1 == "dedup") ? "dedup" : ($1 == "halves") ? "halves" : "sharded"; wall = $(NF-1); cpu = $NF
	  walls[name, ++cnt[name]] = wall
	  if (!(name in best) || wall < best[name]) best[name] = wall
	  if (!(name in bcpu) || cpu < bcpu[name]) bcpu[name] = cpu }
	END {
		printf "median wall: dedup %.2f s, keyby --shards 2 -- dedup %.2f s: %.2fx; halves %.2f s: %.2fx\n",
			median("dedup"), median("sharded"), median("dedup") / median("sharded"), median("halves"), median("dedup") / median("halves")
		printf "best wall: dedup %.2f s (%.2f M records/s), keyby --shards 2 -- dedup %.2f s (%.2f M records/s): %.2fx\n",
			best["dedup"], n / best["dedup"] / 1e6, best["sharded"], n / best["sharded"] / 1e6, best["dedup"] / best["sharded"]
		printf "least cpu: dedup %.2f s, sharded %.2f s (%.2fx the CPU of one dedup; on 2 idle cores at most %.2fx its throughput)\n",
			bcpu["dedup"], bcpu["sharded"], bcpu["sharded"] / bcpu["dedup"], 2 * bcpu["dedup"] / bcpu["sharded"]
		printf "ceiling (two dedups over pre-split halves side by side, no keyby): best wall %.2f s, %.2fx one dedup; keyby --shards 2 reaches %.0f%% of it\n",
			best["halves"], best["dedup"] / best["halves"], 100 * best["halves"] / best["sharded"]
	}' "$WORK/times"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
