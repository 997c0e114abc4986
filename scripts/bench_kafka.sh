#!/usr/bin/env bash
# Kafka throughput figures (issue #4): write-kafka produce rate, read-kafka -> /dev/null vs
# kcat's consume rate on the same preloaded topic (N records, 100-byte values, 2 partitions),
# and read-kafka with JSON value decoding.
#
#   scripts/bench_kafka.sh [N]      (default 10000000; needs scripts/kafka.sh start, the venv)
#
# Each step prints records/s. Topics are deleted at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-10000000}"
eval "$("$ROOT/scripts/kafka.sh" env)"
B="$STREAMKIT_KAFKA_PLAINTEXT"
KCAT="$STREAMKIT_KCAT"
PY="${STREAMKIT_PYTHON:-$ROOT/.venv/bin/python}"
BIN="$(mktemp -d)/streamkit"
(cd "$ROOT" && go build -o "$BIN" ./cmd/streamkit)
RAW="bench-raw-$$"
JSN="bench-json-$$"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP" "$(dirname "$BIN")"' EXIT

gen() { # kind: raw (100-byte binary values) | json (~100-byte JSON objects); IPC stream on stdout
  "$PY" - "$N" "$1" <<'PY'
import sys, pyarrow as pa, os
n, kind = int(sys.argv[1]), sys.argv[2]
batch = 65536
schema = pa.schema([("key", pa.binary()), ("value", pa.binary())])
w = pa.ipc.new_stream(sys.stdout.buffer, schema)
pad = b"x" * 100
for start in range(0, n, batch):
    m = min(batch, n - start)
    keys = [str(i).encode() for i in range(start, start + m)]
    if kind == "raw":
        vals = [pad] * m
    else:
        vals = [(b'{"id":%d,"user":"user-%06d","amount":%d.25,"country":"NL","ts":"2024-05-01T12:00:00Z","ok":true}' % (i, i % 999999, i % 1000)) for i in range(start, start + m)]
    w.write_batch(pa.record_batch([pa.array(keys, pa.binary()), pa.array(vals, pa.binary())], schema=schema))
w.close()
PY
}

# timed LABEL CMD...: wall-clock rate and rate per CPU-second (user+sys) of CMD.
timed() {
  local label="$1"; shift
  local f; f="$(mktemp)"
  /usr/bin/time -f "%e %U %S" -o "$f" "$@"
  read -r wall user sys <"$f"; rm -f "$f"
  awk -v l="$label" -v n="$N" -v w="$wall" -v c="$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" \
    'BEGIN { printf "%-32s %9.0f records/s wall (%.1f s), %9.0f records/CPU-s\n", l, n / w, w, n / c }'
}

"$KCAT" -L -b "$B" >/dev/null 2>&1
for t in "$RAW" "$JSN"; do
  "$PY" -c "
import confluent_kafka.admin as a
c = a.AdminClient({'bootstrap.servers': '$B'})
for f in c.create_topics([a.NewTopic('$t', num_partitions=2, replication_factor=1)]).values(): f.result()
"
done

gen raw >"$TMP/raw.arrows"
timed "write-kafka (100-byte values)" sh -c "'$BIN' --progress=off write-kafka -b '$B' -t '$RAW' <'$TMP/raw.arrows'"
gen json >"$TMP/json.arrows"
"$BIN" --progress=off write-kafka -b "$B" -t "$JSN" <"$TMP/json.arrows"
rm -f "$TMP"/*.arrows

for round in 1 2; do
  timed "kcat -C > /dev/null" sh -c "'$KCAT' -C -b '$B' -t '$RAW' -o beginning -e -q -X log_level=0 -f '%s\n' >/dev/null"
  timed "read-kafka > /dev/null" sh -c "'$BIN' --progress=off read-kafka -b '$B' -t '$RAW' --until now >/dev/null"
  timed "read-kafka JSON values" sh -c "'$BIN' --progress=off read-kafka -b '$B' -t '$JSN' --until now --value-format json \
    --value-schema 'id BIGINT, user STRING, amount DOUBLE, country STRING, ts TIMESTAMP, ok BOOLEAN' >/dev/null"
done

"$PY" -c "
import confluent_kafka.admin as a
c = a.AdminClient({'bootstrap.servers': '$B'})
for f in c.delete_topics(['$RAW', '$JSN']).values(): f.result()
"
