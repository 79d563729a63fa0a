#!/usr/bin/env bash
# What the harness itself costs: noop throughput in closed loop (1 and 2 clients) and an
# open loop at 1,000,000 ops/s, each repeated; prints the median of the repeats.
# Usage: scripts/bench-noop.sh [SECONDS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
repeats=${2:-3}
cargo build --release --quiet
bin=target/release/loadrig
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run_case() {
    local name=$1 expr=$2; shift 2
    local values=()
    for i in $(seq "$repeats"); do
        "$bin" run noop "$@" --duration "${secs}s" -o "$out/r.json" >/dev/null
        values+=("$(field "$out/r.json" "$expr")")
    done
    printf '%-44s median %s   (runs: %s)\n' "$name" "$(printf '%s\n' "${values[@]}" | median)" "${values[*]}"
}

echo "loadrig noop harness benchmark: ${secs}s runs, median of $repeats ($(nproc) cores)"
run_case "closed loop, 1 client: ops/s" "round(r['total']['throughput_per_s'])" --clients 1
run_case "closed loop, 2 clients: ops/s" "round(r['total']['throughput_per_s'])" --clients 2
run_case "open loop 1M/s, 1 in flight: late starts %" \
    "round(100*r['total']['late_starts']/max(1,r['total']['ok']+r['missed_starts']),4)" --rate 1000000 --max-in-flight 1
run_case "open loop 1M/s, 1 in flight: ops/s" "round(r['total']['throughput_per_s'])" --rate 1000000 --max-in-flight 1
run_case "open loop 1M/s, 1 in flight: lag p99 ns" "r['total']['start_lag']['p99_ns']" --rate 1000000 --max-in-flight 1
