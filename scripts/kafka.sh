#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft: broker and controller in one JVM)
# on 127.0.0.1, for logferry's Kafka tests and for trying the Kafka sink.
#
#   scripts/kafka.sh start    start (or find running) and print the bootstrap address
#   scripts/kafka.sh stop     stop it; its data stays for the next start
#   scripts/kafka.sh status   print the address and exit 0 if it runs, else exit 1
#   scripts/kafka.sh ssl-address  print the address of the SSL listener
#   scripts/kafka.sh clean    stop it and delete its data
#   scripts/kafka.sh fetch    only fetch the broker's jars
#
# State (config, data, log, pid, address) lives in $LOGFERRY_KAFKA_DIR,
# default target/kafka. Several brokers can run at once with different dirs.
# The first start picks free ports and keeps them, so a stopped broker comes
# back on the same address with the same topics.
# The broker's jars come from Maven Central (scripts/kafka/pom.xml) and are
# cached in target/kafka-jars. Needs java 17+ and mvn.
# KAFKA_HEAP (default -Xmx1g) sets the JVM heap. Records are kept whatever
# the time they carry (no retention by age), so a record stamped with an old
# event time is still there to be read back.
#
# KAFKA_SSL_DIR, if set at the first start of a state dir, adds an SSL
# listener (its address: `ssl-address`) presenting $KAFKA_SSL_DIR/server.pem
# with the key $KAFKA_SSL_DIR/server.key (PKCS#8 PEM), and trusting client
# certificates signed by $KAFKA_SSL_DIR/ca.pem. KAFKA_SSL_CLIENT_AUTH
# (default required) is the listener's ssl.client.auth: required, requested
# or none. The PLAINTEXT listener stays, for the broker itself and for tools.
#
# Several starts may run at once: the jar fetch is serialised by a lock next
# to the jars (and the jars appear whole, or not at all), and each state dir
# has a lock of its own for configure, format and start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_KAFKA_DIR:-$ROOT/target/kafka}
JARS=$ROOT/target/kafka-jars
JARS_LOCK=$JARS.lock
POM=$ROOT/scripts/kafka/pom.xml
HEAP=${KAFKA_HEAP:--Xmx1g}
READY_TIMEOUT=${KAFKA_READY_TIMEOUT:-90}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

die() { echo "kafka.sh: $*" >&2; exit 1; }

running() {
  [[ -f $STATE/pid ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null
}

address() { cat "$STATE/address"; }

jars_ready() {
  [[ -f $JARS/.stamp && $JARS/.stamp -nt $POM ]]
}

# Leaves fd 8 holding a shared lock on $JARS_LOCK: no fetch replaces the
# jars while this command formats and starts a broker with them.
jars() {
  mkdir -p "$(dirname "$JARS")"
  exec 8> "$JARS_LOCK"
  flock -s 8
  jars_ready && return
  flock 8
  # another start may have fetched them while this one waited
  if ! jars_ready; then
    command -v mvn >/dev/null || die "mvn not found on PATH (apt-get install maven)"
    local tmp=$JARS.fetch.$$ log
    rm -rf "$tmp"
    if ! log=$(cd "$ROOT/scripts/kafka" && mvn -q -B dependency:copy-dependencies \
        -DoutputDirectory="$tmp" -DincludeScope=runtime 2>&1); then
      printf '%s\n' "$log" >&2
      rm -rf "$tmp"
      die "fetching the broker's jars with mvn failed"
    fi
    touch "$tmp/.stamp"
    # the directory appears with its stamp in one rename
    rm -rf "$JARS"
    mv "$tmp" "$JARS"
  fi
  flock -s 8
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The SSL listener's settings (KAFKA_SSL_DIR), in PEM as Kafka reads it:
# the key and its certificate chain in one keystore file.
ssl_properties() {
  local dir=$1 f
  for f in ca.pem server.pem server.key; do
    [[ -r $dir/$f ]] || die "KAFKA_SSL_DIR=$dir has no readable $f (needs ca.pem, server.pem, server.key)"
  done
  local auth=${KAFKA_SSL_CLIENT_AUTH:-required}
  [[ $auth =~ ^(required|requested|none)$ ]] \
    || die "KAFKA_SSL_CLIENT_AUTH=$auth: use required, requested or none"
  cat "$dir/server.key" "$dir/server.pem" > "$STATE/ssl-keystore.pem"
  cp "$dir/ca.pem" "$STATE/ssl-truststore.pem"
  cat <<PROPS
listener.name.ssl.ssl.keystore.type=PEM
listener.name.ssl.ssl.keystore.location=$STATE/ssl-keystore.pem
listener.name.ssl.ssl.truststore.type=PEM
listener.name.ssl.ssl.truststore.location=$STATE/ssl-truststore.pem
listener.name.ssl.ssl.client.auth=$auth
PROPS
}

configure() {
  if [[ -f $STATE/server.properties ]]; then
    # a state dir made before the retention line below was written
    grep -q '^log.retention.ms=' "$STATE/server.properties" \
      || echo 'log.retention.ms=-1' >> "$STATE/server.properties"
    return
  fi
  local port ctl ssl='' sslprops='' listeners advertised map
  port=$(free_port); ctl=$(free_port)
  while [[ $ctl == "$port" ]]; do ctl=$(free_port); done
  listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctl"
  advertised="PLAINTEXT://127.0.0.1:$port"
  map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  rm -f "$STATE/ssl_address"
  if [[ -n ${KAFKA_SSL_DIR:-} ]]; then
    ssl=$(free_port)
    while [[ $ssl == "$port" || $ssl == "$ctl" ]]; do ssl=$(free_port); done
    listeners+=",SSL://127.0.0.1:$ssl"
    advertised+=",SSL://127.0.0.1:$ssl"
    map+=",SSL:SSL"
    sslprops=$(ssl_properties "$KAFKA_SSL_DIR")
  fi
  mkdir -p "$STATE/data"
  cat > "$STATE/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctl
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$map
log.dirs=$STATE/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
default.replication.factor=1
group.initial.rebalance.delay.ms=0
message.max.bytes=1048588
# records carry the time of their event (a replay's, a test's fixed 2023
# time): none is deleted for its age, which the 7-day default would do at
# the next retention check, minutes after it was produced
log.retention.ms=-1
PROPS
  [[ -z $sslprops ]] || printf '%s\n' "$sslprops" >> "$STATE/server.properties"
  cat > "$STATE/log4j2.properties" <<PROPS
appender.file.type=File
appender.file.name=file
appender.file.fileName=$STATE/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
logger.kafka.name=kafka
logger.kafka.level=INFO
logger.state.name=state.change.logger
logger.state.level=WARN
PROPS
  echo "127.0.0.1:$port" > "$STATE/address"
  [[ -z $ssl ]] || echo "127.0.0.1:$ssl" > "$STATE/ssl_address"
  java -cp "$JARS/*" -Dlog4j2.configurationFile="$STATE/log4j2.properties" \
    kafka.tools.StorageTool format --cluster-id="$(cluster_id)" \
    -c "$STATE/server.properties" > "$STATE/format.log" 2>&1 \
    || { cat "$STATE/format.log" >&2; rm -f "$STATE/server.properties"; die "formatting the broker's storage failed"; }
}

# A new cluster id: 16 random bytes, URL-safe base64 without padding, as
# Kafka's own. Passed as `--cluster-id=…`: one in 64 starts with `-`,
# which the tool's parser would take for an option.
cluster_id() {
  python3 -c 'import uuid,base64;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))'
}

start() {
  if running; then address; return; fi
  jars
  configure
  local port; port=$(address); port=${port##*:}
  # readiness is read from the logs: start them afresh
  [[ -f $STATE/broker.log ]] && mv "$STATE/broker.log" "$STATE/broker.log.1"
  : > "$STATE/stdout.log"
  # setsid: the broker outlives the shell (and test process) that started it
  setsid java $HEAP -cp "$JARS/*" \
    -Dlog4j2.configurationFile="$STATE/log4j2.properties" \
    kafka.Kafka "$STATE/server.properties" >> "$STATE/stdout.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$STATE/pid"
  local deadline=$((SECONDS + READY_TIMEOUT))
  until grep -q 'Kafka Server started' "$STATE/broker.log" "$STATE/stdout.log" 2>/dev/null \
      && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! running; then
      tail -n 20 "$STATE/stdout.log" "$STATE/broker.log" >&2 2>/dev/null || true
      die "the broker exited during start-up (see $STATE/broker.log)"
    fi
    ((SECONDS < deadline)) || die "the broker was not ready after ${READY_TIMEOUT}s (see $STATE/broker.log)"
    sleep 0.3
  done
  address
}

stop() {
  running || { rm -f "$STATE/pid"; return 0; }
  local pid; pid=$(cat "$STATE/pid")
  kill "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.3; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  rm -f "$STATE/pid"
}

# One command at a time per state dir: concurrent test binaries or threads
# asking for the same broker must not start two.
exec 9> "$STATE/.lock"
flock 9

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && address || { echo "kafka.sh: not running" >&2; exit 1; } ;;
  ssl-address) [[ -f $STATE/ssl_address ]] && cat "$STATE/ssl_address" \
      || die "no SSL listener in $STATE (set KAFKA_SSL_DIR at its first start)" ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) jars ;;
  *) echo "usage: $0 start|stop|status|ssl-address|clean|fetch" >&2; exit 2 ;;
esac
