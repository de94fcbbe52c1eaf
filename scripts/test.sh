#!/usr/bin/env bash
# The whole test suite, on a fresh machine or a used one:
#   1. installs/builds the real Fluentd-ecosystem clients the interop tests
#      use (scripts/test-deps.sh: PyPI, Maven Central, Go proxy);
#   2. checks formatting and lints (warnings are errors), and that the
#      fuzz targets compile;
#   3. runs every unit, black-box, interop, Kafka and doc test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# A clean run gains nothing from incremental compilation, and its cache
# would take most of a gigabyte beside the build.
export CARGO_INCREMENTAL=0

step() { printf '\n=== %s\n' "$*"; }

step "test dependencies"
scripts/test-deps.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings denied)"
cargo clippy --all-targets --locked -- -D warnings

step "the fuzz targets compile (scripts/fuzz.sh runs them)"
# type-checked only, in the main target dir: it shares the build scripts'
# outputs (librdkafka) with the tests below
CARGO_TARGET_DIR=target cargo check --locked --manifest-path fuzz/Cargo.toml --bins

step "cargo test"
# The Kafka, OpenSearch, OTLP, S3, Kubernetes, Loki and HEC tests start
# the local broker (scripts/kafka.sh), node (scripts/opensearch.sh),
# collector (scripts/otelcol.sh), S3 server (scripts/s3.sh), API server
# (scripts/kube.sh) and VictoriaLogs (scripts/victorialogs.sh) on first
# use and leave them running for the next test binary; stop them when the
# suite ends.
# Tests that cannot run here (no peers' build, no /dev/fuse, no tmpfs
# mounts) say so in target/tmp/skipped-tests.log (tests/common: skipped);
# the list is printed last, whatever the outcome.
SKIPS=target/tmp/skipped-tests.log
mkdir -p target/tmp && rm -f "$SKIPS"
skipped_summary() {
  if [[ -s $SKIPS ]]; then
    step "skipped: $(wc -l <"$SKIPS") test(s) did not run here"
    sort "$SKIPS"
  else
    step "skipped: none"
  fi
}
trap 'scripts/kafka.sh stop || true; scripts/opensearch.sh stop || true
      scripts/otelcol.sh stop || true; scripts/s3.sh stop || true
      scripts/rsyslog.sh stop || true
      scripts/kube.sh stop || true; scripts/victorialogs.sh stop || true
      skipped_summary' EXIT
cargo test --locked --no-fail-fast
