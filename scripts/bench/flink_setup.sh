#!/usr/bin/env bash
# Installs the Flink engine of make bench, idempotently, from package registries only.
#
#   scripts/bench/flink_setup.sh [--force]
#
#   .it/flink-venv   PyFlink (apache-flink, scripts/bench/requirements-flink.txt), a venv of its
#                    own (apache-flink pins its own pyarrow/pandas/py4j)
#   .it/flink-jars   Kafka SQL connector, Parquet format and Hadoop client jars from Maven
#                    Central (scripts/maven/flink/pom.xml)
# then runs a smoke test (flink_job.py smoke): a local mini-cluster writes a few rows to
# Parquet in streaming mode and plans a Kafka source, which loads both connector jars.
#
# A stamp (.it/flink-venv/.streamkit-flink.stamp) holds the pins it was installed from (the
# requirements file, the pom, the Python and Java versions); when it matches, the run takes
# milliseconds. Change a pin and the next run reinstalls. Concurrent runs are serialised with
# a lock on .it/flink.lock.
#
# Exit 0: installed and working. Exit 3: Flink cannot be installed or run on this machine; the
# last line on stderr says why (details in .it/flink-setup.log). Exit 2: bad usage.
#
# Environment: PYTHON (default: the first of python3, python3.12 … python3.9 that is
# 3.9-3.12, the versions apache-flink has wheels for), MVN (default mvn), MVN_ARGS, JAVA
# (default java), STREAMKIT_FLINK_FORCE=1 (as --force).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BENCH="$ROOT/scripts/bench"
IT="$ROOT/.it"
VENV="$IT/flink-venv"
JARS="$IT/flink-jars"
STAMP="$VENV/.streamkit-flink.stamp"
LOG="$IT/flink-setup.log"
REQ="$BENCH/requirements-flink.txt"
POM="$ROOT/scripts/maven/flink/pom.xml"
MVN="${MVN:-mvn}"
JAVA="${JAVA:-java}"
FORCE="${STREAMKIT_FLINK_FORCE:-0}"

log() { printf '[flink-setup] %s\n' "$*" >&2; }
# unavailable REASON: the one line the bench runner reports, exit 3.
unavailable() { printf 'flink unavailable: %s\n' "$*" >&2; exit 3; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# pick_python: the first interpreter with a version apache-flink ships wheels for.
pick_python() {
  local c
  for c in ${PYTHON:-python3 python3.12 python3.11 python3.10 python3.9}; do
    command -v "$c" >/dev/null || continue
    if "$c" -c 'import sys; sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 12) else 1)' 2>/dev/null; then
      command -v "$c"
      return
    fi
  done
  return 1
}

# java_major: the major version of $JAVA (17 for "17.0.15"), empty when there is none.
java_major() {
  "$JAVA" -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit }'
}

main() {
  case "${1:-}" in
    --force|-f) FORCE=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) printf 'usage: %s [--force]\n' "$0" >&2; exit 2 ;;
  esac
  mkdir -p "$IT"
  exec 8>"$IT/flink.lock"
  flock -n 8 || { log "waiting for another flink_setup.sh"; flock 8; }

  local py jv want t0
  command -v "$JAVA" >/dev/null || unavailable "no Java runtime on PATH (Flink 2.3 needs Java 11, 17 or 21)"
  jv="$(java_major)"
  [[ "$jv" =~ ^[0-9]+$ && "$jv" -ge 11 ]] || unavailable "Java $("$JAVA" -version 2>&1 | head -1) is older than 11 (Flink 2.3 needs 11, 17 or 21)"
  py="$(pick_python)" || unavailable "no Python 3.9-3.12 on PATH (apache-flink 2.3.0 has wheels for CPython 3.9-3.12 only)"
  want="$("$py" --version 2>&1)
$("$JAVA" -version 2>&1 | head -1)
$(cat "$REQ" "$POM")"
  if [[ "$FORCE" != 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$want" && -d "$JARS" ]]; then
    log "up to date ($VENV, $JARS)"
    return 0
  fi

  t0="$(now)"
  : >"$LOG"
  rm -f "$STAMP"
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    log "creating $VENV with $py"
    rm -rf "$VENV"
    "$py" -m venv "$VENV" >>"$LOG" 2>&1 || unavailable "$py -m venv failed (see $LOG)"
  fi
  log "pip install -r scripts/bench/requirements-flink.txt"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" >>"$LOG" 2>&1 \
    || { tail -20 "$LOG" >&2; unavailable "pip install of apache-flink failed: $(grep -m1 -E 'ERROR' "$LOG" || echo "see $LOG")"; }

  command -v "$MVN" >/dev/null || unavailable "no Maven ($MVN) on PATH to fetch the Kafka/Parquet jars"
  log "mvn copy-dependencies scripts/maven/flink -> .it/flink-jars"
  local tmp
  tmp="$(mktemp -d "$IT/.tmp-flink-jars.XXXXXX")"
  # shellcheck disable=SC2086
  if ! "$MVN" -B -q ${MVN_ARGS:-} -f "$POM" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" >>"$LOG" 2>&1; then
    rm -rf "$tmp"
    tail -20 "$LOG" >&2
    unavailable "mvn could not fetch the Flink jars of scripts/maven/flink/pom.xml: $(grep -m1 -E '\[ERROR\]' "$LOG" || echo "see $LOG")"
  fi
  rm -rf "$JARS"
  mv "$tmp" "$JARS"

  log "smoke test (local mini-cluster: Parquet sink, Kafka source plan)"
  local smoke
  smoke="$(mktemp -d "$IT/.tmp-flink-smoke.XXXXXX")"
  if ! FLINK_JARS="$(flink_jars)" FLINK_LOG_DIR="$IT/flink-logs" JVM_ARGS="-Duser.timezone=UTC" \
      "$VENV/bin/python" "$BENCH/flink_job.py" smoke "$smoke/out" >>"$LOG" 2>&1; then
    rm -rf "$smoke"
    grep -v '^\s*at ' "$LOG" | tail -20 >&2
    unavailable "the PyFlink smoke test failed: $(grep -m1 -E 'Exception|Error' "$LOG" || echo "see $LOG")"
  fi
  rm -rf "$smoke"
  printf '%s' "$want" >"$STAMP"
  log "installed in $(elapsed "$t0"): $("$VENV/bin/python" -c 'import importlib.metadata as m; print("apache-flink", m.version("apache-flink"))'), $(jar_names)"
}

# jar_names: the jars of .it/flink-jars without directory and .jar, space-separated.
jar_names() {
  local j
  for j in "$JARS"/*.jar; do j="${j##*/}"; printf '%s ' "${j%.jar}"; done
}

# flink_jars: the jars of .it/flink-jars, ';'-separated (FLINK_JARS of flink_job.py).
flink_jars() {
  local j out=""
  for j in "$JARS"/*.jar; do out+="$j;"; done
  printf '%s' "${out%;}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then main "$@"; fi
