#!/usr/bin/env bash
# An OpenTelemetry Collector on 127.0.0.1 that receives OTLP logs (HTTP
# and gRPC) and writes them as OTLP-JSON lines to a file, for logferry's
# OTLP tests and for trying the otlp sink.
#
#   scripts/otelcol.sh start    start (or find running) and print its two
#                               addresses, one a line:
#                                 http=http://127.0.0.1:PORT   (OTLP/HTTP base URL)
#                                 grpc=127.0.0.1:PORT          (OTLP/gRPC host:port)
#   scripts/otelcol.sh stop     stop it; its file stays for the next start
#   scripts/otelcol.sh status   print the addresses and exit 0 if it runs, else exit 1
#   scripts/otelcol.sh clean    stop it and delete its state (file included)
#   scripts/otelcol.sh fetch    only build the collector
#
# The received logs are in $STATE/out.jsonl: one line per export request,
# an OTLP-JSON `{"resourceLogs": [...]}` object, appended within 100 ms
# (the file exporter's flush_interval). A restart appends to it.
# OTELCOL_WRITE_THROUGH=1 at start: every export request is written to
# the file before it is answered (scripts/otelcol/write-through.yaml), so
# one killed with SIGKILL loses nothing it acknowledged.
# OTELCOL_OVERLAY=FILE at start: a config file merged over the others
# (TLS on the gRPC receiver, say). Each start reads both anew.
#
# State (config, out.jsonl, log, pid, addresses) lives in
# $LOGFERRY_OTELCOL_DIR, default target/otelcol. Several collectors can run
# at once with different dirs. The first start picks two free ports and
# keeps them, so a stopped collector comes back on the same addresses.
#
# The collector is built from Go modules (no prebuilt binary can be
# fetched): scripts/otelcol/main.go links the core OTLP receiver and the
# contrib file exporter, v0.161.0; confmap, its providers and featuregate
# are pinned in go.mod at v1.67.0, the core release that goes with it
# (`go get -u` or a tidy that lifts them to a later one breaks the build).
# The binary is cached in target/otelcol-bin and rebuilt when main.go,
# go.mod or go.sum change (a cold build takes about two minutes). Needs go
# and the Go module proxy; curl for the readiness check.
# OTELCOL_READY_TIMEOUT (default 60) is how long start waits, in seconds,
# for the OTLP/HTTP receiver to answer.
#
# Several starts may run at once: the build is serialised by a lock beside
# the binary (which appears whole, by a rename), and each state dir has a
# lock of its own for configure and start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_OTELCOL_DIR:-$ROOT/target/otelcol}
BIN=$ROOT/target/otelcol-bin
BIN_LOCK=$BIN.lock
SPEC=$ROOT/scripts/otelcol
READY_TIMEOUT=${OTELCOL_READY_TIMEOUT:-60}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=otelcol.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"



addresses() { cat "$STATE/addresses"; }
http_url() { sed -n 's/^http=//p' "$STATE/addresses"; }

# The binary is current when it is newer than its sources (the config
# template is read at start, not built in).
bin_ready() {
  [[ -x $BIN ]] || return 1
  [[ -z $(find "$SPEC" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) \
    -newer "$BIN" -print -quit) ]]
}

# Leaves fd 8 holding a shared lock on $BIN_LOCK: no build replaces the
# binary while this command starts a collector with it.
build() {
  mkdir -p "$(dirname "$BIN")"
  exec 8> "$BIN_LOCK"
  flock -s 8
  bin_ready && return
  flock 8
  # another start may have built it while this one waited
  if ! bin_ready; then
    command -v go >/dev/null || die "go not found on PATH (apt-get install golang-go)"
    local tmp=$BIN.build.$$ log
    if ! log=$(cd "$SPEC" && go build -trimpath -o "$tmp" . 2>&1); then
      printf '%s\n' "$log" >&2
      rm -f "$tmp"
      die "building the collector (scripts/otelcol) with go failed"
    fi
    mv "$tmp" "$BIN"
  fi
  flock -s 8
}


# Picks the ports at the first start and keeps them; the config is made
# from the template at every start, so a changed template takes effect on
# the next one.
configure() {
  if [[ ! -f $STATE/addresses ]]; then
    local http grpc
    http=$(free_port); grpc=$(free_port)
    while [[ $grpc == "$http" ]]; do grpc=$(free_port); done
    printf 'http=http://127.0.0.1:%s\ngrpc=127.0.0.1:%s\n' "$http" "$grpc" > "$STATE/addresses.tmp"
    mv "$STATE/addresses.tmp" "$STATE/addresses"
  fi
  local http_port grpc_port
  http_port=$(sed -n 's/^http=.*://p' "$STATE/addresses")
  grpc_port=$(sed -n 's/^grpc=.*://p' "$STATE/addresses")
  sed -e "s|@HTTP_PORT@|$http_port|" -e "s|@GRPC_PORT@|$grpc_port|" -e "s|@OUT@|$STATE/out.jsonl|" \
    "$SPEC/config.yaml" > "$STATE/config.yaml"
}

# Whether the OTLP/HTTP receiver takes an (empty) export request.
answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST \
    -H 'Content-Type: application/json' -d '{}' "$(http_url)/v1/logs" 2>/dev/null) == 200 ]]
}

# Waits until the running collector answers. One that does not in time is
# stopped: no half-started collector stays behind.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  while ! answers; do
    if ! running; then
      tail -n 30 "$STATE/otelcol.log" >&2 2>/dev/null || true
      rm -f "$STATE/pid"
      die "the collector exited during start-up (see $STATE/otelcol.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/otelcol.log" >&2 2>/dev/null || true
      stop
      die "the collector did not answer after ${READY_TIMEOUT}s (see $STATE/otelcol.log); stopped it"
    fi
    sleep 0.05
  done
}

start() {
  if running; then wait_ready; addresses; return; fi
  build
  configure
  [[ -f $STATE/otelcol.log ]] && mv "$STATE/otelcol.log" "$STATE/otelcol.log.1"
  local configs=(--config "file:$STATE/config.yaml")
  # a later --config is merged over the earlier ones
  [[ ${OTELCOL_WRITE_THROUGH:-} == 1 ]] && configs+=(--config "file:$SPEC/write-through.yaml")
  [[ -n ${OTELCOL_OVERLAY:-} ]] && configs+=(--config "file:$OTELCOL_OVERLAY")
  # setsid: the collector outlives the shell (and test process) that started it
  setsid "$BIN" "${configs[@]}" \
    > "$STATE/otelcol.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$STATE/pid"
  wait_ready
  addresses
}

stop() { stop_server 0.1; }

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && addresses || { echo "otelcol.sh: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) build ;;
  *) echo "usage: $0 start|stop|status|clean|fetch" >&2; exit 2 ;;
esac
