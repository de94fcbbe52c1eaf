#!/usr/bin/env bash
# Installs what building logferry needs beyond Rust on a fresh Debian
# machine: librdkafka (the Kafka sink and source) is built from the rdkafka
# crate's bundled source with cmake and a C/C++ compiler, against the
# OpenSSL headers. Extra packages can be named as arguments
# (scripts/test-deps.sh adds what the tests need). Does nothing when all
# are installed; needs root (apt-get) otherwise.
set -euo pipefail

wanted=(cmake g++ pkg-config libssl-dev "$@")
missing=()
for pkg in "${wanted[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]} == 0)); then
  echo "build-deps: skip, ${wanted[*]} are installed"
  exit 0
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "build-deps: missing ${missing[*]}: install them (Debian: apt-get install -y ${missing[*]})" >&2
  exit 1
fi
echo "build-deps: installing ${missing[*]} with apt-get"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
