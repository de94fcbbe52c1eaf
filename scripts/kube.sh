#!/usr/bin/env bash
# A real Kubernetes API server (kube-apiserver v1.37.2 over etcd v3.6.16)
# on 127.0.0.1, without kubelet, scheduler or controller-manager, for the
# kubernetes source's tests: they create, label and delete pods through its
# REST API and write the kubelet's log layout themselves.
#
#   scripts/kube.sh start     start (or find running), wait for /readyz and
#                             print, one a line:
#                               url=https://127.0.0.1:PORT
#                               admin_token=...     (group system:masters)
#                               agent_token=...     (user log-agent, no rights
#                                                    until a role is bound)
#                               ca=STATE/certs/apiserver.crt
#   scripts/kube.sh stop      stop the API server, then etcd; the state stays
#   scripts/kube.sh status    print the same and exit 0 if both run, else exit 1
#   scripts/kube.sh clean     stop and delete the state (etcd data included)
#   scripts/kube.sh fetch     only build the two binaries
#   scripts/kube.sh compact   compact etcd to its current revision, so a watch
#                             from an older resourceVersion gets 410 Gone
#                             (KUBE_ETCD_COMPACT=1 at start does the same
#                             once the server is ready)
#
# State (service-account keys, tokens.csv, the API server's self-signed
# certificate in certs/, ports; etcd/ with its data, log and pid;
# apiserver/ with its log and pid) lives in $LOGFERRY_KUBE_DIR, default
# target/kube. Several servers can run at once with different dirs. The
# first start picks three free ports (etcd client, etcd peer, API server)
# below the ephemeral range and keeps them, so a stopped server comes back
# on the same address, with its objects.
#
# The binaries are built from Go modules (no prebuilt one can be fetched):
# scripts/kube/apiserver and scripts/kube/etcd are wrapper modules that pin
# k8s.io/kubernetes v1.37.2 (with its 33 staging modules at v0.37.2) and
# go.etcd.io/etcd/server/v3 v3.6.16. They are cached outside the clone, in
# ${LOGFERRY_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/logferry}/kube-v1.37.2,
# so a fresh clone reuses them, and rebuilt when a file under scripts/kube
# changes (a hash of them is kept beside the binaries). A cold build takes
# five to ten minutes on two cores; it runs at nice 19, KUBE_GO_JOBS (default
# 2) packages at a time (1 on a machine busy with other builds).
# Needs go, openssl, curl and python3. KUBE_READY_TIMEOUT (default 120) is
# how long start waits, in seconds, for each of etcd's /health and the API
# server's /readyz.
#
# Several starts may run at once: the build is serialised by a lock beside
# the binaries (which appear whole, by a rename), and each state dir has a
# lock of its own.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_KUBE_DIR:-$ROOT/target/kube}
VERSION=v1.37.2
CACHE=${LOGFERRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/logferry}
BIN=$CACHE/kube-$VERSION
BIN_LOCK=$BIN.lock
SPEC=$ROOT/scripts/kube
READY_TIMEOUT=${KUBE_READY_TIMEOUT:-120}
ADMIN_TOKEN=logferry-admin-token
AGENT_TOKEN=logferry-agent-token

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=kube.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"

# What the binaries are built from: every file of the wrapper modules.
spec_hash() {
  (cd "$SPEC" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

bin_ready() {
  [[ -x $BIN/etcd && -x $BIN/kube-apiserver && -f $BIN/spec.sha256 ]] &&
    [[ $(cat "$BIN/spec.sha256") == "$(spec_hash)" ]]
}

# Leaves fd 8 holding a shared lock on $BIN_LOCK: no build replaces the
# binaries while this command starts a server with them.
build() {
  mkdir -p "$CACHE"
  exec 8> "$BIN_LOCK"
  flock -s 8
  bin_ready && return
  flock 8
  # another start may have built them while this one waited
  if ! bin_ready; then
    [[ -x /usr/local/go/bin/go ]] && PATH=/usr/local/go/bin:$PATH
    command -v go >/dev/null || die "go not found on PATH (1.26 or later)"
    local tmp=$BIN.build.$$ log v=k8s.io/component-base/version
    rm -rf "$tmp"; mkdir -p "$tmp"
    # the module dirs are copied so that a build writes nothing into the clone
    cp -r "$SPEC/etcd" "$SPEC/apiserver" "$tmp/"
    echo "$NAME: building etcd and kube-apiserver $VERSION (about six minutes the first time)" >&2
    if ! log=$(cd "$tmp/etcd" && GOFLAGS="-buildvcs=false -p=${KUBE_GO_JOBS:-2}" CGO_ENABLED=0 \
      nice -n 19 go build -trimpath -ldflags "-s -w" -o "$tmp/bin/etcd" . 2>&1); then
      printf '%s\n' "$log" >&2; rm -rf "$tmp"
      die "building etcd (scripts/kube/etcd) with go failed"
    fi
    # -X: /version says v1.37.2 rather than v0.0.0-master
    if ! log=$(cd "$tmp/apiserver" && GOFLAGS="-buildvcs=false -p=${KUBE_GO_JOBS:-2}" nice -n 19 go build -trimpath \
      -ldflags "-s -w -X $v.gitVersion=$VERSION -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean" \
      -o "$tmp/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver 2>&1); then
      printf '%s\n' "$log" >&2; rm -rf "$tmp"
      die "building kube-apiserver (scripts/kube/apiserver) with go failed"
    fi
    spec_hash > "$tmp/bin/spec.sha256"
    rm -rf "$BIN.old"
    [[ -d $BIN ]] && mv "$BIN" "$BIN.old"
    mv "$tmp/bin" "$BIN"
    rm -rf "$tmp" "$BIN.old"
  fi
  flock -s 8
}

port() { sed -n "s/^$1=//p" "$STATE/ports"; }
url() { echo "https://127.0.0.1:$(port apiserver)"; }
etcd_url() { echo "http://127.0.0.1:$(port etcd_client)"; }

addresses() {
  printf 'url=%s\nadmin_token=%s\nagent_token=%s\nca=%s\n' \
    "$(url)" "$ADMIN_TOKEN" "$AGENT_TOKEN" "$STATE/certs/apiserver.crt"
}

# Ports are picked at the first start and kept; keys and tokens too.
configure() {
  if [[ ! -f $STATE/ports ]]; then
    local a b c
    a=$(free_port); b=$(free_port); c=$(free_port)
    while [[ $b == "$a" ]]; do b=$(free_port); done
    while [[ $c == "$a" || $c == "$b" ]]; do c=$(free_port); done
    printf 'etcd_client=%s\netcd_peer=%s\napiserver=%s\n' "$a" "$b" "$c" > "$STATE/ports.tmp"
    mv "$STATE/ports.tmp" "$STATE/ports"
  fi
  mkdir -p "$STATE/certs"
  if [[ ! -f $STATE/sa.pub ]]; then
    openssl genrsa -out "$STATE/sa.key.tmp" 2048 2>/dev/null
    openssl rsa -in "$STATE/sa.key.tmp" -pubout -out "$STATE/sa.pub.tmp" 2>/dev/null
    mv "$STATE/sa.key.tmp" "$STATE/sa.key"
    mv "$STATE/sa.pub.tmp" "$STATE/sa.pub"
  fi
  # token,user,uid,"groups"
  printf '%s\n' "$ADMIN_TOKEN,admin,admin-uid,system:masters" \
    "$AGENT_TOKEN,log-agent,log-agent-uid" > "$STATE/tokens.csv"
}

# Each server has a dir of its own under $STATE (pid, log), so that
# service.sh's running and stop_server serve both.
etcd_running() { STATE=$STATE/etcd running; }
apiserver_running() { STATE=$STATE/apiserver running; }

etcd_healthy() { curl -sf --max-time 2 "$(etcd_url)/health" >/dev/null 2>&1; }
apiserver_ready() {
  [[ $(curl -sk --max-time 2 -H "Authorization: Bearer $ADMIN_TOKEN" "$(url)/readyz" 2>/dev/null) == ok ]]
}

# Waits for $2 (a check) while process $1 (etcd or apiserver) runs. One that
# does not answer in time is stopped: no half-started server stays behind.
wait_for() {
  local what=$1 check=$2 deadline=$((SECONDS + READY_TIMEOUT))
  while ! $check; do
    if ! ${what}_running; then
      tail -n 30 "$STATE/$what/$what.log" >&2 2>/dev/null || true
      rm -f "$STATE/$what/pid"; stop
      die "$what exited during start-up (see $STATE/$what/$what.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/$what/$what.log" >&2 2>/dev/null || true
      stop
      die "$what did not answer after ${READY_TIMEOUT}s (see $STATE/$what/$what.log); stopped it"
    fi
    sleep 0.1
  done
}

start_etcd() {
  local dir=$STATE/etcd client peer
  mkdir -p "$dir"
  [[ -f $dir/etcd.log ]] && mv "$dir/etcd.log" "$dir/etcd.log.1"
  client=$(etcd_url); peer=http://127.0.0.1:$(port etcd_peer)
  # setsid: the server outlives the shell (and test process) that started it
  setsid "$BIN/etcd" --name logferry --data-dir "$dir/data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "logferry=$peer" --log-level warn \
    > "$dir/etcd.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$dir/pid"
  wait_for etcd etcd_healthy
}

# Why the flags: --endpoint-reconciler-type=none, because the reconciler
# refuses a loopback advertise address; --cert-dir without a certificate,
# so the server writes a self-signed one there; ServiceAccount admission off,
# because no controller-manager creates the `default` account pods need.
start_apiserver() {
  local dir=$STATE/apiserver
  mkdir -p "$dir"
  [[ -f $dir/apiserver.log ]] && mv "$dir/apiserver.log" "$dir/apiserver.log.1"
  setsid "$BIN/kube-apiserver" \
    --etcd-servers="$(etcd_url)" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$(port apiserver)" \
    --endpoint-reconciler-type=none \
    --cert-dir="$STATE/certs" \
    --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$STATE/sa.pub" \
    --service-account-signing-key-file="$STATE/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --disable-admission-plugins=ServiceAccount \
    > "$dir/apiserver.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$dir/pid"
  wait_for apiserver apiserver_ready
}

start() {
  if etcd_running && apiserver_running; then
    wait_for apiserver apiserver_ready
  else
    build
    configure
    etcd_running || start_etcd
    apiserver_running || start_apiserver
  fi
  [[ ${KUBE_ETCD_COMPACT:-} == 1 ]] && compact >/dev/null
  addresses
}

# etcd's v3 JSON gateway: the current revision from a range's header, then
# a physical compaction to it (int64s travel as JSON strings there).
compact() {
  etcd_running || die "etcd is not running"
  local rev
  rev=$(curl -sf --max-time 10 -X POST -d '{"key":"AA=="}' "$(etcd_url)/v3/kv/range" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])') ||
    die "could not read etcd's revision"
  curl -sf --max-time 60 -X POST -d "{\"revision\":\"$rev\",\"physical\":true}" \
    "$(etcd_url)/v3/kv/compaction" >/dev/null || die "compacting etcd to revision $rev failed"
  echo "revision=$rev"
}

# The API server first: etcd going first would make it log errors and
# fail its watches.
stop() {
  STATE=$STATE/apiserver stop_server 0.1
  STATE=$STATE/etcd stop_server 0.1
}

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) etcd_running && apiserver_running && [[ -f $STATE/ports ]] && addresses ||
    { echo "kube.sh: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) build ;;
  compact) compact ;;
  *) echo "usage: $0 start|stop|status|clean|fetch|compact" >&2; exit 2 ;;
esac
