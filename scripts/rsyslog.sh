#!/usr/bin/env bash
# rsyslogd (Debian's rsyslog) on 127.0.0.1 as a syslog receiver, and as a
# forwarding sender, for logferry's syslog tests.
#
#   scripts/rsyslog.sh start    start (or find running) and print its
#                               addresses, one a line:
#                                 tcp=127.0.0.1:PORT   (imtcp: newline or octet-counted)
#                                 udp=127.0.0.1:PORT   (imudp)
#                                 tls=127.0.0.1:PORT   (imtcp over TLS, RFC 5425)
#                                 ca=PATH              (the CA of its TLS certificate)
#   scripts/rsyslog.sh stop     stop it; its file stays for the next start
#   scripts/rsyslog.sh status   print the addresses and exit 0 if it runs, else exit 1
#   scripts/rsyslog.sh clean    stop it and delete its state (file included)
#
# Every message received is appended to $STATE/out.jsonl as one JSON line
# of what rsyslog parsed: facility, severity, hostname, app_name, procid,
# msgid, structured_data (its text) and msg (scripts/rsyslog/rsyslog.conf).
# RSYSLOG_FORWARD_UDP=HOST:PORT at start: every message received is also
# forwarded over UDP there, as `*.* @HOST:PORT` does (RFC 3164 layout,
# rsyslog's default for forwarding).
#
# State (config, out.jsonl, log, pid, addresses) lives in
# $LOGFERRY_RSYSLOG_DIR, default target/rsyslog. Several can run at once
# with different dirs. The first start picks free ports below the
# kernel's ephemeral range (so no outgoing connection is given one while
# the server is stopped) and keeps them.
# The TLS input's certificate (for 127.0.0.1 and localhost) is signed by a
# test CA the first start makes in $STATE/tls with openssl.
# Needs rsyslogd with its OpenSSL driver (apt-get install rsyslog
# rsyslog-openssl), openssl and python3.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LOGFERRY_RSYSLOG_DIR:-$ROOT/target/rsyslog}
SPEC=$ROOT/scripts/rsyslog
READY_TIMEOUT=${RSYSLOG_READY_TIMEOUT:-30}

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)

NAME=rsyslog.sh
# shellcheck source=lib/service.sh
. "$ROOT/scripts/lib/service.sh"

RSYSLOGD=$(command -v rsyslogd || echo /usr/sbin/rsyslogd)

addresses() { cat "$STATE/addresses"; echo "ca=$STATE/tls/ca.pem"; }

# A test CA and a server certificate it signs, for 127.0.0.1 and localhost.
make_certs() {
  [[ -f $STATE/tls/server.pem ]] && return
  command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
  local d=$STATE/tls.tmp
  rm -rf "$d"; mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=logferry test CA" \
    -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$d/ext.cnf"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3650 -extfile "$d/ext.cnf" -out "$d/server.pem" 2>/dev/null
  rm -rf "$STATE/tls"; mv "$d" "$STATE/tls"
}

configure() {
  if [[ ! -f $STATE/addresses ]]; then
    local tcp udp tls
    tcp=$(free_port); udp=$(free_port); tls=$(free_port)
    while [[ $udp == "$tcp" ]]; do udp=$(free_port); done
    while [[ $tls == "$tcp" || $tls == "$udp" ]]; do tls=$(free_port); done
    printf 'tcp=127.0.0.1:%s\nudp=127.0.0.1:%s\ntls=127.0.0.1:%s\n' "$tcp" "$udp" "$tls" > "$STATE/addresses.tmp"
    mv "$STATE/addresses.tmp" "$STATE/addresses"
  fi
  mkdir -p "$STATE/work"
  make_certs
  local tcp_port udp_port tls_port forward=""
  tcp_port=$(sed -n 's/^tcp=.*://p' "$STATE/addresses")
  udp_port=$(sed -n 's/^udp=.*://p' "$STATE/addresses")
  tls_port=$(sed -n 's/^tls=.*://p' "$STATE/addresses")
  if [[ -n ${RSYSLOG_FORWARD_UDP:-} ]]; then
    forward="  action(type=\"omfwd\" target=\"${RSYSLOG_FORWARD_UDP%:*}\" port=\"${RSYSLOG_FORWARD_UDP##*:}\" protocol=\"udp\")"
  fi
  sed -e "s|@STATE@|$STATE|g" -e "s|@TCP_PORT@|$tcp_port|" -e "s|@UDP_PORT@|$udp_port|" -e "s|@TLS_PORT@|$tls_port|" \
    -e "s|@FORWARD@|$forward|" "$SPEC/rsyslog.conf" > "$STATE/rsyslog.conf"
  "$RSYSLOGD" -N1 -f "$STATE/rsyslog.conf" > "$STATE/check.log" 2>&1 ||
    { cat "$STATE/check.log" >&2; die "rsyslogd rejects $STATE/rsyslog.conf"; }
}

# Whether rsyslogd listens on its TCP port.
answers() {
  local port; port=$(sed -n 's/^tcp=.*://p' "$STATE/addresses")
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),1).close()" 2>/dev/null
}

wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  while ! answers; do
    if ! running; then
      tail -n 30 "$STATE/rsyslog.log" >&2 2>/dev/null || true
      rm -f "$STATE/pid"
      die "rsyslogd exited during start-up (see $STATE/rsyslog.log)"
    fi
    if ((SECONDS >= deadline)); then
      stop
      die "rsyslogd did not listen after ${READY_TIMEOUT}s (see $STATE/rsyslog.log); stopped it"
    fi
    sleep 0.05
  done
}

start() {
  if running; then wait_ready; addresses; return; fi
  command -v "$RSYSLOGD" >/dev/null || die "rsyslogd not found (apt-get install rsyslog)"
  configure
  # -n: in the foreground, so its pid is ours; -i NONE: no pid file of its own;
  # setsid: it outlives the shell (and test process) that started it
  setsid "$RSYSLOGD" -n -i NONE -f "$STATE/rsyslog.conf" \
    > "$STATE/rsyslog.log" 2>&1 < /dev/null 9>&- &
  echo $! > "$STATE/pid"
  wait_ready
  addresses
}

stop() { stop_server 0.1; }

lock_state

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) running && addresses || { echo "rsyslog.sh: not running" >&2; exit 1; } ;;
  clean) stop; rm -rf "${STATE:?}"/* ;;
  *) echo "usage: $0 start|stop|status|clean" >&2; exit 2 ;;
esac
