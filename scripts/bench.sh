#!/usr/bin/env bash
# Reproduces docs/BENCHMARKS.md on this machine: builds the release binary,
# runs the whole-pipeline benchmarks (each with its baseline in the same
# run) and the criterion micro-benchmarks. Keep the machine otherwise idle.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked
bin=target/release/logferry
echo "## forward → file, 100 B records"
$bin bench forward-file --record-size 100 --records 10000000 --runs 3
echo "## forward → file, 4 KiB records"
$bin bench forward-file --record-size 4096 --records 500000 --runs 3
if [[ ${1:-} != --no-criterion ]]; then
  cargo bench --locked --bench forward_decode --bench file_writer -- --warm-up-time 1 --measurement-time 3
fi
