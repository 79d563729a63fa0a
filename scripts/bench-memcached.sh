#!/usr/bin/env bash
# loadrig's memcached:// target against memcslap (libmemcached-tools) on the same throwaway
# memcached, run alternately (memcslap, loadrig, loadrig, memcslap, ...). Each process's own
# CPU (user + system, from /usr/bin/time) is divided by the operations it completed, its
# loading stores included (both sides store their keys first, then read them).
#
# Usage: scripts/bench-memcached.sh [get|pipe|all] [SECONDS] [REPEATS]
#   get   memcslap -t get -c 4 (4 threads, a connection each, one get in flight)  vs  loadrig,
#         4 clients, --threads 2, one get in flight
#   pipe  memcslap -t mget -c 4 (each thread asks for all its keys in one multi-get)  vs
#         loadrig --pipeline 16 on 4 connections (16 gets in flight per connection)
# memcslap stores KEYS keys (random names, random values of up to a few kB: 2,500 bytes on
# average here), then its threads read them; loadrig stores KEYS keys of 2,500 bytes, then
# reads them uniformly at random. memcslap runs a count, not a time: SECONDS sets its count
# (about SECONDS seconds of gets on this machine), and loadrig runs SECONDS.
#
# Servers come from scripts/services.sh in their own state dir (LOADRIG_BENCH_SERVICES_DIR,
# default /tmp/loadrig-bench-services), stopped at the end unless KEEP_SERVICES=1. Needs
# root (services.sh installs packages, adds a user; memcslap comes from libmemcached-tools).
# LOADRIG_BIN=PATH runs that binary and builds none (default: cargo build --release).
# PAIRS_LOG=FILE appends each pair for scripts/bench_pairs.py pool (scripts/bench-compare.sh).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh

which_case=${1:-all}
secs=${2:-10}
repeats=${3:-3}
clients=4
threads=${THREADS:-2}
keys=20000
compare_setup="$clients clients, loadrig --threads $threads"

export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-services}
target_dir=${CARGO_TARGET_DIR:-target}
loadrig_bin=${LOADRIG_BIN:-$target_dir/release/loadrig}
work=$(mktemp -d)
started=0

finish() {
    idle_restore
    rm -rf "$work"
    if ((started)) && [[ ${KEEP_SERVICES:-0} != 1 ]]; then
        scripts/services.sh down >/dev/null 2>&1 || true
    fi
}
trap finish EXIT

say() { echo "bench-memcached: $*" >&2; }

# Run a command under /usr/bin/time: its output in $work/out, its CPU seconds on stdout.
timed() {
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${client_on[@]}" "$@" >"$work/out" 2>&1 || {
        say "failed: $1 (output below)"
        tail -n 20 "$work/out" >&2
        exit 2
    }
    awk '{print $1 + $2}' "$work/cpu"
}

# memcslap's run: "GETS_PER_S CPU_US_PER_OP", from its "Time to get(mget) N keys by T
# threads: S seconds." line; its operations are those N gets and its KEYS loading stores.
peer_memcslap() { # test (get or mget)
    local cpu per_thread=$((secs * 2500))
    [[ $1 == mget ]] && per_thread=$keys
    cpu=$(timed memcslap -s "127.0.0.1:$LOADRIG_MEMCACHED_PORT" -t "$1" -c "$clients" \
        -e "$per_thread")
    python3 - "$work/out" "$cpu" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
stored = int(re.search(r"Time to set\s+(\d+) keys", text).group(1))
n, s = re.search(r"Time to m?get\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", text).groups()
print(f"{int(n) / float(s):.0f} {float(sys.argv[2]) * 1e6 / (int(n) + stored):.2f}")
PY
}

# loadrig's run: the same count of keys stored by [data], then gets for SECONDS.
loadrig_get() { # loadrig flags...
    local cpu ok rate loaded
    cpu=$(timed "$loadrig_bin" run "$work/mc-get.toml" --target "$LOADRIG_MEMCACHED_URL" \
        --clients "$clients" --threads "$threads" --duration "${secs}s" -o "$work/r.json" "$@")
    read -r ok rate loaded < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["total"]["ok"], r["total"]["throughput_per_s"], r["data_load"]["records"])
if r["total"]["errors"]: print("loadrig counted errors:", r["total"]["errors"], file=sys.stderr)' "$work/r.json")
    echo "$rate $(awk -v c="$cpu" -v n="$((ok + loaded))" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

peer_get() { peer_memcslap get; }
peer_mget() { peer_memcslap mget; }
lr_get() { loadrig_get; }
lr_pipe() { loadrig_get --pipeline 16; }

cat >"$work/mc-get.toml" <<TOML
name = "mc-get"
description = "$keys keys of 2,500 bytes stored, then gets of them at random, as memcslap"
[data]
count = $keys
key = "key:{seq}"
value = "{bytes 2500}"
batch = 500
[[op]]
name = "get"
kv.get = { key = "key:{uniform 0..$keys}" }
TOML

if [[ -z ${LOADRIG_BIN:-} ]]; then CARGO_TARGET_DIR=$target_dir cargo build --release --quiet; fi
if ! command -v memcslap >/dev/null; then
    say "installing libmemcached-tools (memcslap)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libmemcached-tools >"$work/apt.log" 2>&1 || {
        cat "$work/apt.log" >&2
        exit 2
    }
fi
scripts/services.sh up memcached >"$work/services.log" 2>&1 || {
    cat "$work/services.log" >&2
    exit 2
}
started=1
eval "$(scripts/services.sh env)"
place_servers memcached
echo "loadrig against memcslap: $clients connections, $(nproc) cores, $(date -u +%Y-%m-%d)"
case $which_case in
get) compare "memcached get, one in flight" memcslap peer_get lr_get ;;
pipe) CPU_GOAL=0.5 compare "memcached get, pipelined (memcslap mget; loadrig 16 in flight)" memcslap peer_mget lr_pipe ;;
all)
    compare "memcached get, one in flight" memcslap peer_get lr_get
    CPU_GOAL=0.5 compare "memcached get, pipelined (memcslap mget; loadrig 16 in flight)" memcslap peer_mget lr_pipe
    ;;
*)
    echo "usage: $0 [get|pipe|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
