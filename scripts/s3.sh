#!/usr/bin/env bash
# An S3-compatible server on 127.0.0.1 (s3s-fs, which keeps objects as plain
# files), for logferry's s3 sink tests and for trying the sink.
#
#   scripts/s3.sh start    start (or find running) and print the endpoint URL
#   scripts/s3.sh stop     stop it; its buckets and objects stay for the next start
#   scripts/s3.sh status   print the endpoint URL and exit 0 if it runs, else exit 1
#   scripts/s3.sh clean    stop it and delete its data
#   scripts/s3.sh fetch    only build s3s-fs
#
# Every request must be signed (SigV4) with the test credentials
#   access key  logferry          (S3_ACCESS_KEY overrides it)
#   secret key  logferry-secret   (S3_SECRET_KEY overrides it)
# and any region; path-style addressing (http://127.0.0.1:PORT/BUCKET/KEY).
# The first start's keys are kept with the state, as the port is.
#
# State lives in $LOGFERRY_S3_DIR, default target/s3: data/ is the server's
# root, where bucket B is the directory data/B and object K in it the file
# data/B/K; s3s-fs's own files (metadata, multipart parts, the uploads in
# progress: data/.bucket-<base64url(B)>.object-<base64url(K)>.upload-<ID>.metadata.json)
# are dot files in data/ itself. Several servers can run at once with
# different dirs. The first start picks a free port and keeps it, so a
# stopped server comes back on the same endpoint with the same objects.
#
# s3s-fs 0.14.1 (the last release that builds with our Rust; later ones
# need 1.96) is built from the Rust package registry with `cargo install --locked` into
# target/s3s-fs, niced and on one job so the machine stays usable: about
# four minutes cold. Needs cargo and the Rust package registry; curl for the readiness check.
# S3_READY_TIMEOUT (default 30) is how long start waits, in seconds, for
# the server to answer.
#
# Several starts may run at once: the build is serialised by a lock beside
# the binary (which appears whole: cargo install writes it last), and each
# state dir has a lock of its own for configure and start.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_S3_DIR:-$ROOT/target/s3}
INSTALL=$ROOT/target/s3s-fs
BIN=$INSTALL/bin/s3s-fs
BIN_LOCK=$INSTALL.lock
VERSION=0.14.1
READY_TIMEOUT=${S3_READY_TIMEOUT:-30}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=s3.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"



url() { cat "$STATE/url"; }

bin_ready() {
  [[ -x $BIN ]] && [[ $("$BIN" --version 2>/dev/null) == *" $VERSION" ]]
}

# Leaves fd 8 holding a shared lock on $BIN_LOCK: no build replaces the
# binary while this command starts a server with it.
build() {
  mkdir -p "$(dirname "$INSTALL")"
  exec 8> "$BIN_LOCK"
  flock -s 8
  bin_ready && return
  flock 8
  # another start may have built it while this one waited
  if ! bin_ready; then
    command -v cargo >/dev/null || die "cargo not found on PATH"
    local log
    # its own target dir under target/, so that a failed build is resumed
    if ! log=$(CARGO_BUILD_JOBS=1 CARGO_TARGET_DIR=$INSTALL.build nice -n 10 \
        cargo install s3s-fs --version "$VERSION" --locked --features binary \
        --root "$INSTALL" --force 2>&1); then
      printf '%s\n' "$log" | tail -n 40 >&2
      die "building s3s-fs $VERSION with cargo install failed"
    fi
    rm -rf "$INSTALL.build"
    bin_ready || die "cargo install left no s3s-fs $VERSION in $INSTALL/bin"
  fi
  flock -s 8
}


configure() {
  [[ -f $STATE/url ]] && return
  mkdir -p "$STATE/data"
  printf '%s\n%s\n' "${S3_ACCESS_KEY:-logferry}" "${S3_SECRET_KEY:-logferry-secret}" > "$STATE/keys"
  # Written last: its presence means the state dir is configured.
  echo "http://127.0.0.1:$(free_port)" > "$STATE/url.tmp"
  mv "$STATE/url.tmp" "$STATE/url"
}

# Whether the server answers HTTP at all (an unsigned request is refused
# with 403, which is an answer).
answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(url)/" 2>/dev/null) || true
  [[ $code =~ ^[1-5][0-9][0-9]$ ]]
}

# Waits until the running server answers. One that does not in time is
# stopped: no half-started server stays behind.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  while ! answers; do
    if ! running; then
      tail -n 30 "$STATE/s3s-fs.log" >&2 2>/dev/null || true
      rm -f "$STATE/pid"
      die "s3s-fs exited during start-up (see $STATE/s3s-fs.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/s3s-fs.log" >&2 2>/dev/null || true
      stop
      die "s3s-fs did not answer after ${READY_TIMEOUT}s (see $STATE/s3s-fs.log); stopped it"
    fi
    sleep 0.02
  done
}

start() {
  if running; then wait_ready; url; return; fi
  build
  configure
  local u port ak sk
  u=$(url); port=${u##*:}
  { read -r ak; read -r sk; } < "$STATE/keys"
  [[ -f $STATE/s3s-fs.log ]] && mv "$STATE/s3s-fs.log" "$STATE/s3s-fs.log.1"
  # setsid: the server outlives the shell (and test process) that started it
  RUST_LOG=${S3_LOG:-info} setsid "$BIN" --host 127.0.0.1 --port "$port" \
    --access-key "$ak" --secret-key "$sk" "$STATE/data" \
    > "$STATE/s3s-fs.log" 2>&1 < /dev/null 8>&- 9>&- &
  echo $! > "$STATE/pid"
  wait_ready
  url
}

stop() { stop_server 0.1; }

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && url || { echo "s3.sh: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  fetch) build ;;
  *) echo "usage: $0 start|stop|status|clean|fetch" >&2; exit 2 ;;
esac
