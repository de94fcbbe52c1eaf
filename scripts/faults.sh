#!/usr/bin/env bash
# The fault tests (tests/faults.rs) as a long soak: kill -9 of each tier of a
# tail → relay → receiver chain (and SIGTERM restarts), a full relay disk
# buffer, a 10 s receiver outage, a full disk under the file sink, a Kafka
# broker restart plus a kill -9 of the Kafka-side logferry. Every record is
# counted at the end.
#
#   scripts/faults.sh            # scale 10: ten times the records and run time
#   scripts/faults.sh 3          # scale 3
#   scripts/faults.sh 10 chain_  # only the tests whose name contains chain_
#
# `cargo test --test faults` (scale 1) is the short form the suite runs.
# The full-disk test mounts a tmpfs and skips (saying so) without root; the
# Kafka test needs what scripts/test-deps.sh installs (java, mvn, kcat).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scale="${1:-10}"
shift || true
export LOGFERRY_FAULT_SCALE="$scale"
# one test at a time: each runs several logferry processes (and a broker)
exec cargo test --release --locked --test faults -- --test-threads=1 --nocapture "$@"
