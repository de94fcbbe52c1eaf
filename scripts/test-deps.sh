#!/usr/bin/env bash
# Installs/builds the real Fluentd-ecosystem client programs that the
# black-box interop tests spawn against logferry:
#   target/interop/venv/bin/python tests/interop/python/send.py   (fluent-logger, PyPI)
#   target/interop/venv/bin/python tests/interop/python/otlp_send.py (OpenTelemetry SDK, PyPI)
#   java -jar target/interop/fluency-sender.jar                   (Fluency, Maven Central)
#   target/interop/go-sender                                      (fluent-logger-golang)
#   kcat                                                          (Kafka consumer, Debian)
#   chromium                                                      (renders `bench report` pages, Debian)
#   haproxy                                                       (`bench scenario http-kafka --via haproxy`, Debian)
#   logrotate                                                     (tests/tail_rotation.rs rotates with the real one, Debian)
# and what the Kafka sink's build and tests need: cmake, g++ and the
# OpenSSL headers for librdkafka, and the local broker's jars
# (scripts/kafka.sh fetch, Maven Central), and the local OpenSearch node's
# jars (scripts/opensearch.sh fetch, Maven Central), and the real servers of
# the otlp and s3 tests: an OpenTelemetry Collector (scripts/otelcol.sh
# fetch, Go proxy) and s3s-fs (scripts/s3.sh fetch, cargo install), with boto3
# (PyPI) to talk to the latter; and the kubernetes tests' API server
# (scripts/kube.sh fetch: etcd and kube-apiserver, Go proxy).
#   logger --tcp --octet-count                                    (util-linux, Debian bsdutils)
#   tmux                                                          (drives `logferry top` in tests/operations.rs, Debian)
#   systemd-journal-remote, journalctl                            (journal files for tests/journald.rs, Debian)
# Idempotent: each step is skipped while its output is newer than its sources.
# Needs python3, java 17 + mvn, go; reaches only the package registries.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."   # repo root, whatever the caller's cwd
ROOT=$PWD
OUT=$ROOT/target/interop
mkdir -p "$OUT"

# Versions tested with logferry's interop tests. Fluency's version lives in
# tests/interop/java/pom.xml, fluent-logger-golang's in tests/interop/go/go.mod.
FLUENT_LOGGER_VERSION=0.11.1
MSGPACK_VERSION=1.2.4
# The OpenTelemetry Python SDK and its OTLP exporters (HTTP and gRPC) send
# logs to the otlp source (tests/interop/python/otlp_send.py); boto3 signs
# requests to the local S3 server (scripts/s3.sh) in its tests.
OTEL_PY_VERSION=1.45.2
BOTO3_VERSION=1.44.5

need() { command -v "$1" >/dev/null || { echo "test-deps: '$1' not found on PATH" >&2; exit 1; }; }

# True if any file under the given paths is newer than $1 (or $1 is missing).
stale() {
  local out=$1; shift
  [[ ! -e $out ]] || [[ -n $(find "$@" -newer "$out" -print -quit) ]]
}

# --- Python: venv with fluent-logger ---------------------------------------
VENV=$OUT/venv
venv_ok() {
  # Checks both that the venv still runs and that the pinned version is in it.
  "$VENV/bin/python" - "$FLUENT_LOGGER_VERSION" <<'PY' 2>/dev/null
import sys, importlib.metadata as md
import fluent.sender  # noqa: F401  (the module send.py uses)
sys.exit(md.version("fluent-logger") != sys.argv[1])
PY
}
# The same for the OTLP exporters and boto3, which a venv made before them
# lacks: they are added to it.
venv_otel_ok() {
  "$VENV/bin/python" - "$OTEL_PY_VERSION" "$BOTO3_VERSION" <<'PY' 2>/dev/null
import sys, importlib.metadata as md
import opentelemetry.exporter.otlp.proto.http._log_exporter  # noqa: F401
import opentelemetry.exporter.otlp.proto.grpc._log_exporter  # noqa: F401
import boto3  # noqa: F401
sys.exit(md.version("opentelemetry-sdk") != sys.argv[1] or md.version("boto3") != sys.argv[2])
PY
}
otel_pip() {
  "$VENV/bin/pip" install -q --disable-pip-version-check \
    "opentelemetry-sdk==$OTEL_PY_VERSION" \
    "opentelemetry-exporter-otlp-proto-http==$OTEL_PY_VERSION" \
    "opentelemetry-exporter-otlp-proto-grpc==$OTEL_PY_VERSION" \
    "boto3==$BOTO3_VERSION"
  venv_otel_ok
}
if venv_ok; then
  echo "python: skip, $VENV has fluent-logger $FLUENT_LOGGER_VERSION"
  if venv_otel_ok; then
    echo "python: skip, $VENV has opentelemetry-sdk $OTEL_PY_VERSION and boto3 $BOTO3_VERSION"
  else
    otel_pip
    echo "python: added opentelemetry-sdk $OTEL_PY_VERSION and boto3 $BOTO3_VERSION to $VENV"
  fi
else
  need python3
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    # Debian splits venv/ensurepip out of python3.
    echo "python: python3 -m venv failed, installing python3-venv with apt-get"
    rm -rf "$VENV"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check \
    "fluent-logger==$FLUENT_LOGGER_VERSION" "msgpack==$MSGPACK_VERSION"
  venv_ok
  otel_pip
  echo "python: created $VENV with fluent-logger $FLUENT_LOGGER_VERSION"
fi

# --- Java: Fluency fat jar ---------------------------------------------------
JAVA_DIR=$ROOT/tests/interop/java
JAR=$OUT/fluency-sender.jar
if stale "$JAR" "$JAVA_DIR/pom.xml" "$JAVA_DIR/src"; then
  need mvn; need java
  # Maven's -q still emits stray ANSI resets, so keep its output for failures.
  if ! log=$(cd "$JAVA_DIR" && mvn -q -B package 2>&1); then
    printf '%s\n' "$log" >&2
    echo "java: mvn package failed" >&2
    exit 1
  fi
  cp "$JAVA_DIR/target/fluency-sender.jar" "$JAR"
  echo "java: built $JAR"
else
  echo "java: skip, $JAR is up to date"
fi

# --- Go: fluent-logger-golang binary -----------------------------------------
GO_DIR=$ROOT/tests/interop/go
GO_BIN=$OUT/go-sender
if stale "$GO_BIN" "$GO_DIR/go.mod" "$GO_DIR/go.sum" "$GO_DIR/main.go"; then
  need go
  (cd "$GO_DIR" && go build -o "$GO_BIN" .)
  echo "go: built $GO_BIN"
else
  echo "go: skip, $GO_BIN is up to date"
fi

# --- Kafka: librdkafka build tools, kcat, the local broker's jars ------------
# (and headless Chromium for tests/bench_report.rs, haproxy for the
# http-kafka scenario in tests/bench_scenarios.rs, curl (with HTTP/2) for
# tests/http2.rs, logrotate for tests/tail_rotation.rs's real rotations,
# from the same apt-get run)
"$ROOT/scripts/build-deps.sh" kcat chromium haproxy curl logrotate
need java; need mvn
"$ROOT/scripts/kafka.sh" fetch
echo "kafka: broker jars in target/kafka-jars"
# --- OpenSearch: the local node's jars (Maven Central), for the opensearch
# sink's tests; setpriv runs it as nobody when the suite runs as root
"$ROOT/scripts/opensearch.sh" fetch
echo "opensearch: node jars in target/opensearch-jars"
# --- OpenTelemetry Collector and S3 server: built from Go modules
# (scripts/otelcol/) and from the Rust package registry (s3s-fs), for the otlp and s3
# tests; both are cached under target/
"$ROOT/scripts/otelcol.sh" fetch
echo "otelcol: collector in target/otelcol-bin"
"$ROOT/scripts/s3.sh" fetch
echo "s3: s3s-fs in target/s3s-fs"
# --- Kubernetes API server: etcd and kube-apiserver built from Go modules
# (scripts/kube/), for the kubernetes tests; cached outside the clone, once
# per machine. The first build takes five to ten minutes: it runs in the
# background (at nice 19) while the suite compiles and runs the tests that
# come before the kubernetes ones, whose first `scripts/kube.sh start` waits
# for it (its lock); a build that failed is tried again there, with its error.
mkdir -p "$ROOT/target"
nohup "$ROOT/scripts/kube.sh" fetch > "$ROOT/target/kube-fetch.log" 2>&1 < /dev/null &
echo "kube: etcd and kube-apiserver being made ready in the background (target/kube-fetch.log)"
# --- VictoriaLogs: built from Go modules (scripts/victorialogs/), for the
# loki and splunk_hec sinks' tests; cached outside the clone (about 30 s)
"$ROOT/scripts/victorialogs.sh" fetch
echo "victorialogs: victoria-logs in ${LOGFERRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/logferry}/victorialogs-v1.52.2"
# --- util-linux logger: a real syslog client for tests/tcp.rs ----------------
if command -v logger >/dev/null && logger --help 2>&1 | grep -q -- --octet-count; then
  echo "logger: skip, $(command -v logger) supports --octet-count"
elif [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  apt-get install -y bsdutils
  echo "logger: installed bsdutils"
else
  echo "test-deps: 'logger' with --octet-count not found: install util-linux's logger (Debian: apt-get install -y bsdutils)" >&2
  exit 1
fi
# --- rsyslog: a real syslog receiver (plain, TLS with its OpenSSL driver)
# and forwarding sender (scripts/rsyslog.sh) for tests/udp.rs and
# tests/syslog_sink.rs
if { command -v rsyslogd >/dev/null || [[ -x /usr/sbin/rsyslogd ]]; } &&
  compgen -G "/usr/lib/*/rsyslog/lmnsd_ossl.so" >/dev/null && command -v openssl >/dev/null; then
  echo "rsyslog: skip, rsyslogd with its OpenSSL driver is installed"
elif [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y rsyslog rsyslog-openssl openssl
  echo "rsyslog: installed rsyslog, rsyslog-openssl"
else
  echo "test-deps: rsyslogd not found: install rsyslog and rsyslog-openssl (Debian: apt-get install -y rsyslog rsyslog-openssl openssl)" >&2
  exit 1
fi
# --- journal files: systemd-journal-remote writes them from the journal
# export format, journalctl reads them back, libsystemd0 is the reader the
# journald source loads (tests/journald.rs)
if [[ -x /lib/systemd/systemd-journal-remote ]] && command -v journalctl >/dev/null &&
  compgen -G "/usr/lib/*/libsystemd.so.0" >/dev/null; then
  echo "journal: skip, systemd-journal-remote, journalctl and libsystemd0 are installed"
elif [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-journal-remote libsystemd0 >/dev/null
  echo "journal: installed systemd-journal-remote"
else
  echo "test-deps: systemd-journal-remote not found: install it (Debian: apt-get install -y systemd-journal-remote)" >&2
  exit 1
fi
# --- tmux: a real terminal for `logferry top` in tests/operations.rs ---------
if command -v tmux >/dev/null; then
  echo "tmux: skip, $(command -v tmux) is installed"
elif [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
  echo "tmux: installed"
else
  echo "test-deps: 'tmux' not found: install it (Debian: apt-get install -y tmux)" >&2
  exit 1
fi
