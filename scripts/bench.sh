#!/usr/bin/env bash
# Reproduces docs/BENCHMARKS.md on this machine: builds the release binary,
# runs the whole-pipeline benchmarks (each with its baseline measured in the
# same run) and, unless --no-criterion, the criterion micro-benchmarks.
# Keep the machine otherwise idle while it runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked
bin=target/release/logferry
run() { echo; echo "\$ logferry bench $*"; $bin bench "$@"; }
run forward-file --record-size 100 --records 10000000 --runs 3
run forward-file --record-size 4096 --records 250000 --runs 5
run forward-file --records 5000000 --runs 3
run forward-file --records 5000000 --runs 3 --disk-buffer
run relay --records 5000000 --runs 3
run relay --records 5000000 --runs 3 --ack
run relay --records 5000000 --runs 3 --tls
run forward-sink --records 10000000 --runs 3
run forward-sink --records 10000000 --runs 3 --ack
run tail-file --line-size 10 --lines 30000000 --runs 3
run tail-file --line-size 100 --lines 5000000 --runs 3
run tail-file --line-size 1024 --lines 1000000 --runs 3
run tail-file --line-size 4096 --lines 250000 --runs 3
# processing, with Fluent Bit doing the same work when its build is at hand
peer=(); [[ -x $(. /opt/peers/env 2>/dev/null; echo "${ANCHOR_FLUENTBIT:-}") ]] || peer=(--no-peer)
run filters --workload apache --records 2000000 --runs 3 "${peer[@]}"
run filters --workload json --records 2000000 --runs 3 "${peer[@]}"
run filters --workload pass-through --records 5000000 --runs 5
# the request-based sinks against Fluent Bit: a local OpenSearch node
# (scripts/opensearch.sh, left running afterwards), and a logferry HTTP receiver
os_url=$(scripts/opensearch.sh start)
run sinks --workload opensearch --endpoint "$os_url" --node-pid "$(cat "${LOGFERRY_OPENSEARCH_DIR:-target/opensearch}/pid")" --records 500000 --runs 3 "${peer[@]}"
run sinks --workload http --records 2000000 --runs 3 "${peer[@]}"
# OTLP out and S3 against Fluent Bit: a collector and s3s-fs with state
# dirs of the bench's own (the bench counts what arrives there), left running
otel_dir=target/bench-otelcol s3_dir=target/bench-s3
LOGFERRY_OTELCOL_DIR=$otel_dir scripts/otelcol.sh start >/dev/null
LOGFERRY_S3_DIR=$s3_dir scripts/s3.sh start >/dev/null
run sinks --workload otlp --state-dir "$otel_dir" --records 500000 --runs 3 "${peer[@]}"
run sinks --workload s3 --state-dir "$s3_dir" --records 1000000 --runs 3 "${peer[@]}"
run sinks --workload otlp-in --records 1000000 --runs 3 "${peer[@]}"
# Loki and Splunk HEC against Fluent Bit, into a VictoriaLogs server with a
# state dir of the bench's own (left running); UDP and TCP syslog in; the journal
vl_dir=target/bench-victorialogs
LOGFERRY_VICTORIALOGS_DIR=$vl_dir scripts/victorialogs.sh start >/dev/null
run sinks --workload loki --state-dir "$vl_dir" --records 2000000 --runs 3 "${peer[@]}"
run sinks --workload splunk --state-dir "$vl_dir" --records 2000000 --runs 3 "${peer[@]}"
run udp-syslog --rates 10000,100000 --seconds 20 --runs 3 "${peer[@]}"
run tcp-syslog --rates 100,1000,10000 --seconds 20 --runs 2 "${peer[@]}"
run journald --rate 1000 --seconds 30 --runs 3 "${peer[@]}"
# a node of 110 pods against Fluent Bit's tail + kubernetes filter, on a
# real API server (scripts/kube.sh, state in target/bench-kube, left running)
run kubernetes --pods 110 --rate-per-pod 100 --seconds 60 --runs 3 "${peer[@]}"
run kubernetes --pods 110 --rate-per-pod 1000 --seconds 60 --runs 3 --cache-pods 0 "${peer[@]}"
# Kafka: a local broker (scripts/kafka.sh), left running afterwards
brokers=$(scripts/kafka.sh start)
run forward-kafka --brokers "$brokers" --records 2000000 --runs 3 --tls
# the same, with kcat on logferry's own librdkafka (vendor/rdkafka-sys)
LD_LIBRARY_PATH=$(scripts/librdkafka-so.sh) run forward-kafka --brokers "$brokers" --records 2000000 --runs 3
run http-kafka --brokers "$brokers" --records 2000000 --lines-per-request 100 --connections 64 --runs 3
run http-kafka --brokers "$brokers" --records 200000 --lines-per-request 1 --connections 64 --runs 3 --no-baseline
run http-kafka --brokers "$brokers" --records 200000 --lines-per-request 1 --connections 64 --runs 3 --no-baseline --linger-ms 0
if [[ ${1:-} != --no-criterion ]]; then
  cargo bench --locked --bench forward_decode --bench file_writer --bench kafka_encode --bench remap -- --warm-up-time 1 --measurement-time 3
fi
