#!/usr/bin/env bash
# loadrig against the usual peer tools on the same throwaway servers, same client count:
#   redis: redis-benchmark -t get,set -c 50   vs  loadrig, 50 clients doing GET/SET
#          (and memtier_benchmark --ratio 1:1 --threads 2 --clients 25 when MEMTIER is set:
#          then A B C C B A, redis-benchmark, memtier, loadrig)
#   http:  wrk -t2 -c50 on nginx's small static file  vs  loadrig, 50 clients doing GET
#   http-pipe: the same with 16 requests pipelined per connection: wrk -s with a Lua
#          script sending 16 requests at once (wrk's pipeline.lua)  vs  loadrig
#          --clients 50 --pipeline 16 --pipeline-refill all (50 connections, 800 streams;
#          each connection writes its 16 again once all 16 are answered, as the script does;
#          PIPELINE_REFILL=each refills a stream as soon as its response is read;
#          PIPELINE_REFILL=both runs loadrig both ways, each as a further peer of all)
#   http2: h2load -c50 -t2 -m1 on nginx's h2c benchmark port (HTTP/2 by prior knowledge, no
#          GOAWAY after 1,000 requests: h2load does not reconnect), the same file
#          vs  loadrig --clients 50 on ?http=2: one stream in flight on each of 50 connections
#   http2-mux: the same with 16 streams a connection: h2load -m16  vs  loadrig --pipeline 16
#          (50 connections, 800 streams, each refilled as soon as its response is in, as
#          h2load does)
# Runs alternate, the order flipped each turn (peer, loadrig, loadrig, peer, ...). Each
# process's own CPU (user + sys, from /usr/bin/time) is divided by the operations it
# completed. Prints the medians of the repeats and the ratios loadrig / peer.
# Usage: scripts/bench-net.sh [redis|http|http-pipe|http2|http2-mux|all] [SECONDS] [REPEATS]
# (all: redis, http and http-pipe)
# Servers come from scripts/services.sh in ${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-net}
# and are stopped at the end. Needs root (packages); installs wrk and h2load
# (nghttp2-client) if they are missing.
# LOADRIG_BIN=PATH runs that loadrig binary and builds none (default: cargo build --release).
# PLACEMENT=split runs the servers on the last CPU and every client on the others
# (scripts/bench-compare.sh).
# IDLE=poll makes idle CPUs poll before they halt, IDLE=halt makes them halt at once, for the
# sitting (scripts/bench-compare.sh).
# MEMTIER=PATH adds memtier_benchmark as a second Redis peer; Debian does not package it and
# loadrig ships none of its code: scripts/build-peer.sh memtier builds it into the ignored
# target/peers/memtier/ (then MEMTIER=target/peers/memtier/memtier_benchmark).
# SERVER_CPU=1 prints, after each run of the HTTP cases, nginx's CPU per operation: its
# workers' user + system time over the operations the client completed.
# SCHED=1 prints, after each run of the HTTP cases, what the whole machine did per operation
# while that client ran (perf stat -a): wake-ups, context switches, epoll_wait calls and
# reads (recvfrom and read, the server's included), the kernel side of a client's cost
# that /usr/bin/time does not show (docs/performance.md, "What pipelined HTTP/1.1's gap is
# made of").
# THREADS=N gives every client N threads (wrk -t, h2load -t, memtier --threads, loadrig
# --threads; default 2), named in the titles so pools keep thread counts apart.
# BASELINE=PATH adds another loadrig build as a further peer in every case, in the same
# alternation (a change against the build before it, beside the peer).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh
which=${1:-all}
secs=${2:-10}
repeats=${3:-3}
threads=${THREADS:-2}
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "THREADS=$threads: expected a count of threads" >&2; exit 2; }
[[ $threads == 2 ]] || compare_setup="client threads $threads" # in the titles (bench-compare.sh)
case $which in redis | http | http-pipe | http2 | http2-mux | all) ;; *)
    echo "usage: $0 [redis|http|http-pipe|http2|http2-mux|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
export LOADRIG_SERVICES_DIR=${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-net}
clients=50
depth=16
refill=${PIPELINE_REFILL:-all}
case $refill in each | all | both) ;; *)
    echo "PIPELINE_REFILL=$refill: expected each, all or both" >&2
    exit 2
    ;;
esac
lr_refill=$refill # loadrig's own run; with both, each runs as a further peer
[[ $refill == both ]] && lr_refill=all

need=()
[[ $which == http* || $which == all ]] && need+=(nginx)
[[ $which == redis || $which == all ]] && need+=(redis)
if [[ " ${need[*]} " == *" nginx "* ]] && ! command -v wrk >/dev/null; then
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y wrk >/dev/null; }
fi
if [[ $which == http2* ]] && ! command -v h2load >/dev/null; then
    apt-get install -y nghttp2-client >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y nghttp2-client >/dev/null; }
fi
[[ -x /usr/bin/time ]] || apt-get install -y time >/dev/null
if [[ -n ${MEMTIER:-} && ! (-f $MEMTIER && -x $MEMTIER) ]]; then
    echo "MEMTIER=$MEMTIER is not an executable file (scripts/build-peer.sh memtier builds one)" >&2
    exit 2
fi
if [[ -n ${BASELINE:-} && ! (-f $BASELINE && -x $BASELINE) ]]; then
    echo "BASELINE=$BASELINE is not an executable file (a loadrig build)" >&2
    exit 2
fi
if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}
out=$(mktemp -d)
trap 'idle_restore; scripts/services.sh down >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
scripts/services.sh up "${need[@]}"
eval "$(scripts/services.sh env)"
place_servers "${need[@]}"

json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
cpu() { awk '{printf "%.3f", $1 + $2}' "$1"; } # user + sys seconds from /usr/bin/time -f '%U %S'

# Each case function prints "OPS_PER_S CPU_US_PER_OP" for one run.
peer_redis() {
    local n=$((secs * 20000))
    /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
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

# memtier: the same shape, half SETs and half GETs of 3-byte values on key:1 .. key:100000,
# THREADS threads (2 by default) sharing the connections, one request in flight on each; it
# counts every reply.
peer_memtier_redis() {
    /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        "$MEMTIER" --server 127.0.0.1 --port "$LOADRIG_REDIS_PORT" \
        --authenticate "$LOADRIG_REDIS_PASSWORD" --protocol redis \
        --threads "$threads" --clients $((clients / threads)) --pipeline 1 --ratio 1:1 --key-pattern R:R \
        --key-minimum 1 --key-maximum 100000 --key-prefix key: --distinct-client-seed \
        --data-size 3 --test-time "$secs" --hide-histogram --json-out-file "$out/memtier.json" \
        >"$out/memtier.txt" 2>&1 || { tail -n 20 "$out/memtier.txt" >&2; exit 2; }
    json "$out/memtier.json" \
        "f\"{r['ALL STATS']['Totals']['Ops/sec']:.0f} {$(cpu "$out/time") * 1e6 / r['ALL STATS']['Totals']['Count']:.2f}\""
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

# nginx's workers' CPU time so far, in clock ticks (0 unless SERVER_CPU=1).
nginx_ticks() {
    local p t=0 pid=$LOADRIG_SERVICES_DIR/nginx/nginx.pid
    [[ ${SERVER_CPU:-} == 1 && -f $pid ]] || { echo 0 && return; }
    for p in $(pgrep -P "$(cat "$pid")"); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$t"
}
# With SERVER_CPU=1: nginx's CPU per operation since ticks $2, over $3 operations of client $1.
nginx_note() {
    [[ ${SERVER_CPU:-} == 1 ]] || return 0
    local used=$(($(nginx_ticks) - $2))
    python3 -c "print(f'  nginx CPU under $1: {$used * 1e6 / $(getconf CLK_TCK) / max(1, $3):.2f} µs/op')" >&2
}

# With SCHED=1: the prefix that counts the whole machine's scheduler events and system calls
# while an HTTP client runs, and the note that prints them per operation of client $1 ($2
# operations).
sched_on=()
if [[ ${SCHED:-} == 1 ]]; then
    command -v perf >/dev/null || apt-get install -y linux-perf >/dev/null
    sched_on=(perf stat -a -x, -o "$out/sched.csv" -e sched:sched_wakeup,sched:sched_switch,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read --)
fi
sched_note() {
    [[ ${SCHED:-} == 1 ]] || return 0
    python3 - "$1" "$2" "$out/sched.csv" <<'EOF' >&2
import sys
name, n = sys.argv[1], max(1, int(sys.argv[2]))
c = {}
for line in open(sys.argv[3]):
    f = line.split(",")
    if len(f) > 2 and f[0].strip().isdigit():
        c[f[2].split(":")[-1]] = int(f[0])
reads = c.get("sys_enter_recvfrom", 0) + c.get("sys_enter_read", 0)
print(f"  machine under {name}, a request: wake-ups {c.get('sched_wakeup', 0) / n:.3f}, "
      f"switches {c.get('sched_switch', 0) / n:.3f}, epoll_wait {c.get('sys_enter_epoll_wait', 0) / n:.3f}, "
      f"reads {reads / n:.3f}")
EOF
}

# After an HTTP client's run: what SERVER_CPU=1 and SCHED=1 ask for, for client $1 ($3
# operations since nginx's ticks $2).
http_notes() {
    nginx_note "$1" "$2" "$3"
    sched_note "$1" "$3"
}

peer_http() { # [wrk options...] [-- script arguments...]
    local t0
    t0=$(nginx_ticks)
    "${sched_on[@]}" /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        wrk -t"$threads" -c"$clients" -d"${secs}s" "$LOADRIG_HTTP_URL/static/hello.txt" "$@" >"$out/wrk.txt"
    local n
    n=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
    http_notes wrk "$t0" "$n"
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
    loadrig_http --pipeline "$depth" --pipeline-refill "${1:-$lr_refill}"
}
loadrig_http_pipe_each() { loadrig_http_pipe each; }

# h2load on the h2c port: $1 streams at once on each of $clients connections; it counts
# each response.
peer_http2() {
    local t0
    t0=$(nginx_ticks)
    "${sched_on[@]}" /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        h2load -c"$clients" -t"$threads" -m"$1" -D"$secs" \
        "http://127.0.0.1:$LOADRIG_HTTP2_BENCH_PORT/static/hello.txt" >"$out/h2load.txt"
    local n
    n=$(awk '/^requests:/ {print $8}' "$out/h2load.txt") # succeeded
    http_notes h2load "$t0" "$n"
    awk -v n="$n" -v c="$(cpu "$out/time")" \
        '/^finished in/ {gsub(",", ""); printf "%.0f %.2f\n", $4, c * 1e6 / n}' "$out/h2load.txt"
}
peer_http2_one() { peer_http2 1; }
peer_http2_mux() { peer_http2 "$depth"; }

loadrig_http2() { # [loadrig options...]
    cat >"$out/http.toml" <<'EOF'
name = "http-get"
description = "GET of nginx's small static file, as wrk does"
[[op]]
name = "get"
http = { path = "/static/hello.txt", expect = 200 }
EOF
    loadrig_case http.toml "http://127.0.0.1:$LOADRIG_HTTP2_BENCH_PORT?http=2" "$@"
}
loadrig_http2_mux() { loadrig_http2 --pipeline "$depth"; }

loadrig_case() { # workload target [loadrig options...]
    local workload=$1 target=$2 t0 counted=()
    shift 2
    [[ $workload == http.toml ]] && counted=("${sched_on[@]}")
    t0=$(nginx_ticks)
    "${counted[@]}" /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        "$bin" run "$out/$workload" --target "$target" --clients "$clients" --threads "$threads" \
        --duration "${secs}s" -o "$out/r.json" "$@" >/dev/null
    local ok errors
    ok=$(json "$out/r.json" "r['total']['ok']")
    errors=$(json "$out/r.json" "r['total']['errors']")
    ((errors == 0)) || echo "loadrig: $errors errors in $workload" >&2
    [[ $workload == http.toml ]] && http_notes "$(basename "$bin")" "$t0" "$ok"
    json "$out/r.json" "f\"{r['total']['throughput_per_s']:.0f} {$(cpu "$out/time") * 1e6 / max(1, $ok):.2f}\""
}

# Each loadrig case run with the BASELINE build: baseline_loadrig_http2 and so on.
for case_fn in loadrig_redis loadrig_http loadrig_http_pipe loadrig_http2 loadrig_http2_mux; do
    eval "baseline_$case_fn() { local bin=\$BASELINE; $case_fn; }"
done
# The BASELINE build as a further peer (its name, its case function) of loadrig case $1.
baseline_peer() { if [[ -n ${BASELINE:-} ]]; then echo "baseline baseline_$1"; fi; }

# Each peer and loadrig, REPEATS times, the order flipped each turn (A B B A, or A B C C B A
# with a second peer); the medians, then loadrig's ratios against each peer.

echo "loadrig vs peers: ${secs}s runs, $clients clients, median of $repeats, alternating ($(nproc) cores)"
echo "client CPU per operation = the process's user + sys time / operations completed"
if [[ $which == redis || $which == all ]]; then
    memtier=()
    [[ -n ${MEMTIER:-} ]] && memtier=(memtier peer_memtier_redis)
    compare redis redis-benchmark peer_redis loadrig_redis "${memtier[@]}" $(baseline_peer loadrig_redis)
fi
if [[ $which == http || $which == all ]]; then
    compare http "wrk -t$threads" peer_http loadrig_http $(baseline_peer loadrig_http)
fi
if [[ $which == http-pipe || $which == all ]]; then
    each=()
    [[ $refill == both ]] && each=("loadrig, refill each" loadrig_http_pipe_each)
    CPU_GOAL=0.5 compare "http-p, refill $lr_refill" "wrk -t$threads -s pipe" peer_http_pipe loadrig_http_pipe \
        "${each[@]}" $(baseline_peer loadrig_http_pipe)
fi
if [[ $which == http2 ]]; then
    compare http2 "h2load -m1" peer_http2_one loadrig_http2 $(baseline_peer loadrig_http2)
fi
if [[ $which == http2-mux ]]; then
    compare "http2, 16 streams" "h2load -m16" peer_http2_mux loadrig_http2_mux \
        $(baseline_peer loadrig_http2_mux)
fi
