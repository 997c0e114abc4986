#!/usr/bin/env bash
# shellcheck disable=SC2034  # option arrays are passed by name (local -n) to roundtrip
# Checks the test broker of scripts/kafka.sh with kcat (.it/bin/kcat) on every listener:
# PLAINTEXT, SASL_PLAINTEXT with SCRAM-SHA-256 and -512 (and a wrong password that must
# fail), SSL with a client certificate (and without one, which must fail), and a
# transactional produce read back with isolation.level=read_committed.
# Starts the broker if it is not running (and stops it again afterwards).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/peers.sh" kafka kcat

started=0
if ! "$ROOT/scripts/kafka.sh" status >/dev/null 2>&1; then
  "$ROOT/scripts/kafka.sh" start >/dev/null
  started=1
fi
cleanup() { if [[ "$started" == 1 ]]; then "$ROOT/scripts/kafka.sh" stop; fi; }
trap cleanup EXIT
eval "$("$ROOT/scripts/kafka.sh" env)"

KCAT="$ROOT/.it/bin/kcat"
RUN_ID="smoke-$(date +%s)-$$"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

SASL512=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=SCRAM-SHA-512
  -X "sasl.username=$STREAMKIT_KAFKA_SASL_USERNAME" -X "sasl.password=$STREAMKIT_KAFKA_SASL_PASSWORD")
SASL256=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=SCRAM-SHA-256
  -X "sasl.username=$STREAMKIT_KAFKA_SASL_USERNAME" -X "sasl.password=$STREAMKIT_KAFKA_SASL_PASSWORD")
MTLS=(-X security.protocol=SSL -X "ssl.ca.location=$STREAMKIT_KAFKA_SSL_CA"
  -X "ssl.certificate.location=$STREAMKIT_KAFKA_SSL_CERT" -X "ssl.key.location=$STREAMKIT_KAFKA_SSL_KEY")

# roundtrip NAME BOOTSTRAP "PRODUCER ARGS" "CONSUMER ARGS" : produce 3 records, read them back.
roundtrip() {
  local name="$1" bs="$2" topic="$RUN_ID-$1" got
  local -n pargs="$3" cargs="$4"
  if ! printf 'r1\nr2\nr3\n' | timeout 60 "$KCAT" -b "$bs" "${pargs[@]}" -P -t "$topic" 2>"$ROOT/.it/kcat.err"; then
    bad "$name: produce ($(tail -1 "$ROOT/.it/kcat.err"))"; return
  fi
  got="$(timeout 60 "$KCAT" -b "$bs" "${cargs[@]}" -C -t "$topic" -o beginning -e -q 2>"$ROOT/.it/kcat.err" | tr '\n' ' ')" || true
  if [[ "$got" == "r1 r2 r3 " ]]; then ok "$name: produced and consumed 3 records"
  else bad "$name: consumed '$got' ($(tail -1 "$ROOT/.it/kcat.err"))"; fi
}

# must_fail NAME BOOTSTRAP PATTERN ARGS... : a metadata request that must fail with PATTERN.
must_fail() {
  local name="$1" bs="$2" pattern="$3" out rc=0
  shift 3
  out="$(timeout 30 "$KCAT" -b "$bs" "$@" -L -m 5 2>&1)" || rc=$?
  if [[ $rc -ne 0 ]] && grep -q "$pattern" <<<"$out"; then ok "$name: rejected ($pattern)"
  else bad "$name: expected failure matching '$pattern', got rc=$rc: $(tail -2 <<<"$out")"; fi
}

NONE=()
roundtrip plaintext "$STREAMKIT_KAFKA_PLAINTEXT" NONE NONE
roundtrip scram-sha-512 "$STREAMKIT_KAFKA_SASL" SASL512 SASL512
roundtrip scram-sha-256 "$STREAMKIT_KAFKA_SASL" SASL256 SASL256
roundtrip mtls "$STREAMKIT_KAFKA_SSL" MTLS MTLS
TXN=(-X "transactional.id=$RUN_ID")
RC=(-X isolation.level=read_committed)
roundtrip transactional "$STREAMKIT_KAFKA_PLAINTEXT" TXN RC

must_fail "wrong SCRAM password" "$STREAMKIT_KAFKA_SASL" "Authentication failed" \
  -X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=SCRAM-SHA-512 \
  -X "sasl.username=$STREAMKIT_KAFKA_SASL_USERNAME" -X sasl.password=not-the-password
must_fail "SSL without client certificate" "$STREAMKIT_KAFKA_SSL" "alert\|handshake\|certificate" \
  -X security.protocol=SSL -X "ssl.ca.location=$STREAMKIT_KAFKA_SSL_CA"

echo "kafka-smoke: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
