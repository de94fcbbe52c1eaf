#!/usr/bin/env bash
# A single-node VictoriaLogs v1.52.2 server on 127.0.0.1, for the loki and
# splunk_hec sinks' tests: it takes Loki's push API (JSON and protobuf) and
# Splunk HEC, and answers LogsQL queries to read back what it stored.
#
#   scripts/victorialogs.sh start    start (or find running) and print the base URL
#   scripts/victorialogs.sh stop     stop it; its data stays for the next start
#   scripts/victorialogs.sh status   print the base URL and exit 0 if it runs, else exit 1
#   scripts/victorialogs.sh clean    stop it and delete its data
#   scripts/victorialogs.sh fetch    only build the server
#
# Pushes: {URL}/insert/loki/api/v1/push (always with a Content-Type: one
# without is read as a form, answered 200 and nothing is stored),
# {URL}/services/collector/event (HEC; the token is not checked).
# Queries: {URL}/select/logsql/query?query=... (one JSON object a line).
# Rows become searchable about a second after their push.
#
# State (data, log, pid, URL) lives in $LOGFERRY_VICTORIALOGS_DIR, default
# target/victorialogs. Several servers can run at once with different dirs.
# The first start picks a free port below the ephemeral range and keeps it,
# so a stopped server comes back on the same URL with its data (and no
# outgoing connection takes the port while it is stopped).
#
# The server is built from Go modules (no prebuilt binary is fetched):
# scripts/victorialogs is a wrapper module that pins
# github.com/VictoriaMetrics/VictoriaLogs v1.52.2. The binary is cached
# outside the clone, in
# ${LOGFERRY_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/logferry}/victorialogs-v1.52.2,
# so a fresh clone reuses it, and rebuilt when a file under
# scripts/victorialogs changes (a hash of them is kept beside it). A cold
# build takes about 30 s; it runs at nice 19, one package at a time.
# Needs go (1.26 or later), curl and python3. VICTORIALOGS_READY_TIMEOUT
# (default 60) is how long start waits, in seconds, for /health.
#
# Several starts may run at once: the build is serialised by a lock beside
# the binary (which appears whole, by a rename), and each state dir has a
# lock of its own.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_VICTORIALOGS_DIR:-$ROOT/target/victorialogs}
VERSION=v1.52.2
CACHE=${LOGFERRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/logferry}
BIN=$CACHE/victorialogs-$VERSION
BIN_LOCK=$BIN.lock
SPEC=$ROOT/scripts/victorialogs
READY_TIMEOUT=${VICTORIALOGS_READY_TIMEOUT:-60}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=victorialogs.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"

url() { cat "$STATE/url"; }

# What the binary is built from: every file of the wrapper module.
spec_hash() {
  (cd "$SPEC" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

bin_ready() {
  [[ -x $BIN/victoria-logs && -f $BIN/spec.sha256 ]] &&
    [[ $(cat "$BIN/spec.sha256") == "$(spec_hash)" ]]
}

# Leaves fd 8 holding a shared lock on $BIN_LOCK: no build replaces the
# binary while this command starts a server with it.
build() {
  mkdir -p "$CACHE"
  exec 8> "$BIN_LOCK"
  flock -s 8
  bin_ready && return
  flock 8
  # another start may have built it while this one waited
  if ! bin_ready; then
    [[ -x /usr/local/go/bin/go ]] && PATH=/usr/local/go/bin:$PATH
    command -v go >/dev/null || die "go not found on PATH (1.26 or later)"
    local tmp=$BIN.build.$$ log
    rm -rf "$tmp"; mkdir -p "$tmp"
    # the module is copied so that a build writes nothing into the clone
    cp -r "$SPEC" "$tmp/src"
    echo "$NAME: building victoria-logs $VERSION (about 30 s the first time)" >&2
    # CGO_ENABLED=0: VictoriaMetrics' pure-Go zstd rather than cgo gozstd
    if ! log=$(cd "$tmp/src" && GOFLAGS="-buildvcs=false -p=1" CGO_ENABLED=0 nice -n 19 go build -trimpath \
      -ldflags "-s -w -X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version=victoria-logs-$VERSION" \
      -o "$tmp/bin/victoria-logs" github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs 2>&1); then
      printf '%s\n' "$log" >&2; rm -rf "$tmp"
      die "building victoria-logs (scripts/victorialogs) with go failed"
    fi
    spec_hash > "$tmp/bin/spec.sha256"
    rm -rf "$BIN.old"
    [[ -d $BIN ]] && mv "$BIN" "$BIN.old"
    mv "$tmp/bin" "$BIN"
    rm -rf "$tmp" "$BIN.old"
  fi
  flock -s 8
}

configure() {
  [[ -f $STATE/url ]] && return
  mkdir -p "$STATE/data"
  echo "http://127.0.0.1:$(free_port)" > "$STATE/url.tmp"
  mv "$STATE/url.tmp" "$STATE/url"
}

healthy() { [[ $(curl -s --max-time 2 "$(url)/health" 2>/dev/null) == OK ]]; }

# Waits until the running server answers /health. One that does not in
# time is stopped: no half-started server stays behind.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  while ! healthy; do
    if ! running; then
      tail -n 30 "$STATE/victorialogs.log" >&2 2>/dev/null || true
      rm -f "$STATE/pid"
      die "the server exited during start-up (see $STATE/victorialogs.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/victorialogs.log" >&2 2>/dev/null || true
      stop
      die "the server did not answer after ${READY_TIMEOUT}s (see $STATE/victorialogs.log); stopped it"
    fi
    sleep 0.05
  done
}

start() {
  if running; then wait_ready; url; return; fi
  build
  configure
  [[ -f $STATE/victorialogs.log ]] && mv "$STATE/victorialogs.log" "$STATE/victorialogs.log.1"
  # setsid: the server outlives the shell (and test process) that started it
  setsid "$BIN/victoria-logs" -httpListenAddr="$(url | sed 's|^http://||')" \
    -storageDataPath="$STATE/data" -retentionPeriod=100y \
    > "$STATE/victorialogs.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$STATE/pid"
  wait_ready
  url
}

stop() { stop_server 0.1; }

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && url || { echo "$NAME: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) build ;;
  *) echo "usage: $0 start|stop|status|clean|fetch" >&2; exit 2 ;;
esac
