#!/usr/bin/env bash
# A single-node Apache Kafka 4.x broker (KRaft, combined broker+controller) for tests,
# run from the Maven-fetched jars in .it/kafka/libs (scripts/peers.sh kafka).
#
#   scripts/kafka.sh start    format a fresh data dir, start, wait until ready, print addresses
#                             (already running: just print them)
#   scripts/kafka.sh stop     SIGTERM and wait (SIGKILL after STREAMKIT_KAFKA_STOP_TIMEOUT s)
#   scripts/kafka.sh status   "running pid N" (exit 0) or "stopped" (exit 1)
#   scripts/kafka.sh env      shell exports for tests:  eval "$(scripts/kafka.sh env)"
#
# Listeners, all on 127.0.0.1, from a base port P = STREAMKIT_KAFKA_PORT (default 9092):
#   P    PLAINTEXT
#   P+1  CONTROLLER (KRaft quorum, PLAINTEXT; not for clients)
#   P+2  SASL_PLAINTEXT, mechanisms SCRAM-SHA-256 and SCRAM-SHA-512
#   P+3  SSL with client authentication required (mTLS)
# The SCRAM user (both mechanisms) is created at format time (StorageTool format -S).
# A test CA, a broker certificate (SAN 127.0.0.1, localhost) and a client certificate are
# generated once with openssl/keytool into .it/kafka-auth/ and reused by later starts.
# Data, config and log live in .it/kafka-run/ and are wiped on every fresh start.
# Transactions work on the single node (transaction state log RF 1, min ISR 1).
#
# Environment: STREAMKIT_KAFKA_PORT (base port), STREAMKIT_KAFKA_START_TIMEOUT (s, 120),
# STREAMKIT_KAFKA_STOP_TIMEOUT (s, 60), JAVA (default java).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IT="$ROOT/.it"
LIBS="$IT/kafka/libs"
RUN="$IT/kafka-run"
AUTH="$IT/kafka-auth"
JAVA="${JAVA:-java}"
PIDFILE="$RUN/broker.pid"
LOG="$RUN/broker.log"
STATE="$RUN/kafka.env"

SASL_USER=streamkit
SASL_PASSWORD=streamkit-scram-secret
STORE_PASSWORD=streamkit-store-secret

TAG=kafka
PIDMATCH="kafka.Kafka $RUN/server.properties"
LOCKFILE="$IT/kafka.lock"
# shellcheck source=scripts/lib/daemon.sh
source "$ROOT/scripts/lib/daemon.sh"

base_port() {
  local p="${STREAMKIT_KAFKA_PORT:-9092}"
  if ! [[ "$p" =~ ^[0-9]+$ ]] || (( p <= 0 || p >= 65532 )); then die "bad STREAMKIT_KAFKA_PORT=$p"; fi
  echo "$p"
}


# env_for P : the exports describing a broker on base port P.
env_for() {
  local p="$1"
  cat <<EOF
export STREAMKIT_KAFKA_PLAINTEXT=127.0.0.1:$p
export STREAMKIT_KAFKA_CONTROLLER=127.0.0.1:$((p + 1))
export STREAMKIT_KAFKA_SASL=127.0.0.1:$((p + 2))
export STREAMKIT_KAFKA_SSL=127.0.0.1:$((p + 3))
export STREAMKIT_KAFKA_SASL_MECHANISMS=SCRAM-SHA-256,SCRAM-SHA-512
export STREAMKIT_KAFKA_SASL_USERNAME=$SASL_USER
export STREAMKIT_KAFKA_SASL_PASSWORD=$SASL_PASSWORD
export STREAMKIT_KAFKA_SASL_USERNAME_FILE=$AUTH/sasl.username
export STREAMKIT_KAFKA_SASL_PASSWORD_FILE=$AUTH/sasl.password
export STREAMKIT_KAFKA_SSL_CA=$AUTH/ca.pem
export STREAMKIT_KAFKA_SSL_CERT=$AUTH/client.pem
export STREAMKIT_KAFKA_SSL_KEY=$AUTH/client.key
export STREAMKIT_KAFKA_SSL_CLIENT_P12=$AUTH/client.p12
export STREAMKIT_KAFKA_SSL_TRUSTSTORE_P12=$AUTH/truststore.p12
export STREAMKIT_KAFKA_SSL_STORE_PASSWORD_FILE=$AUTH/store.password
export STREAMKIT_KAFKA_LOG=$LOG
export STREAMKIT_KAFKA_LIBS=$LIBS
export STREAMKIT_KCAT=$IT/bin/kcat
EOF
}

gen_auth() {
  if [[ -s "$AUTH/ca.pem" && -s "$AUTH/client.key" && -s "$AUTH/broker.p12" && -s "$AUTH/truststore.p12" \
        && -s "$AUTH/client.p12" && -s "$AUTH/sasl.password" ]]; then
    return
  fi
  command -v openssl >/dev/null || die "openssl not found"
  command -v keytool >/dev/null || die "keytool not found (install a JDK)"
  log "generating test CA, broker and client certificates in $AUTH"
  local tmp
  tmp="$(mktemp -d "$IT/.tmp-kafka-auth.XXXXXX")"
  (
    cd "$tmp"
    printf '%s' "$SASL_USER" >sasl.username
    printf '%s' "$SASL_PASSWORD" >sasl.password
    printf '%s' "$STORE_PASSWORD" >store.password
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -subj "/CN=streamkit test CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout ca.key -out ca.pem
    sign() { # name CN extendedKeyUsage [subjectAltName]
      openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$2" -keyout "$1.key" -out "$1.csr"
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$3"
        [[ -z "${4:-}" ]] || echo "subjectAltName=$4"
      } >"$1.ext"
      openssl x509 -req -sha256 -days 3650 -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -extfile "$1.ext" -out "$1.pem"
      openssl pkcs12 -export -in "$1.pem" -inkey "$1.key" -certfile ca.pem -name "$1" \
        -passout "pass:$STORE_PASSWORD" -out "$1.p12"
      rm -f "$1.csr" "$1.ext"
    }
    sign broker localhost serverAuth,clientAuth "DNS:localhost,IP:127.0.0.1"
    sign client streamkit-client clientAuth
    keytool -importcert -noprompt -alias streamkit-ca -file ca.pem -keystore truststore.p12 \
      -storetype PKCS12 -storepass "$STORE_PASSWORD"
  ) >"$tmp.log" 2>&1 || { cat "$tmp.log" >&2; rm -rf "$tmp" "$tmp.log"; die "certificate generation failed"; }
  rm -f "$tmp.log"
  chmod 600 "$tmp"/*.key
  rm -rf "$AUTH"
  mv "$tmp" "$AUTH"
}

write_config() {
  local p="$1"
  cat >"$RUN/server.properties" <<EOF
# generated by scripts/kafka.sh
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$((p + 1))
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1)),SASL_PLAINTEXT://127.0.0.1:$((p + 2)),SSL://127.0.0.1:$((p + 3))
advertised.listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p + 1)),SASL_PLAINTEXT://127.0.0.1:$((p + 2)),SSL://127.0.0.1:$((p + 3))
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL
log.dirs=$RUN/data

# SASL/SCRAM on the SASL_PLAINTEXT listener (users are created by StorageTool format -S)
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;

# mTLS on the SSL listener
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.keystore.type=PKCS12
listener.name.ssl.ssl.keystore.location=$AUTH/broker.p12
listener.name.ssl.ssl.keystore.password=$STORE_PASSWORD
listener.name.ssl.ssl.key.password=$STORE_PASSWORD
listener.name.ssl.ssl.truststore.type=PKCS12
listener.name.ssl.ssl.truststore.location=$AUTH/truststore.p12
listener.name.ssl.ssl.truststore.password=$STORE_PASSWORD

# single node: everything replicated once, transactions enabled
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true

# small machine: few threads
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
num.replica.fetchers=1
log.cleaner.threads=1
EOF
  cat >"$RUN/log4j2.properties" <<'EOF'
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stderr.ref = STDERR
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

JVM_OPTS=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
  -Djava.awt.headless=true)

cmd_start() {
  local pid p i timeout
  if pid="$(running_pid)"; then
    log "already running (pid $pid)"
    print_addresses
    return
  fi
  "$ROOT/scripts/peers.sh" kafka
  p="$(base_port)"
  for i in 0 1 2 3; do
    ! port_busy $((p + i)) || die "port $((p + i)) on 127.0.0.1 is in use (set STREAMKIT_KAFKA_PORT to another base port)"
  done
  mkdir -p "$IT"
  gen_auth
  rm -rf "$RUN"
  mkdir -p "$RUN/data"
  write_config "$p"
  env_for "$p" >"$STATE"

  local cid
  cid="$("$JAVA" -Xmx256m -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>>"$RUN/format.log")"
  "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$RUN/log4j2.properties" -cp "$LIBS/*" kafka.tools.StorageTool \
    format --standalone -t "$cid" -c "$RUN/server.properties" \
    -S "SCRAM-SHA-256=[name=$SASL_USER,password=$SASL_PASSWORD]" \
    -S "SCRAM-SHA-512=[name=$SASL_USER,password=$SASL_PASSWORD]" >>"$RUN/format.log" 2>&1 \
    || { cat "$RUN/format.log" >&2; die "kafka storage format failed"; }

  log "starting broker (base port $p, log $LOG)"
  # setsid: the broker outlives the caller's process group; the inner shell records its own
  # pid and then becomes java, so the pid file names the JVM.
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
    "$JAVA" "${JVM_OPTS[@]}" -Dlog4j2.configurationFile="$RUN/log4j2.properties" -cp "$LIBS/*" \
    kafka.Kafka "$RUN/server.properties" </dev/null >"$LOG" 2>&1 8>&- &
  timeout="${STREAMKIT_KAFKA_START_TIMEOUT:-120}"
  for ((i = 0; i < timeout * 5; i++)); do
    if grep -q "Kafka Server started" "$LOG" 2>/dev/null; then
      running_pid >/dev/null || break
      log "ready after $((i / 5)).$((i % 5 * 2))s (pid $(cat "$PIDFILE"))"
      print_addresses
      return
    fi
    if (( i > 10 )) && ! running_pid >/dev/null; then
      tail -40 "$LOG" >&2
      die "broker exited during startup (log: $LOG)"
    fi
    sleep 0.2
  done
  tail -40 "$LOG" >&2
  cmd_stop || true
  die "broker not ready after ${timeout}s (log: $LOG)"
}

print_addresses() {
  # shellcheck disable=SC1090
  (source "$STATE"
   echo "PLAINTEXT      $STREAMKIT_KAFKA_PLAINTEXT"
   echo "SASL_PLAINTEXT $STREAMKIT_KAFKA_SASL (SCRAM-SHA-256/512, user $STREAMKIT_KAFKA_SASL_USERNAME)"
   echo "SSL (mTLS)     $STREAMKIT_KAFKA_SSL (CA $STREAMKIT_KAFKA_SSL_CA)"
   echo "eval \"\$($ROOT/scripts/kafka.sh env)\" exports them for tests")
}

cmd_stop() { stop_daemon "${STREAMKIT_KAFKA_STOP_TIMEOUT:-60}"; }

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "running pid $pid"
    print_addresses
  else
    echo "stopped"
    return 1
  fi
}

cmd_env() {
  if running_pid >/dev/null && [[ -f "$STATE" ]]; then
    cat "$STATE"
  else
    local p
    p="$(base_port)"
    env_for "$p"
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
