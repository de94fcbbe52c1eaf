#!/usr/bin/env bash
# Agent CPU at everyday rates: one file written at a steady rate (one write
# per line at up to 1,000 lines/s, one per millisecond above), tailed by the
# agent under test with its defaults and forwarded to a logferry receiver.
# Every agent runs in the same sitting, with the same writer and receiver.
#
#   bench/agent/run.sh [rates...]        default rates: 100 1000 10000 50000
#
# Agents: AGENTS="logferry fluent-bit fluentd" (default: those found).
#   logferry   target/release/logferry (LOGFERRY_BIN to override; LOGFERRY_OLD
#              adds a second logferry, e.g. an earlier build, as "logferry-old")
#   fluent-bit $ANCHOR_FLUENTBIT from /opt/peers/env (../shared/peers/build.sh)
#   fluentd    $ANCHOR_FLUENTD_DIR from /opt/peers/env
# STEP (seconds written per rate, default 20) and SAMPLE (seconds sampled,
# default 15, starting 3 s into the step).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[[ -f /opt/peers/env ]] && source /opt/peers/env
LF=${LOGFERRY_BIN:-target/release/logferry}
RATES=("${@:-100 1000 10000 50000}")
read -r -a RATES <<< "${RATES[*]}"
STEP=${STEP:-20}
SAMPLE=${SAMPLE:-15}
WORK=$(mktemp -d /tmp/lf-agent-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT

agents=()
for a in ${AGENTS:-logferry logferry-old fluent-bit fluentd}; do
  case $a in
    logferry) agents+=(logferry) ;;
    logferry-old) [[ -n ${LOGFERRY_OLD:-} ]] && agents+=(logferry-old) ;;
    fluent-bit) [[ -n ${ANCHOR_FLUENTBIT:-} ]] && agents+=(fluent-bit) ;;
    fluentd) [[ -n ${ANCHOR_FLUENTD_DIR:-} ]] && agents+=(fluentd) ;;
  esac
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# the receiver: forward in, every record to a null sink (counted)
RPORT=$(free_port)
APORT=$(free_port)
cat > "$WORK/receiver.toml" <<TOML
[sources.in]
type = "forward"
address = "127.0.0.1:$RPORT"
[sinks.null]
type = "null"
match = "**"
[api]
address = "127.0.0.1:$APORT"
TOML
received() {
  curl -s "127.0.0.1:$APORT/metrics" | awk '/^logferry_sink_records_total\{component="null"/ {print $2}'
}
"$LF" run --config "$WORK/receiver.toml" --log-level warn &
RPID=$!
sleep 1

start_agent() { # name dir -> pid
  local name=$1 dir=$2
  mkdir -p "$dir"
  : > "$dir/app.log"
  case $name in
    logferry|logferry-old)
      local bin=$LF; [[ $name == logferry-old ]] && bin=$LOGFERRY_OLD
      cat > "$dir/agent.toml" <<TOML
[sources.app]
type = "tail"
paths = ["$dir/app.log"]
tag = "app"
[sinks.out]
type = "forward"
match = "**"
servers = [{ address = "127.0.0.1:$RPORT" }]
TOML
      "$bin" run --config "$dir/agent.toml" --log-level warn >"$dir/agent.log" 2>&1 &
      ;;
    fluent-bit)
      cat > "$dir/agent.conf" <<CONF
[SERVICE]
    Flush     1
    Log_Level warn
[INPUT]
    Name  tail
    Path  $dir/app.log
    Tag   app
[OUTPUT]
    Name  forward
    Match *
    Host  127.0.0.1
    Port  $RPORT
CONF
      "$ANCHOR_FLUENTBIT" -c "$dir/agent.conf" >"$dir/agent.log" 2>&1 &
      ;;
    fluentd)
      cat > "$dir/agent.conf" <<CONF
<source>
  @type tail
  path $dir/app.log
  pos_file $dir/app.pos
  tag app
  <parse>
    @type none
  </parse>
</source>
<match **>
  @type forward
  <server>
    host 127.0.0.1
    port $RPORT
  </server>
</match>
CONF
      ruby -I"$ANCHOR_FLUENTD_DIR/lib" "$ANCHOR_FLUENTD_DIR/bin/fluentd" -c "$dir/agent.conf" --no-supervisor -q >"$dir/agent.log" 2>&1 &
      ;;
  esac
  echo $!
}

printf '| rate (lines/s) |'; for a in "${agents[@]}"; do printf ' %s CPU %% | %s RSS (MiB) |' "$a" "$a"; done; echo
printf '|---|'; for _ in "${agents[@]}"; do printf -- '---|---|'; done; echo
for rate in "${RATES[@]}"; do
  printf '| %s |' "$rate"
  for a in "${agents[@]}"; do
    dir=$WORK/$a-$rate
    pid=$(start_agent "$a" "$dir")
    sleep 3  # started, following the file
    before=$(received)
    "$LF" bench gen --file "$dir/app.log" --rate "$rate" --duration "${STEP}s" --size 100 >/dev/null 2>&1 &
    gpid=$!
    sleep 3
    "$LF" bench monitor --pid "$pid" --duration "${SAMPLE}s" --interval 1s > "$dir/monitor.txt" 2>&1 || true
    wait $gpid || true
    written=$(wc -l < "$dir/app.log")
    for _ in $(seq 1 30); do
      (( $(received) - before >= written )) && break
      sleep 1
    done
    got=$(( $(received) - before ))
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    (( got == written )) || echo "  $a at $rate lines/s: $got of $written lines reached the receiver" >> "$WORK/missing.txt"
    # summary row: | process | PID | elapsed | avg Mem | avg Mem | peak Mem (bytes) | peak Mem | avg % cpu |
    row=$(grep -A2 '^summary' "$dir/monitor.txt" | tail -1)
    cpu=$(awk -F'|' '{gsub(/ /,"",$9); print $9}' <<< "$row")
    peak=$(awk -F'|' '{gsub(/ /,"",$7); printf "%.1f", $7/1048576}' <<< "$row")
    printf ' %s | %s |' "$cpu" "$peak"
  done
  echo
done
kill $RPID 2>/dev/null || true
if [[ -s $WORK/missing.txt ]]; then echo; echo "not every line arrived:"; cat "$WORK/missing.txt"; else echo; echo "every line written reached the receiver, once per line counted"; fi
