#!/usr/bin/env bash
# Runs the fuzz targets one after another, each for a fixed time, and stops
# at the first crash.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 600); TARGETs default to every target in
# fuzz/ (`cargo fuzz list`). Each target first replays its
# fuzz/regressions/<target>/ inputs, then fuzzes from fuzz/corpus/<target>/
# (where new inputs are kept) and fuzz/seeds/<target>/. Extra libFuzzer
# options go in LIBFUZZER_ARGS (e.g. LIBFUZZER_ARGS=-max_len=65536).
# Needs cargo-fuzz (docs/fuzzing.md). Exit status: 0 if no target crashed,
# 1 on a crash (its input path and the command that reproduces it are
# printed), 2 on a usage or build error.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
export RUSTC_BOOTSTRAP=1

seconds=600
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
if [[ $seconds -eq 0 ]]; then
    echo "fuzz.sh: SECONDS must be at least 1" >&2
    exit 2
fi

known=$(cargo fuzz list) || {
    echo "fuzz.sh: cannot list the targets; is cargo-fuzz installed? (cargo install cargo-fuzz --locked)" >&2
    exit 2
}
if [[ $# -gt 0 ]]; then
    targets=("$@")
    for t in "${targets[@]}"; do
        if ! grep -qx -- "$t" <<<"$known"; then
            echo "fuzz.sh: unknown target '$t' (known: $(echo $known))" >&2
            exit 2
        fi
    done
else
    mapfile -t targets <<<"$known"
fi

echo "fuzz.sh: building ${targets[*]}"
for t in "${targets[@]}"; do
    cargo fuzz build "$t" || {
        echo "fuzz.sh: building $t failed" >&2
        exit 2
    }
done

# read -a splits LIBFUZZER_ARGS on spaces, as a shell would
read -r -a extra <<<"${LIBFUZZER_ARGS:-}"
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log="fuzz/artifacts/$t/last-run.log"
    dirs=("fuzz/corpus/$t")
    [[ -d fuzz/seeds/$t ]] && dirs+=("fuzz/seeds/$t")

    regressions=(fuzz/regressions/"$t"/*)
    if [[ -e ${regressions[0]} ]]; then
        if ! cargo fuzz run "$t" "${regressions[@]}" >"$log" 2>&1; then
            echo "fuzz.sh: $t: a fixed crash is back (fuzz/regressions/$t/); see $log" >&2
            echo "reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run $t fuzz/regressions/$t/*" >&2
            exit 1
        fi
    fi

    echo "fuzz.sh: $t for ${seconds}s (log: $log)"
    cargo fuzz run "$t" "${dirs[@]}" -- -max_total_time="$seconds" -print_final_stats=1 "${extra[@]}" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    if [[ $status -ne 0 ]]; then
        artifact=$(sed -n 's/.*Test unit written to \([^ ]*\).*/\1/p' "$log" | tail -n 1)
        echo "fuzz.sh: $t CRASHED after ${runs:-?} executions (exit $status); last lines of $log:" >&2
        grep -E "panicked at|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY" "$log" | head -n 5 >&2
        if [[ -n $artifact ]]; then
            echo "input: $artifact" >&2
            echo "reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run $t $artifact" >&2
            echo "minimize:  RUSTC_BOOTSTRAP=1 cargo fuzz tmin $t $artifact" >&2
        else
            tail -n 20 "$log" >&2
        fi
        exit 1
    fi
    summary+=("$(printf '%-16s %6ss %12s executions  0 crashes' "$t" "${time:-$seconds}" "${runs:-?}")")
done

echo "fuzz.sh: no crash"
printf '%s\n' "${summary[@]}"
