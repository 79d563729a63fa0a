#!/usr/bin/env bash
# loadrig against the usual peer tools on the same throwaway servers, same client count:
#   redis: redis-benchmark -t get,set -c 50   vs  loadrig, 50 clients doing GET/SET
#   http:  wrk -t2 -c50 on nginx's small static file  vs  loadrig, 50 clients doing GET
#   http-pipe: the same with 16 requests pipelined per connection: wrk -s with a Lua
#          script sending 16 requests at once (wrk's pipeline.lua)  vs  loadrig
#          --clients 50 --pipeline 16 (50 connections, 800 streams)
# Runs alternate (peer, loadrig, peer, loadrig, ...). Each process's own CPU (user + sys,
# from /usr/bin/time) is divided by the operations it completed. Prints the medians of the
# repeats and the ratios loadrig / peer.
# Usage: scripts/bench-net.sh [redis|http|http-pipe|all] [SECONDS] [REPEATS]
# Servers come from scripts/services.sh in ${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-net}
# and are stopped at the end. Needs root (packages); installs wrk if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
secs=${2:-10}
repeats=${3:-3}
case $which in redis | http | http-pipe | all) ;; *)
    echo "usage: $0 [redis|http|http-pipe|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
export LOADRIG_SERVICES_DIR=${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-net}
clients=50
depth=16

need=()
[[ $which == http* || $which == all ]] && need+=(nginx)
[[ $which == redis || $which == all ]] && need+=(redis)
if [[ " ${need[*]} " == *" nginx "* ]] && ! command -v wrk >/dev/null; then
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y wrk >/dev/null; }
fi
[[ -x /usr/bin/time ]] || apt-get install -y time >/dev/null
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/loadrig
out=$(mktemp -d)
trap 'scripts/services.sh down >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
scripts/services.sh up "${need[@]}"
eval "$(scripts/services.sh env)"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
cpu() { awk '{printf "%.3f", $1 + $2}' "$1"; } # user + sys seconds from /usr/bin/time -f '%U %S'

# Each case function prints "OPS_PER_S CPU_US_PER_OP" for one run.
peer_redis() {
    local n=$((secs * 20000))
    /usr/bin/time -f '%U %S' -o "$out/time" \
        redis-benchmark -h 127.0.0.1 -p "$LOADRIG_REDIS_PORT" -a "$LOADRIG_REDIS_PASSWORD" \
        -t set,get -c "$clients" -n "$n" -r 100000 -d 3 --csv >"$out/rb.csv" 2>/dev/null
    # One line per test: "SET","rps",...; both tests ran n requests.
    python3 - "$out/rb.csv" "$n" "$(cpu "$out/time")" <<'EOF'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0] in ("SET", "GET")]
n, cpu = int(sys.argv[2]), float(sys.argv[3])
seconds = sum(n / float(r[1]) for r in rows)
print(f"{len(rows) * n / seconds:.0f} {cpu * 1e6 / (len(rows) * n):.2f}")
EOF
}

loadrig_redis() {
    cat >"$out/redis.toml" <<'EOF'
name = "redis-get-set"
description = "GET and SET of 3-byte values on 100,000 random keys, as redis-benchmark -r 100000 -d 3"
[[op]]
name = "get"
kv.get = { key = "key:{uniform 0..100000}" }
[[op]]
name = "set"
kv.put = { key = "key:{uniform 0..100000}", value = "{bytes 3}" }
EOF
    loadrig_case redis.toml "$LOADRIG_REDIS_URL"
}

peer_http() { # [wrk options...] [-- script arguments...]
    /usr/bin/time -f '%U %S' -o "$out/time" \
        wrk -t2 -c"$clients" -d"${secs}s" "$LOADRIG_HTTP_URL/static/hello.txt" "$@" >"$out/wrk.txt"
    local n
    n=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
    awk -v n="$n" -v s="$secs" -v c="$(cpu "$out/time")" \
        '/Requests\/sec/ {printf "%.0f %.2f\n", $2, c * 1e6 / n}' "$out/wrk.txt"
}

loadrig_http() { # [loadrig options...]
    cat >"$out/http.toml" <<'EOF'
name = "http-get"
description = "GET of nginx's small static file, as wrk does"
[[op]]
name = "get"
http = { path = "/static/hello.txt", expect = 200 }
EOF
    loadrig_case http.toml "$LOADRIG_HTTP_URL" "$@"
}

# wrk's pipeline.lua: every request() hands wrk $depth requests to write at once; wrk
# counts each response.
peer_http_pipe() {
    cat >"$out/pipeline.lua" <<'EOF'
init = function(args)
    local r = {}
    for i = 1, tonumber(args[1]) do r[i] = wrk.format(nil, "/static/hello.txt") end
    req = table.concat(r)
end
request = function() return req end
EOF
    peer_http -s "$out/pipeline.lua" -- "$depth"
}

loadrig_http_pipe() { # --clients counts connections: 50 of them, 16 streams on each
    loadrig_http --pipeline "$depth"
}

loadrig_case() { # workload target [loadrig options...]
    local workload=$1 target=$2
    shift 2
    /usr/bin/time -f '%U %S' -o "$out/time" \
        "$bin" run "$out/$workload" --target "$target" --clients "$clients" --threads 2 \
        --duration "${secs}s" -o "$out/r.json" "$@" >/dev/null
    local ok errors
    ok=$(json "$out/r.json" "r['total']['ok']")
    errors=$(json "$out/r.json" "r['total']['errors']")
    ((errors == 0)) || echo "loadrig: $errors errors in $workload" >&2
    json "$out/r.json" "f\"{r['total']['throughput_per_s']:.0f} {$(cpu "$out/time") * 1e6 / max(1, $ok):.2f}\""
}

compare() { # name peer-label peer-fn loadrig-fn
    local name=$1 label=$2 peer=$3 ours=$4 i p l
    local pt=() pc=() lt=() lc=()
    for i in $(seq "$repeats"); do
        read -r p l <<<"$($peer)"
        pt+=("$p") pc+=("$l")
        read -r p l <<<"$($ours)"
        lt+=("$p") lc+=("$l")
        echo "  run $i: $label ${pt[-1]} ops/s ${pc[-1]} µs/op; loadrig ${lt[-1]} ops/s ${lc[-1]} µs/op" >&2
    done
    local mpt mpc mlt mlc
    mpt=$(printf '%s\n' "${pt[@]}" | median)
    mpc=$(printf '%s\n' "${pc[@]}" | median)
    mlt=$(printf '%s\n' "${lt[@]}" | median)
    mlc=$(printf '%s\n' "${lc[@]}" | median)
    printf '%-6s %-16s %10.0f ops/s %7.2f µs/op\n' "$name" "$label" "$mpt" "$mpc"
    printf '%-6s %-16s %10.0f ops/s %7.2f µs/op\n' "$name" "loadrig" "$mlt" "$mlc"
    awk -v a="$mlt" -v b="$mpt" -v c="$mlc" -v d="$mpc" -v n="$name" \
        'BEGIN {printf "%-6s %-16s %10.2fx       %7.2fx  (goal: >= 1x throughput, <= 0.5x CPU)\n", n, "ratio", a / b, c / d}'
}

echo "loadrig vs peers: ${secs}s runs, $clients clients, median of $repeats, alternating ($(nproc) cores)"
echo "client CPU per operation = the process's user + sys time / operations completed"
if [[ $which == redis || $which == all ]]; then
    compare redis redis-benchmark peer_redis loadrig_redis
fi
if [[ $which == http || $which == all ]]; then
    compare http "wrk -t2" peer_http loadrig_http
fi
if [[ $which == http-pipe || $which == all ]]; then
    compare http-p "wrk -t2 -s pipe" peer_http_pipe loadrig_http_pipe
fi
