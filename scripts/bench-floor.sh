#!/usr/bin/env bash
# loadrig against the kernel floor: minimal C clients (scripts/floor/*.c) that do nothing
# but one send and one receive per operation on N connections from one thread, on the same
# throwaway servers, run alternately (floor, loadrig, loadrig, floor, ...). loadrig runs with
# --threads 1 like the floors. CPU per operation: the floor's own getrusage after it
# connected; loadrig's user + system time (/usr/bin/time) over its completed operations.
# Prints the medians of the repeats and loadrig / floor (issue 14's goal: <= 1.1x CPU per op).
#
# Usage: scripts/bench-floor.sh [redis|pg|http|all] [SECONDS] [REPEATS]
#   redis  GET of random keys among 100,000, 50 connections (redis-floor.c, epoll mode)
#   pg     pgbench -S's select, prepared, scale 10, 4 connections (pg-floor.c)
#   http   GET of nginx's small static file, 50 connections (http-floor.c)
# Servers come from scripts/services.sh in LOADRIG_BENCH_SERVICES_DIR (default
# /tmp/loadrig-bench-floor), stopped at the end. Needs root (packages), gcc, libpq-dev,
# liburing-dev (installed when missing). LOADRIG_BIN=PATH runs that loadrig binary and builds
# none (default: cargo build --release), as in bench-peers.sh and bench-net.sh.
# PLACEMENT=split runs the servers on the last CPU and both clients on the others
# (scripts/bench-compare.sh).
# IDLE=poll makes idle CPUs poll before they halt, IDLE=halt makes them halt at once, for the
# sitting (scripts/bench-compare.sh).
# shellcheck disable=SC2016
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh

which_case=${1:-all}
secs=${2:-10}
repeats=${3:-3}
case $which_case in redis | pg | http | all) ;; *)
    echo "usage: $0 [redis|pg|http|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-floor}
work=$(mktemp -d)
trap 'idle_restore; scripts/services.sh down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

for pkg in gcc libpq-dev liburing-dev time; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt-get install -y "$pkg" >/dev/null
done
gcc -O2 scripts/floor/redis-floor.c -o "$work/redis-floor" -luring
gcc -O2 scripts/floor/pg-floor.c -o "$work/pg-floor" -I/usr/include/postgresql -lpq
gcc -O2 scripts/floor/http-floor.c -o "$work/http-floor"
if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}

need=()
[[ $which_case == redis || $which_case == all ]] && need+=(redis)
[[ $which_case == pg || $which_case == all ]] && need+=(postgres)
[[ $which_case == http || $which_case == all ]] && need+=(nginx)
scripts/services.sh up "${need[@]}" >"$work/services.log" 2>&1 || {
    cat "$work/services.log" >&2
    exit 2
}
eval "$(scripts/services.sh env)"
place_servers "${need[@]}"

# A floor's line "... N ops, R ops/s, user U sys S us/op, total T us/op" as "R T".
floor_run() {
    "${client_on[@]}" "$@" | sed -n 's/.* ops, \([0-9.]*\) ops\/s, .*total \([0-9.]*\) us\/op.*/\1 \2/p'
}
# redis-floor.c prints "... R ops/s, user U sys S us/op, total T us/op, ...".
redis_floor_run() {
    "${client_on[@]}" "$@" | sed -n 's/.*: \([0-9.]*\) ops\/s, .*total \([0-9.]*\) us\/op.*/\1 \2/p'
}

# One loadrig run (workload file, connections, target): "OPS_PER_S CPU_US_PER_OP".
loadrig_run() {
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${client_on[@]}" "$bin" run "$1" --clients "$2" --threads 1 \
        --duration "${secs}s" --target "$3" -o "$work/r.json" >"$work/out" 2>&1 || {
        tail -n 20 "$work/out" >&2
        exit 2
    }
    local ok errors
    ok=$(field "$work/r.json" "r['total']['ok']")
    errors=$(field "$work/r.json" "r['total']['errors']")
    ((errors == 0)) || echo "loadrig: $errors errors" >&2
    echo "$(field "$work/r.json" "round(r['total']['throughput_per_s'])") $(awk -v n="$ok" '{printf "%.2f", ($1 + $2) * 1e6 / n}' "$work/cpu")"
}


cat >"$work/redis.toml" <<'EOF'
name = "redis-get"
[[op]]
name = "get"
kv.get = { key = "key:{uniform 0..100000}" }
EOF
cat >"$work/pg.toml" <<'EOF'
name = "pg-select"
[[op]]
name = "select"
sql = { query = "SELECT abalance FROM pgbench_accounts WHERE aid = $1", params = ["{uniform 1..1000000}"] }
EOF
cat >"$work/http.toml" <<'EOF'
name = "http-get"
[[op]]
name = "get"
http = { path = "/static/hello.txt", expect = 200 }
EOF

floor_redis() { redis_floor_run "$work/redis-floor" epoll "$LOADRIG_REDIS_PORT" "$LOADRIG_REDIS_PASSWORD" 50 "$secs"; }
lr_redis() { loadrig_run "$work/redis.toml" 50 '${LOADRIG_REDIS_URL}'; }
# Plain TCP for the floor: it writes the protocol on libpq's socket itself.
floor_pg() { floor_run "$work/pg-floor" "$LOADRIG_PG_URL?sslmode=disable" 4 "$secs"; }
lr_pg() { loadrig_run "$work/pg.toml" 4 '${LOADRIG_PG_URL}'; }
floor_http() { floor_run "$work/http-floor" "$LOADRIG_HTTP_PORT" /static/hello.txt 50 "$secs"; }
lr_http() { loadrig_run "$work/http.toml" 50 '${LOADRIG_HTTP_URL}'; }

echo "loadrig vs the kernel floor: ${secs}s runs, median of $repeats, alternating, one thread each ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
if [[ $which_case == pg || $which_case == all ]]; then
    PGPASSWORD=$LOADRIG_PG_PASSWORD pgbench -i -s 10 -q -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig >"$work/init.log" 2>&1 || {
        cat "$work/init.log" >&2
        exit 2
    }
    CPU_GOAL=1.1 RATE_GOAL= compare pg floor floor_pg lr_pg
fi
if [[ $which_case == redis || $which_case == all ]]; then CPU_GOAL=1.1 RATE_GOAL= compare redis floor floor_redis lr_redis; fi
if [[ $which_case == http || $which_case == all ]]; then CPU_GOAL=1.1 RATE_GOAL= compare http floor floor_http lr_http; fi
