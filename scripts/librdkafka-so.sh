#!/usr/bin/env bash
# Builds a shared librdkafka from the static one in logferry's release build
# (vendor/rdkafka-sys: 2.12.1 with the fix in its PATCHES.md) and prints the
# directory holding it, so that kcat can run on the same library as logferry:
#
#   LD_LIBRARY_PATH=$(scripts/librdkafka-so.sh) logferry bench forward-kafka …
#
# The Kafka benchmarks' kcat baseline then uses it (the bench's header names
# the librdkafka version kcat reports). Needs gcc and a release build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked >&2
# the build directory of the vendored crate (its CMake cache names it)
archive=
for out in target/release/build/rdkafka-sys-*/out; do
  if grep -q 'vendor/rdkafka-sys' "$out/build/CMakeCache.txt" 2>/dev/null; then
    archive=$out/lib/librdkafka.a
  fi
done
zstd=$(find target/release/build -path '*zstd-sys-*/out/*' -name libzstd.a | head -1)
if [[ -z $archive || ! -f $archive || -z $zstd ]]; then
  echo "no librdkafka.a or libzstd.a from the vendored build under target/release/build" >&2
  exit 1
fi
dir=target/librdkafka-so
mkdir -p "$dir"
gcc -shared -o "$dir/librdkafka.so.1" -Wl,-soname,librdkafka.so.1 \
  -Wl,--whole-archive "$archive" -Wl,--no-whole-archive "$zstd" \
  -lssl -lcrypto -lz -lpthread -lm -ldl
realpath "$dir"
