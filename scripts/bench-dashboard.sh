#!/usr/bin/env bash
# What the live dashboard costs: a run on sleep:// with --dashboard and PAGES pages
# following its events (curl on /events, as a browser's EventSource does), repeated; prints
# the median of the result's dashboard.cpu_share (the dashboard's CPU over the process's).
# Usage: scripts/bench-dashboard.sh [SECONDS] [REPEATS] [PAGES]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
repeats=${2:-5}
pages=${3:-10}
cargo build --release --quiet
bin=target/release/loadrig
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

shares=()
for i in $(seq "$repeats"); do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin" run ycsb-a --target 'sleep://?latency=1ms' --clients 8 --duration "${secs}s" \
        --warmup 2s --set recordcount=100 --dashboard "127.0.0.1:$port" -o "$out/r.json" >/dev/null &
    run=$!
    until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.05; done
    for p in $(seq "$pages"); do curl -sN "http://127.0.0.1:$port/events" >/dev/null & done
    wait "$run"
    wait
    share=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['dashboard']; print(d['cpu_share'], d['pages_max'])" "$out/r.json")
    echo "repeat $i: dashboard cpu_share ${share% *} with ${share#* } pages"
    shares+=("${share% *}")
done
m=$(printf '%s\n' "${shares[@]}" | median)
printf 'dashboard share of the run'"'"'s CPU, %s pages, %ss: median %s (%s)\n' "$pages" "$secs" "$m" "${shares[*]}"
