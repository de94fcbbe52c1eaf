#!/usr/bin/env bash
# A single-node OpenSearch 2.19 server on 127.0.0.1, for logferry's
# OpenSearch tests and for trying the OpenSearch sink.
#
#   scripts/opensearch.sh start    start (or find running) and print the base URL
#   scripts/opensearch.sh stop     stop it; its indices stay for the next start
#   scripts/opensearch.sh status   print the base URL and exit 0 if it runs, else exit 1
#   scripts/opensearch.sh clean    stop it and delete its data
#   scripts/opensearch.sh fetch    only fetch the node's jars
#
# State (config, data, logs, pid, URL) lives in $LOGFERRY_OPENSEARCH_DIR,
# default target/opensearch. Several nodes can run at once with different
# dirs. The first start picks free ports (HTTP and transport) and keeps
# them, so a stopped node comes back on the same URL with the same indices.
#
# The node is assembled from Maven Central, as no distribution archive can
# be fetched: the server's jars (scripts/opensearch/pom.xml) are its lib/,
# and four modules (scripts/opensearch/modules/*: the REST layer
# transport-netty4, lang-painless, analysis-common, reindex, which index
# templates and data streams need) each hold only the jars not already in
# lib/ (a class on the path twice fails the node's "jar hell" check), with
# their plugin-descriptor.properties and plugin-security.policy. All this is
# cached in target/opensearch-jars, which is the node's (read-only) home.
# Needs java 17+ (OpenSearch 3.x would need 21) and mvn.
# OPENSEARCH_HEAP (default 512m) sets the JVM heap, -Xms and -Xmx.
# OPENSEARCH_READY_TIMEOUT (default 120) is how long start waits, in
# seconds, for the cluster health to be yellow or green.
#
# OpenSearch refuses to run as root: as root the node runs as `nobody`,
# which owns the state dir's config, data, logs and tmp.
#
# Several starts may run at once: the jar fetch is serialised by a lock next
# to the jars (and the jars appear whole, or not at all), and each state dir
# has a lock of its own for configure and start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_OPENSEARCH_DIR:-$ROOT/target/opensearch}
JARS=$ROOT/target/opensearch-jars
JARS_LOCK=$JARS.lock
SPEC=$ROOT/scripts/opensearch
HEAP=${OPENSEARCH_HEAP:-512m}
READY_TIMEOUT=${OPENSEARCH_READY_TIMEOUT:-120}
MODULES=(transport-netty4 lang-painless analysis-common reindex)

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=opensearch.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"



url() { cat "$STATE/url"; }

# The jars are current when their stamp is newer than every file that
# describes them (the poms, descriptors and policies).
jars_ready() {
  [[ -f $JARS/.stamp ]] || return 1
  [[ -z $(find "$SPEC" -type f -newer "$JARS/.stamp" -print -quit) ]]
}

# mvn dependency:copy-dependencies of the pom in $1 into $2.
copy_deps() {
  local log
  if ! log=$(cd "$1" && mvn -q -B dependency:copy-dependencies \
      -DoutputDirectory="$2" -DincludeScope=runtime 2>&1); then
    printf '%s\n' "$log" >&2
    return 1
  fi
}

# Leaves fd 8 holding a shared lock on $JARS_LOCK: no fetch replaces the
# jars while this command configures and starts a node with them.
jars() {
  mkdir -p "$(dirname "$JARS")"
  exec 8> "$JARS_LOCK"
  flock -s 8
  jars_ready && return
  flock 8
  # another start may have fetched them while this one waited
  if ! jars_ready; then
    command -v mvn >/dev/null || die "mvn not found on PATH (apt-get install maven)"
    local tmp=$JARS.fetch.$$ m j
    rm -rf "$tmp"
    mkdir -p "$tmp/bin" "$tmp/plugins"
    copy_deps "$SPEC" "$tmp/lib" \
      || { rm -rf "$tmp"; die "fetching the server's jars with mvn failed"; }
    for m in "${MODULES[@]}"; do
      copy_deps "$SPEC/modules/$m" "$tmp/modules/$m" \
        || { rm -rf "$tmp"; die "fetching the module $m with mvn failed"; }
      for j in "$tmp/modules/$m"/*.jar; do
        if [[ -e $tmp/lib/$(basename "$j") ]]; then rm "$j"; fi
      done
      cp "$SPEC/modules/$m/plugin-descriptor.properties" \
        "$SPEC/modules/$m/plugin-security.policy" "$tmp/modules/$m/"
    done
    touch "$tmp/.stamp"
    # the directory appears with its stamp in one rename
    rm -rf "$JARS"
    mv "$tmp" "$JARS"
  fi
  flock -s 8
}


configure() {
  [[ -f $STATE/config/opensearch.yml ]] && return
  local http transport
  http=$(free_port); transport=$(free_port)
  while [[ $transport == "$http" ]]; do transport=$(free_port); done
  mkdir -p "$STATE/config" "$STATE/data" "$STATE/logs" "$STATE/tmp"
  cat > "$STATE/config/log4j2.properties" <<'PROPS'
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:opensearch.logs.base_path}${sys:file.separator}opensearch.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d{ISO8601}][%-5p][%c{1.}] %m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
PROPS
  # Written last: its presence means the state dir is configured.
  cat > "$STATE/config/opensearch.yml.tmp" <<YML
cluster.name: logferry-test
node.name: node-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $http
transport.port: $transport
path.data: $STATE/data
path.logs: $STATE/logs
# Tests may run on a nearly full disk: never turn indices read-only for it.
cluster.routing.allocation.disk.threshold_enabled: false
# Every test makes indices of its own, and the shared node outlives runs.
cluster.max_shards_per_node: 100000
YML
  echo "http://127.0.0.1:$http" > "$STATE/url"
  mv "$STATE/config/opensearch.yml.tmp" "$STATE/config/opensearch.yml"
}

# The cluster health, or nothing if the node does not answer.
health() {
  curl -s --max-time 5 "$(url)/_cluster/health" 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null || true
}

# Waits until the running node's cluster health is yellow or green. A node
# that is not ready in time is stopped: no half-started node stays behind.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT)) status
  while :; do
    status=$(health)
    [[ $status == green || $status == yellow ]] && return
    if ! running; then
      tail -n 30 "$STATE/stdout.log" "$STATE/logs/opensearch.log" >&2 2>/dev/null || true
      rm -f "$STATE/pid"
      die "the node exited during start-up (see $STATE/logs/opensearch.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/logs/opensearch.log" >&2 2>/dev/null || true
      stop
      die "the node was not yellow or green after ${READY_TIMEOUT}s (health: ${status:-no answer}; see $STATE/logs/opensearch.log); stopped it"
    fi
    sleep 0.3
  done
}

start() {
  if running; then wait_ready; url; return; fi
  jars
  configure
  local -a as=()
  if [[ $(id -u) == 0 ]]; then
    # OpenSearch refuses to run as root. The state dir may be a private
    # temporary dir (mode 0700): nobody must be able to pass through it.
    chmod a+x "$STATE"
    chown -R nobody:nogroup "$STATE/config" "$STATE/data" "$STATE/logs" "$STATE/tmp"
    as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  fi
  # readiness is read from the health API, failures from the logs: start
  # them afresh
  [[ -f $STATE/logs/opensearch.log ]] && mv "$STATE/logs/opensearch.log" "$STATE/logs/opensearch.log.1"
  : > "$STATE/stdout.log"
  # setsid: the node outlives the shell (and test process) that started it
  setsid "${as[@]}" java -Xms"$HEAP" -Xmx"$HEAP" \
    -XX:+UseG1GC -Xss1m -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
    -Djna.nosys=true -Dlog4j2.disable.jmx=true -Dlog4j.shutdownHookEnabled=false \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
    -Dio.netty.recycler.maxCapacityPerThread=0 \
    -Djava.io.tmpdir="$STATE/tmp" \
    -Dopensearch.path.home="$JARS" -Dopensearch.path.conf="$STATE/config" \
    -Dopensearch.distribution.type=tar -Dopensearch.bundled_jdk=false \
    -cp "$JARS/lib/*" org.opensearch.bootstrap.OpenSearch \
    >> "$STATE/stdout.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$STATE/pid"
  wait_ready
  url
}

stop() { stop_server 0.3; }

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && url || { echo "opensearch.sh: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) jars ;;
  *) echo "usage: $0 start|stop|status|clean|fetch" >&2; exit 2 ;;
esac
