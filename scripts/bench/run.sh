#!/usr/bin/env bash
# make bench (issue #11): streamkit side by side with Spark Structured Streaming, kcat | delta-rs
# and (where it installs) Flink on the same data, machine and cores; writes docs/benchmarks.md.
#
#   scripts/bench/run.sh                         (make bench)
#   BENCH_SCALE=0.01 scripts/bench/run.sh        smoke test: 1% of the rows, reported in
#                                                .it/bench/benchmarks-scale-0.01.md (not docs/)
#
# Steps: install the peers (scripts/peers.sh python spark spark-kafka kafka kcat), build
# bin/streamkit, start the Kafka broker unless it runs (and stop it at the end if this script
# started it), prepare the data once (cached under .it/bench/data-<scale>-seed<seed>/; topics
# are refilled when the broker was restarted), then run every engine on every workload one after
# the other, each pinned with taskset -c 0,1 and measured by measure.py, check every output with
# DuckDB (check.py) and write the report (report.py).
#
# Workloads (BENCH_SPEC; row counts × BENCH_SCALE):
#   W0  calibration: kcat -C -e → /dev/null and streamkit read-kafka (JSON values) → /dev/null
#       over bench-w1; a Spark session's start and stop alone (its fixed cost); go test -bench of the codec pipe (BenchmarkPipeTwoProcesses) and of the
#       Parquet/Delta data-file writer alone (sink/delta BenchmarkWriteFlights/snappy)
#   W1  bench-w1 (2 partitions): 20M nexmark bids, `streamkit generate --preset nexmark-bids
#       --seed SEED | streamkit write-kafka --value-format json`, ingested into Delta
#   W2  bench-w2 (1 partition): the 3M flights of vega-datasets flights-3m.parquet in file order
#       plus a sentinel row (prep.py), `streamkit write-kafka --value-format json`; 1-hour
#       tumbling windows per origin into Delta
#   W3  bench-w3 (2 partitions): 20M events, 10% re-sends within 5 minutes (prep.py documents
#       exactly how), deduplicated by id within a 10-minute watermark into Delta
#   transform (issue #21): `streamkit filter` and `streamkit select` over one Arrow IPC stream
#       file of BENCH_TRANSFORM_ROWS rows (default 10M × BENCH_SCALE; 10 columns, prepared once
#       by transform.py prep, cached in .it/bench/transform-<rows>/) on stdin, output to
#       /dev/null, CPU-seconds of the stage process alone; the same queries in DuckDB (python,
#       over the same IPC file, result written as IPC to /dev/null) and pyspark local[2] (the
#       same rows as Parquet, written with the noop format, the query alone measured);
#       BENCH_TRANSFORM_ENGINES ("streamkit duckdb spark"); streamkit also runs `select '*'`,
#       the IPC read+write floor. No broker needed: with BENCH_WORKLOADS=transform alone the
#       run starts none and report.py rewrites only the Transform section of the report.
#   group (issue #20): W1 in consumer-group mode (read-kafka --consumer-group --progress-table
#       | write-delta) over bench-group, BENCH_GROUP_ROWS (8M) × BENCH_SCALE nexmark bids in 8
#       partitions, members started by `streamkit run --parallel N`: one member pinned to core 0
#       vs two members pinned to cores 0 and 1 (throughput ratio, CPU per 1M records), 1 to 4
#       members (per-member throughput), and the rebalance pause (revoke → assigned) median and
#       p99 with 3 members over BENCH_GROUP_CYCLES (10) leave/join cycles; scripts/bench/group.py.
#       With BENCH_WORKLOADS=group alone report.py rewrites only the Consumer groups section.
#
# Object storage (issue #19): an engine named <engine>-s3 (streamkit-s3, spark-s3,
# kcat-deltalake-s3) runs scripts/bench/<engine>.sh with BENCH_TABLE_URL=$BASE/<w>-<engine>-s3/table
# (BASE = BENCH_TABLE_URL_BASE, default s3://bench-<run time>, a bucket this script creates
# and, unless BENCH_KEEP=1, removes at the end),
# so it writes its table to the bucket while its checkpoints stay in OUTDIR; check.py reads the
# table from the bucket. With any such engine the S3 server of scripts/s3.sh is started unless
# it runs on STREAMKIT_S3_PORT (and stopped at the end if this script started it), its AWS_*
# environment exported to the engines, and W1 with streamkit-s3 also measures write-delta's
# per-epoch commit latency, median and p99, into a local table and into a bucket table
# (commit_latency.py).
#
# Engine interface: scripts/bench/<engine>.sh <w1|w2|w3> <OUTDIR> with BENCH_KAFKA,
# BENCH_TOPIC, BENCH_W2_ARROW (Arrow IPC stream file of the W2 input, sentinel included),
# BENCH_WATERMARK_DELAY (W2: whole seconds, e.g. "60s"), BENCH_PARTITIONS; output under
# OUTDIR (a Delta table, OUTDIR/table, or Parquet files); exit 3 with one line on stderr = not
# available here. Engines: streamkit, spark, kcat-deltalake (W1), flink (when
# scripts/bench/flink.sh exists; scripts/bench/flink_setup.sh, if present, installs it before
# the timed runs); W3 also runs streamkit with keyby id --shards 2.
#
# Measured per run: wall seconds, CPU-seconds (user+sys of every process of the run — the
# broker is a separate process and excluded — via a subreaper that reaps them all, so pyspark's
# JVM counts) per 1M input records, peak RSS summed over the process tree (sampled every
# 0.25 s), and the ratios to streamkit. streamkit stages write CPU profiles
# (STREAMKIT_CPUPROFILE) that the report uses to say where the time goes.
#
# Environment: BENCH_SCALE (1.0), BENCH_SEED (1), BENCH_WORKLOADS ("w0 w1 w2 w3 transform"),
# BENCH_ENGINES ("streamkit spark kcat-deltalake flink streamkit-s3 spark-s3 kcat-deltalake-s3"), BENCH_REPORT (docs/benchmarks.md at BENCH_SCALE 1, else .it/bench/benchmarks-scale-<scale>.md),
# BENCH_TABLE_URL_BASE (bucket URL of the -s3 engines' tables, see above), STREAMKIT_S3_PORT
# (the S3 server's port, 9000 as scripts/s3.sh), BENCH_COMMIT_EPOCHS (epochs of each commit
# latency run, 200), BENCH_KEEP=1 keeps the engines' output tables (default: removed once checked, they are large),
# STREAMKIT_KAFKA_PORT (broker base port, 9092 as scripts/kafka.sh), BENCH_BASELINE_BIN (a
# streamkit binary built from an earlier commit: each streamkit run is preceded by the same run
# with it, as engine streamkit-baseline, so a change is compared with its base in one run, e.g.
#   git worktree add /tmp/base <rev> && (cd /tmp/base && go build -o /tmp/sk-base ./cmd/streamkit)
#   BENCH_SCALE=0.1 BENCH_ENGINES=streamkit BENCH_BASELINE_BIN=/tmp/sk-base make bench ).
# Results of each run: .it/bench/results/<UTC time>/ (logs, measurements, checks, profiles).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HERE="$ROOT/scripts/bench"
SCALE="${BENCH_SCALE:-1.0}"
SEED="${BENCH_SEED:-1}"
WORKLOADS="${BENCH_WORKLOADS:-w0 w1 w2 w3 transform}"
ENGINES="${BENCH_ENGINES:-streamkit spark kcat-deltalake flink streamkit-s3 spark-s3 kcat-deltalake-s3}"
# Only a full-scale run rewrites the committed docs/benchmarks.md; a scaled-down one (a smoke
# test) writes .it/bench/benchmarks-scale-<BENCH_SCALE>.md, unless BENCH_REPORT names the file.
if [[ -n "${BENCH_REPORT:-}" ]]; then
  REPORT="$BENCH_REPORT"
elif awk -v s="$SCALE" 'BEGIN { exit !(s + 0 == 1) }'; then
  REPORT=docs/benchmarks.md
else
  REPORT=".it/bench/benchmarks-scale-$SCALE.md"
fi
export STREAMKIT_KAFKA_PORT="${STREAMKIT_KAFKA_PORT:-9092}"
PY="$ROOT/.venv/bin/python"
SK="$ROOT/bin/streamkit"
BASELINE="${BENCH_BASELINE_BIN:-}"
KCAT="$ROOT/.it/bin/kcat"
PIN=(taskset -c 0,1)

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

[[ "$SCALE" =~ ^[0-9]*\.?[0-9]+$ ]] || die "BENCH_SCALE=$SCALE is not a number"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "BENCH_SEED=$SEED is not an integer"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package time)"

# --- peers, binary, broker -------------------------------------------------------------------
engine_on() { [[ " $ENGINES " == *" $1 "* ]]; }

want() { [[ " $WORKLOADS " == *" $1 "* ]]; }
KAFKA=
for w in w0 w1 w2 w3 group; do if want "$w"; then KAFKA=1; fi; done
S3= # the -s3 engines run W1 only
if want w1; then for e in $ENGINES; do [[ "$e" != *-s3 ]] || S3=1; done; fi
log "peers"
if [[ -n "$KAFKA" ]]; then
  scripts/peers.sh python spark spark-kafka kafka kcat ${S3:+s3}
else
  scripts/peers.sh python spark ${S3:+s3}
fi
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git status --porcelain --untracked-files=no -- . ':!docs/benchmarks.md' 2>/dev/null)" ]]; then
  COMMIT="$COMMIT (uncommitted changes)"
fi
log "go build -o bin/streamkit ./cmd/streamkit"
go build -o "$SK" ./cmd/streamkit

STARTED=
STARTED_S3=
cleanup() {
  if [[ -n "$STARTED" ]]; then log "stopping the broker this run started"; scripts/kafka.sh stop || true; fi
  if [[ -n "$STARTED_S3" ]]; then log "stopping the S3 server this run started"; scripts/s3.sh stop || true; fi
}
trap cleanup EXIT
B=
if [[ -n "$KAFKA" ]]; then
  if ! scripts/kafka.sh status >/dev/null 2>&1; then
    scripts/kafka.sh start >/dev/null
    STARTED=1
  fi
  eval "$(scripts/kafka.sh env)"
  B="$STREAMKIT_KAFKA_PLAINTEXT"
fi
if [[ -n "$S3" ]]; then
  export STREAMKIT_S3_PORT="${STREAMKIT_S3_PORT:-9000}"
  if ! scripts/s3.sh status >/dev/null 2>&1; then
    scripts/s3.sh start >/dev/null
    STARTED_S3=1
  fi
  eval "$(scripts/s3.sh env)"
fi

# --- data ------------------------------------------------------------------------------------
DATA="$ROOT/.it/bench/data-$SCALE-seed$SEED"
mkdir -p "$DATA"
rows() { awk -v n="$1" -v s="$SCALE" 'BEGIN { printf "%d", n * s + 0.5 }'; }
N1="$(rows 20000000)"
NG="$(rows "${BENCH_GROUP_ROWS:-8000000}")" # the group workload's topic (before BENCH_SCALE)
jq_py() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
N2= N3= WM_DELAY=
if [[ -n "$KAFKA" ]]; then # the inputs of W0-W3 (a transform-only run needs none of them)
if want w0 || want w1 || want w2 || want w3; then # (nor does a group-only run)
VEGA="$ROOT/.cache/vega-datasets-3.2.1/data/flights-3m.parquet"
if [[ ! -s "$VEGA" ]]; then
  log "fetching vega-datasets 3.2.1 (npm pack) for flights-3m.parquet"
  command -v npm >/dev/null || die "npm not found: needed once to fetch vega-datasets@3.2.1"
  mkdir -p "$ROOT/.cache/vega-datasets-3.2.1"
  (cd "$ROOT/.cache/vega-datasets-3.2.1" && npm pack vega-datasets@3.2.1 --silent >/dev/null \
    && tar -xzf vega-datasets-3.2.1.tgz --strip-components=1 package/data/flights-3m.parquet)
  [[ -s "$VEGA" ]] || die "flights-3m.parquet not in vega-datasets@3.2.1"
fi
if [[ ! -s "$DATA/w2.json" ]]; then log "preparing W2 input (flights)"; "$PY" "$HERE/prep.py" w2 "$VEGA" "$SCALE" "$DATA"; fi
if [[ ! -s "$DATA/w3.json" ]]; then log "preparing W3 input ($(rows 20000000) events)"; "$PY" "$HERE/prep.py" w3 "$SCALE" "$SEED" "$DATA"; fi
gen_w1() { "$SK" --progress=off generate --preset nexmark-bids --seed "$SEED" --rows "$N1"; }
if [[ ! -s "$DATA/w1.expected.json" ]]; then
  log "computing W1 expected figures from the generator"
  gen_w1 | "$PY" "$HERE/prep.py" w1-expected >"$DATA/w1.expected.json.tmp"
  mv "$DATA/w1.expected.json.tmp" "$DATA/w1.expected.json"
fi
N2="$(jq_py "$DATA/w2.json" records)"
N3="$(jq_py "$DATA/w3.json" records)"
WM_DELAY="$(jq_py "$DATA/w2.json" watermark_delay_s)s"
fi

# fill_topic TOPIC PARTITIONS RECORDS PRODUCER...: (re)create and fill TOPIC unless it already
# holds RECORDS records from this data set on this broker (the marker names the cluster id).
fill_topic() {
  local t="$1" parts="$2" n="$3" state marker; shift 3
  state="$("$PY" "$HERE/prep.py" topic "$B" "$t")"
  marker="$DATA/$t.$STREAMKIT_KAFKA_PORT.marker"
  if [[ -f "$marker" && "$(cat "$marker")" == "$state" ]] \
     && "$PY" -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit(not (s['partitions']==$parts and s['records']==$n))" "$state"; then
    log "topic $t: $n records in $parts partitions, already there"
    return
  fi
  log "topic $t: producing $n records into $parts partitions"
  rm -f "$marker"
  "$PY" "$HERE/prep.py" create-topic "$B" "$t" "$parts"
  "$@" | "$SK" --progress=off write-kafka -b "$B" -t "$t" --value-format json 2>"$DATA/$t.produce.log" \
    || { tail -5 "$DATA/$t.produce.log" >&2; die "producing $t failed"; }
  state="$("$PY" "$HERE/prep.py" topic "$B" "$t")"
  "$PY" -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit(not (s['partitions']==$parts and s['records']==$n))" "$state" \
    || die "topic $t holds $state after producing, want $n records in $parts partitions"
  printf '%s' "$state" >"$marker"
}
if want w0 || want w1; then fill_topic bench-w1 2 "$N1" gen_w1; fi
if want w2; then fill_topic bench-w2 1 "$N2" cat "$DATA/w2.arrows"; fi
if want w3; then fill_topic bench-w3 2 "$N3" cat "$DATA/w3.arrows"; fi
gen_group() { "$SK" --progress=off generate --preset nexmark-bids --seed "$SEED" --rows "$NG"; }
if want group; then fill_topic bench-group 8 "$NG" gen_group; fi
fi

# --- runs ------------------------------------------------------------------------------------
RES="$ROOT/.it/bench/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RES"
log "results in $RES"
LOAD_START="$(cat /proc/loadavg)"
TABLE_BASE=
if [[ -n "$S3" ]]; then
  TABLE_BASE="${BENCH_TABLE_URL_BASE:-s3://bench-$(basename "$RES" | tr 'A-Z' 'a-z')}"
  TABLE_BASE="${TABLE_BASE%/}"
  [[ "$TABLE_BASE" == s3://?* ]] || die "BENCH_TABLE_URL_BASE=$TABLE_BASE is not an s3:// URL"
  bucket="${TABLE_BASE#s3://}"; bucket="${bucket%%/*}"
  "$PY" "$HERE/prep.py" create-bucket "$bucket" || die "cannot create bucket $bucket on $STREAMKIT_S3_ENDPOINT"
  log "bucket tables under $TABLE_BASE ($STREAMKIT_S3_ENDPOINT)"
fi

# row JSON fields for report.py
put_row() { # FILE key=value... (values are JSON)
  local f="$1"; shift
  "$PY" - "$f" "$@" <<'PY'
import json, sys
row = {}
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    row[k] = json.loads(v)
json.dump(row, open(sys.argv[1], "w"), indent=1)
PY
}
js() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# measured LABEL CMD...: run CMD pinned and measured; $RES/LABEL.{log,measure.json,time}.
measured() {
  local label="$1"; shift
  set +e
  /usr/bin/time -f '%e %U %S %M' -o "$RES/$label.time" \
    "$PY" "$HERE/measure.py" "$RES/$label.measure.json" -- "${PIN[@]}" "$@" >"$RES/$label.log" 2>&1
  local rc=$?
  set -e
  return $rc
}

# run_engine W ENGINE LABEL RECORDS [VAR=VALUE...]: one engine on one workload.
run_engine() {
  local w="$1" engine="$2" label="$3" records="$4" script rc reason; shift 4
  local id="$w-$label" out="$RES/$w-$label.out" table=""
  script="$HERE/$engine.sh"
  [[ "$label" != *-s3 ]] || table="$TABLE_BASE/$id/table"
  if [[ ! -f "$script" ]]; then
    put_row "$RES/$id.row.json" w="$(js "$w")" engine="$(js "$label")" records="$records" \
      status='"n/a"' detail="$(js "scripts/bench/$engine.sh is not in this checkout")"
    log "$id: not available (no $engine.sh)"
    return
  fi
  rm -rf "$out"
  local prof=""
  [[ "$engine" != streamkit ]] || { prof="$RES/$id.prof"; mkdir -p "$prof"; }
  log "$id: running"
  rc=0
  measured "$id" env BENCH_KAFKA="$B" BENCH_TOPIC="bench-$w" BENCH_W2_ARROW="$DATA/w2.arrows" \
    BENCH_WATERMARK_DELAY="$WM_DELAY" BENCH_PARTITIONS="$(case $w in w2) echo 1 ;; *) echo 2 ;; esac)" \
    BENCH_BIN="$SK" BENCH_PYTHON="$PY" BENCH_KCAT="$KCAT" BENCH_PROFILE_DIR="$prof" BENCH_TABLE_URL="$table" "$@" \
    bash "$script" "$w" "$out" || rc=$?
  reason="$(grep -v '^[[:space:]]*$' "$RES/$id.log" | tail -1 || true)"
  if [[ "$rc" == 3 ]]; then
    put_row "$RES/$id.row.json" w="$(js "$w")" engine="$(js "$label")" records="$records" \
      status='"n/a"' detail="$(js "$reason")"
    log "$id: not available: $reason"
    return
  fi
  local check='{"status": "FAILED", "detail": "not checked"}'
  if [[ "$rc" != 0 ]]; then
    check="{\"status\": \"FAILED\", \"detail\": $(js "exit $rc: $reason")}"
  else
    local ref
    case "$w" in w1) ref="$DATA/w1.expected.json" ;; w2) ref="$DATA/w2.parquet" ;; w3) ref="$DATA/w3.parquet" ;; esac
    check="$("$PY" "$HERE/check.py" "$w" "${table:-$out}" "$ref" 2>>"$RES/$id.log" | tail -1)" \
      || check="{\"status\": \"FAILED\", \"detail\": \"check.py failed (see $id.log)\"}"
    [[ -n "$check" ]] || check='{"status": "FAILED", "detail": "check.py printed nothing"}'
  fi
  put_row "$RES/$id.row.json" w="$(js "$w")" engine="$(js "$label")" records="$records" \
    measure="$(cat "$RES/$id.measure.json")" time="$(js "$(cat "$RES/$id.time" | tail -1)")" \
    check="$check" profiles="$(js "$prof")"
  log "$id: $(cat "$RES/$id.time" | tail -1) (wall user sys maxrss-KB) → $("$PY" -c 'import json,sys; c=json.loads(sys.argv[1]); print(c["status"], c.get("detail",""))' "$check")"
  if [[ "${BENCH_KEEP:-0}" != 1 ]]; then
    rm -rf "$out"
    [[ -z "$table" ]] || "$PY" "$HERE/prep.py" remove-prefix "$TABLE_BASE/$id" || log "$id: could not remove $table"
  fi
}

if [[ -n "$KAFKA" ]] && engine_on flink && [[ -f "$HERE/flink_setup.sh" ]]; then
  log "flink: installing before the timed runs (scripts/bench/flink_setup.sh)"
  bash "$HERE/flink_setup.sh" >"$RES/flink-setup.log" 2>&1 || log "flink_setup.sh: exit $? ($(tail -1 "$RES/flink-setup.log"))"
fi

if want w0; then
  log "W0 calibration"
  rc=0; measured w0-kcat sh -c "'$KCAT' -C -b '$B' -t bench-w1 -o beginning -e -q -X log_level=0 -f '%s\n' >/dev/null" || rc=$?
  put_row "$RES/w0-kcat.row.json" w='"w0"' engine='"kcat -C -e → /dev/null"' records="$N1" rc="$rc" measure="$(cat "$RES/w0-kcat.measure.json")"
  rc=0; measured w0-readkafka sh -c "'$SK' --progress=off read-kafka -b '$B' -t bench-w1 --until now --value-format json --value-schema 'auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING' >/dev/null" || rc=$?
  put_row "$RES/w0-readkafka.row.json" w='"w0"' engine='"streamkit read-kafka (JSON values) → /dev/null"' records="$N1" rc="$rc" measure="$(cat "$RES/w0-readkafka.measure.json")"
  if engine_on spark; then
    rc=0; measured w0-spark-startup "$PY" "$HERE/spark_job.py" startup - || rc=$?
    put_row "$RES/w0-spark-startup.row.json" w='"w0"' engine='"Spark session start and stop alone (local[2], Kafka and Delta jars)"' records=0 rc="$rc" measure="$(cat "$RES/w0-spark-startup.measure.json")"
  fi
  "${PIN[@]}" go test -run '^$' -bench '^BenchmarkPipeTwoProcesses$' -benchtime 300x -count 1 ./codec >"$RES/w0-gobench-codec.txt" 2>&1 || log "codec benchmark failed (see $RES/w0-gobench-codec.txt)"
  "${PIN[@]}" go test -run '^$' -bench '^BenchmarkWriteFlights$/^snappy$' -benchtime 150x -count 1 ./sink/delta >"$RES/w0-gobench-pqarrow.txt" 2>&1 || log "pqarrow benchmark failed (see $RES/w0-gobench-pqarrow.txt)"
fi

for w in w1 w2 w3; do
  want "$w" || continue
  case "$w" in w1) n="$N1" ;; w2) n="$N2" ;; w3) n="$N3" ;; esac
  for e in $ENGINES; do
    case "$e:$w" in
      kcat-deltalake*:w2|kcat-deltalake*:w3) continue ;;
    esac
    script="${e%-s3}"
    if [[ "$e" == streamkit && -n "$BASELINE" ]]; then
      run_engine "$w" streamkit streamkit-baseline "$n" BENCH_BIN="$BASELINE"
    fi
    if [[ "$e" == streamkit-s3 && -n "$BASELINE" ]]; then
      run_engine "$w" streamkit streamkit-baseline-s3 "$n" BENCH_BIN="$BASELINE"
    fi
    run_engine "$w" "$script" "$e" "$n"
    if [[ "$e:$w" == streamkit:w3 ]]; then
      if [[ -n "$BASELINE" ]]; then
        run_engine w3 streamkit "streamkit-shards2-baseline" "$n" BENCH_STREAMKIT_SHARDS=2 BENCH_BIN="$BASELINE"
      fi
      run_engine w3 streamkit "streamkit-shards2" "$n" BENCH_STREAMKIT_SHARDS=2
    fi
  done
done

# Transform (issue #21): filter and select over one Arrow IPC file, streamkit (the stage
# process alone) vs DuckDB vs pyspark on the same rows (transform.py documents the engines).
TDATA=
if want transform; then
  NT="${BENCH_TRANSFORM_ROWS:-$(rows 10000000)}"
  [[ "$NT" =~ ^[0-9]+$ && "$NT" -gt 0 ]] || die "BENCH_TRANSFORM_ROWS=$NT is not a positive integer"
  TDATA="$ROOT/.it/bench/transform-$NT"
  mkdir -p "$TDATA"
  if [[ ! -s "$TDATA/transform.json" ]]; then
    log "preparing the transform input ($NT rows, Arrow IPC and Parquet)"
    "$PY" "$HERE/transform.py" prep "$NT" "$TDATA"
  fi
  TFILE="$TDATA/transform.arrows"
  for q in passthrough $("$PY" "$HERE/transform.py" queries); do
    for e in ${BENCH_TRANSFORM_ENGINES:-streamkit duckdb spark}; do
      [[ "$q" != passthrough || "$e" == streamkit ]] || continue
      id="t-$q-$e"
      log "$id: running"
      rc=0
      case "$e" in
      streamkit)
        if [[ "$q" == passthrough ]]; then tool=select; ex='*'; else
          tool="$([[ "$q" == filter ]] && echo filter || echo select)"; ex="$("$PY" "$HERE/transform.py" expr "$q")"
        fi
        # The stage alone: stdin from the file, stdout to /dev/null; its CPU profile beside.
        measured "$id" env STREAMKIT_CPUPROFILE="$RES/$id.prof" sh -c '"$1" --progress=off "$2" "$3" <"$4" >/dev/null' \
          sh "$SK" "$tool" "$ex" "$TFILE" || rc=$?
        out=null
        if [[ "$rc" == 0 ]]; then
          if [[ "$tool" == filter ]]; then
            out="$(sed -n 's/.*msg="filter done".* rows_out=\([0-9]*\).*/\1/p' "$RES/$id.log" | tail -1)"
          else # not measured: the same run once more, its output counted
            out="$("$SK" --progress=off "$tool" "$ex" <"$TFILE" 2>/dev/null | "$PY" "$HERE/transform.py" count \
              | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["rows"])')" || out=null
          fi
          [[ -n "$out" ]] || out=null
        fi
        put_row "$RES/$id.row.json" w='"t"' engine='"streamkit"' query="$(js "$q")" records="$NT" rc="$rc" \
          expr="$(js "$ex")" rows_out="$out" measure="$(cat "$RES/$id.measure.json")" \
          detail="$(js "$(grep -v -e '^[[:space:]]*$' -e 'level=INFO' -e ': cpu profile ' "$RES/$id.log" | head -1)")" profile="$(js "$RES/$id.prof")"
        ;;
      duckdb|spark)
        measured "$id" "$PY" "$HERE/transform.py" "$e" "$q" "$TDATA" "$RES/$id.json" || rc=$?
        put_row "$RES/$id.row.json" w='"t"' engine="$(js "$e")" query="$(js "$q")" records="$NT" rc="$rc" \
          result="$(cat "$RES/$id.json" 2>/dev/null || echo null)" measure="$(cat "$RES/$id.measure.json")" \
          detail="$(js "$(grep -v '^[[:space:]]*$' "$RES/$id.log" | tail -1)")"
        ;;
      *) die "unknown transform engine $e (streamkit, duckdb, spark)" ;;
      esac
      log "$id: exit $rc"
    done
  done
  log "transform: go test -bench Pipeline ./expr (the same path in-process)"
  "${PIN[@]}" go test -run '^$' -bench '^BenchmarkPipeline' -benchtime 5x -count 1 ./expr >"$RES/t-gobench-pipeline.txt" 2>&1 \
    || log "pipeline benchmark failed (see $RES/t-gobench-pipeline.txt)"
fi

# Consumer groups (issue #20): W1 in group mode, members started by streamkit run --parallel;
# scaling 1 → 2 pinned members, 1 to 4 members, rebalance pauses (group.py documents each).
if want group; then
  log "group: scaling, members 1-4, rebalance pauses (group.py, $NG records in 8 partitions)"
  "$PY" "$HERE/group.py" "$SK" "$PY" "$B" bench-group "$NG" 8 "$RES" 2>"$RES/group.log" \
    || log "group benchmark failed (see $RES/group.log)"
fi

# Per-epoch commit latency of write-delta, local disk vs bucket (commit_latency.py: small
# epochs of 1,000 rows, write-delta's own per-epoch commit times).
if want w1 && engine_on streamkit-s3; then
  log "commit latency per epoch (commit_latency.py, ${BENCH_COMMIT_EPOCHS:-200} epochs each, local and bucket)"
  "${PIN[@]}" "$PY" "$HERE/commit_latency.py" "$SK" "$RES/w1-commit-latency.json" "$RES/w1-commit-latency.out" \
    "$RES/w1-commit-latency.out/table" "$TABLE_BASE/w1-commit-latency/table" "${BENCH_COMMIT_EPOCHS:-200}" \
    >"$RES/w1-commit-latency.log" 2>&1 || log "commit latency run failed (see $RES/w1-commit-latency.log)"
  if [[ "${BENCH_KEEP:-0}" != 1 ]]; then
    rm -rf "$RES/w1-commit-latency.out"
    "$PY" "$HERE/prep.py" remove-prefix "$TABLE_BASE/w1-commit-latency" || true
  fi
fi

# The run's own bucket (the default BENCH_TABLE_URL_BASE) goes once its tables are checked.
if [[ -n "$S3" && -z "${BENCH_TABLE_URL_BASE:-}" && "${BENCH_KEEP:-0}" != 1 ]]; then
  "$PY" "$HERE/prep.py" remove-bucket "$bucket" || log "could not remove bucket $bucket"
fi

# --- report ----------------------------------------------------------------------------------
LOAD_END="$(cat /proc/loadavg)"
put_row "$RES/meta.json" commit="$(js "$COMMIT")" scale="$(js "$SCALE")" w1_records="$N1" group_records="$NG" seed="$SEED" load_start="$(js "$LOAD_START")" load_end="$(js "$LOAD_END")" \
  port="$STREAMKIT_KAFKA_PORT" watermark_delay="$(js "$WM_DELAY")" data="$(js "${DATA#"$ROOT"/}")" \
  w2="$(cat "$DATA/w2.json" 2>/dev/null || echo null)" w3="$(cat "$DATA/w3.json" 2>/dev/null || echo null)" results="$(js "${RES#"$ROOT"/}")" \
  workloads="$(js "$WORKLOADS")" transform="$( [[ -n "$TDATA" ]] && cat "$TDATA/transform.json" || echo null)" \
  transform_data="$(js "${TDATA#"$ROOT"/}")" \
  table_base="$(js "$TABLE_BASE")" s3_endpoint="$(js "${STREAMKIT_S3_ENDPOINT:-}")"
mkdir -p "$(dirname "$REPORT")"
"$PY" "$HERE/report.py" "$RES" "$REPORT"
log "wrote $REPORT"
