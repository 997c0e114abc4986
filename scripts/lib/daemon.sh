# shellcheck shell=bash
# Shared plumbing of the test-peer daemon scripts (scripts/kafka.sh, scripts/registry.sh),
# sourced after they set TAG (log prefix), PIDFILE, PIDMATCH (a fixed string the daemon's
# command line contains, so a recycled pid is never taken for it) and LOCKFILE.

log() { printf '[%s] %s\n' "$TAG" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$TAG" "$*" >&2; exit 1; }

# running_pid: the daemon's pid (exit 0), or exit 1 when it is not running.
running_pid() {
  local pid
  [[ -f "$PIDFILE" ]] || return 1
  pid="$(cat "$PIDFILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$PIDMATCH" || return 1
  echo "$pid"
}

# port_busy P: whether something accepts connections on 127.0.0.1:P.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stop_daemon TIMEOUT: SIGTERM, wait up to TIMEOUT seconds, then SIGKILL.
stop_daemon() {
  local pid i timeout="$1"
  if ! pid="$(running_pid)"; then
    log "not running"
    return 0
  fi
  log "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || { log "stopped"; rm -f "$PIDFILE"; return 0; }
    sleep 0.2
  done
  log "still alive after ${timeout}s, sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

# lock: serialise start/stop of this worktree's daemon (the daemon must not inherit fd 8).
lock() { mkdir -p "$(dirname "$LOCKFILE")"; exec 8>"$LOCKFILE"; flock 8; }
