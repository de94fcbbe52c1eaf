#!/usr/bin/env bash
# FUSE source throughput, as in docs/BENCHMARKS.md ("FUSE source"). Needs
# root and /dev/fuse. Keep the machine otherwise idle while it runs.
#
#   scripts/bench-fuse.sh [--bin PATH] [--mb N] [--no-e2e] [--quick]
#
# 1. Into the mount: a 4 KiB-line file written into a fuse source whose
#    records go to a null sink, with `dd bs=1M` and with `cat`, against `cat`
#    of the same file into a plain tmpfs file in the same run.
# 2. End to end: 3 fuse senders, each with a forward sink (require_ack), into
#    one receiver (forward source → one file, template
#    "{time} {host} {file} {message}"), for 10 B, 1 KiB and 4 KiB lines:
#    the clock runs from the first write until the last line is in the
#    receiver's file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=target/release/logferry
mb=1024
e2e=1
div=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --no-e2e) e2e=0; shift ;;
        --quick) div=100; shift ;;   # end to end with 1/100 of the lines
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $(id -u) == 0 && -e /dev/fuse ]] || { echo "needs root and /dev/fuse" >&2; exit 1; }
[[ -x $bin ]] || cargo build --release --locked

work=$(mktemp -d /dev/shm/logferry-bench-fuse.XXXXXX)   # tmpfs
out=$(mktemp -d /var/tmp/logferry-bench-fuse.XXXXXX)    # the receiver's disk
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    for m in "$work"/*/mnt; do mountpoint -q "$m" 2>/dev/null && umount -l "$m"; done
    rm -rf "$work" "$out"
}
trap cleanup EXIT

now() { date +%s.%N; }
rate() { # bytes seconds → MB/s
    awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / s / 1e6 }'
}
lines() { # size count → file of `count` lines of `size` bytes + newline
    local pad
    pad=$(printf '%*s' "$1" '' | tr ' ' x)
    { yes "$pad" || true; } | head -n "$2"
}

# starts logferry with config $2 in dir $1, waits for `needle` in its log
start() {
    local dir=$1 config=$2 needle=$3
    mkdir -p "$dir"
    printf '%s\n' "$config" > "$dir/logferry.toml"
    LOGFERRY_LOG=info "$bin" run --config "$dir/logferry.toml" 2> "$dir/log" &
    pids+=($!)
    for _ in $(seq 200); do
        grep -q "$needle" "$dir/log" && return 0
        sleep 0.05
    done
    echo "logferry did not start:" >&2; cat "$dir/log" >&2; exit 1
}

stop_all() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}

echo "== into the mount: 4 KiB lines, ${mb} MB (fuse source → null sink)"
n=$(( mb * 1000 * 1000 / 4097 ))
lines 4096 "$n" > "$work/lines.txt"
bytes=$(stat -c %s "$work/lines.txt")
start "$work/null" "[sources.fs]
type = \"fuse\"
mountpoint = \"$work/null/mnt\"

[sinks.null]
type = \"null\"
match = \"**\"" "fuse source mounted"
mnt=$work/null/mnt
for run in 1 2 3; do
    t0=$(now); cat "$work/lines.txt" > "$work/copy.txt"; t1=$(now)
    tmpfs=$(rate "$bytes" "$(echo "$t1 - $t0" | bc)")
    rm -f "$work/copy.txt"
    t0=$(now); cat "$work/lines.txt" > "$mnt/cat.log"; t1=$(now)
    catm=$(rate "$bytes" "$(echo "$t1 - $t0" | bc)")
    t0=$(now); dd if="$work/lines.txt" of="$mnt/dd.log" bs=1M status=none; t1=$(now)
    ddm=$(rate "$bytes" "$(echo "$t1 - $t0" | bc)")
    echo "run $run: cat → tmpfs ${tmpfs} MB/s | cat → mount ${catm} MB/s | dd bs=1M → mount ${ddm} MB/s"
done
stop_all
grep -o 'logferry_source_records_total{component="fs"}=[0-9]*' "$work/null/log" | sed 's/^/records shipped: /'
rm -f "$work/lines.txt"
[[ $e2e == 1 ]] || exit 0

echo
echo "== end to end: 3 fuse senders → forward (require_ack) → 1 receiver → one file"
for spec in "10 2000000" "1024 200000" "4096 50000"; do
    read -r size count <<< "$spec"
    count=$(( count / div ))
    lines "$size" "$count" > "$work/in.txt"
    start "$work/rx" "[sources.in]
type = \"forward\"
address = \"127.0.0.1:0\"

[sinks.unified]
type = \"file\"
match = \"**\"
path = \"$out/unified.log\"
format = { type = \"template\", template = \"{time} {host} {file} {message}\" }" "forward source listening"
    addr=$(grep -o 'address=[^ ]*' "$work/rx/log" | head -1 | cut -d= -f2)
    for s in 1 2 3; do
        start "$work/s$s" "[sources.fs]
type = \"fuse\"
mountpoint = \"$work/s$s/mnt\"

[sinks.out]
type = \"forward\"
match = \"**\"
servers = [{ address = \"$addr\" }]
require_ack = true" "fuse source mounted"
    done
    want=$(( 3 * count ))
    t0=$(now)
    writers=()
    for s in 1 2 3; do cat "$work/in.txt" > "$work/s$s/mnt/app.log" & writers+=($!); done
    wait "${writers[@]}"
    while (( $(wc -l < "$out/unified.log" 2>/dev/null || echo 0) < want )); do sleep 0.02; done
    t1=$(now)
    secs=$(echo "$t1 - $t0" | bc)
    in_bytes=$(( want * (size + 1) ))
    printf '%5s B lines: %d records in %.2f s: %s records/s, %s MB/s (lines written)\n' \
        "$size" "$want" "$secs" \
        "$(awk -v n="$want" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')" \
        "$(rate "$in_bytes" "$secs")"
    stop_all
    rm -rf "$work/rx" "$work"/s? "$out/unified.log"
done
