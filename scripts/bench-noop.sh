#!/usr/bin/env bash
# What the harness itself costs: noop throughput in closed loop (1 and 2 clients) and an
# open loop at 1,000,000 ops/s, each repeated; prints the median of the repeats.
# Usage: scripts/bench-noop.sh [SECONDS] [REPEATS]
# With BASELINE=/path/to/an/older/loadrig, every repeat runs the baseline and this build
# back to back (A B A B ...), and each case prints both medians and their ratio: the way to
# show a change costs nothing on a shared, noisy machine.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
repeats=${2:-3}
cargo build --release --quiet
bin=target/release/loadrig
baseline=${BASELINE:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# One measurement of `expr` from a run of binary $1 with the remaining flags.
measure() {
    local b=$1 expr=$2; shift 2
    "$b" run noop "$@" --duration "${secs}s" -o "$out/r.json" >/dev/null
    field "$out/r.json" "$expr"
}

run_case() {
    local name=$1 expr=$2; shift 2
    local values=() base=()
    for i in $(seq "$repeats"); do
        if [ -n "$baseline" ]; then base+=("$(measure "$baseline" "$expr" "$@")"); fi
        values+=("$(measure "$bin" "$expr" "$@")")
    done
    local m
    m=$(printf '%s\n' "${values[@]}" | median)
    if [ -n "$baseline" ]; then
        local mb
        mb=$(printf '%s\n' "${base[@]}" | median)
        printf '%-44s median %s   baseline %s   ratio %s   (runs: %s | baseline: %s)\n' "$name" "$m" "$mb" \
            "$(python3 -c "import sys; b=float(sys.argv[2]); print(round(float(sys.argv[1])/b,3) if b else 'n/a')" "$m" "$mb")" \
            "${values[*]}" "${base[*]}"
    else
        printf '%-44s median %s   (runs: %s)\n' "$name" "$m" "${values[*]}"
    fi
}

echo "loadrig noop harness benchmark: ${secs}s runs, median of $repeats ($(nproc) cores)${baseline:+, against $baseline}"
run_case "closed loop, 1 client: ops/s" "round(r['total']['throughput_per_s'])" --clients 1
run_case "closed loop, 2 clients: ops/s" "round(r['total']['throughput_per_s'])" --clients 2
run_case "open loop 1M/s, 1 in flight: late starts %" \
    "round(100*r['total']['late_starts']/max(1,r['total']['ok']+r['missed_starts']),4)" --rate 1000000 --max-in-flight 1
run_case "open loop 1M/s, 1 in flight: ops/s" "round(r['total']['throughput_per_s'])" --rate 1000000 --max-in-flight 1
run_case "open loop 1M/s, 1 in flight: lag p99 ns" "r['total']['start_lag']['p99_ns']" --rate 1000000 --max-in-flight 1
