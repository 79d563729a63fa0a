#!/usr/bin/env bash
# loadrig's memcached:// target against memcslap (Debian's libmemcached-tools: libmemcached
# 1.1's memslap) on the same throwaway memcached, in alternating pairs
# (scripts/bench-compare.sh), and against memtier_benchmark's memcached text protocol where
# MEMTIER names a build of it.
#
# Usage: scripts/bench-memcached.sh [get|mget|memtier|all] [KEYS] [REPEATS]
#
# What memcslap measures (`memcslap --help`; its source, src/bin/memslap.cc of libmemcached):
# `-e KEYS` makes KEYS items (keys of 20-60 random characters, values of 50-5,000 bytes,
# 2,525 on average) and stores them one `set` at a time on one connection; then it starts
# `-c` threads, each with a connection of its own, and times them from start to the last:
#   get   each thread gets KEYS keys drawn at random, one `get` in flight;
#   mget  each thread asks for all KEYS keys in one multi-get (`get K1 K2 ... KKEYS`).
# It prints the items it got in that time. `-l` (the initial load) is ignored: the count of
# gets is tied to the count of keys, and a run is a count, not a duration.
#
# loadrig does the same work on 4 connections (--clients 4 --threads THREADS) with the commands
# memcslap sends (`commands=classic`: set and get): KEYS items of 2,525 bytes under keys of
# memcslap's average length stored first ([data], 500 stores to a write), then 4 x KEYS gets
# of keys drawn at random (--ops):
#   get   one get in flight per connection;
#   mget  16 gets in flight per connection (--pipeline 16). A kv get is one key, so loadrig
#         pipelines single gets where memcslap sends one request for all its keys; both
#         rates count items.
# Rate: items got over the timed part (memcslap's threads; loadrig's run, its load apart).
# Client CPU per operation: the process's user + system time (/usr/bin/time) over its stores
# and gets (memcslap's key generation and thread start, loadrig's start, connects and result
# file included). Before every run the script empties the throwaway server (flush_all, which
# loadrig itself never sends), so each run stores into an empty cache. flush_all leaves
# memcached's memory pages with the item sizes that filled them, memcslap's spread of sizes
# and loadrig's one size keeping theirs: on the 128 MB of scripts/services.sh both sides'
# KEYS items fit up to about 15,000 (at 30,000, half of loadrig's gets missed). Gets that
# find nothing are said after the run that missed them.
#
# memtier (with MEMTIER=PATH, and in all): memtier_benchmark --protocol=memcache_text against
# loadrig, each for MEMTIER_SECONDS (default 5), on the KEYS items loadrig stores once
# beforehand (memtier asks for loadrig's key names: --key-prefix, keys 1 to KEYS): gets
# of keys drawn at random on 4 connections (memtier 2 threads x 2), one in flight, then 16
# pipelined. Loads are left out on both sides there. Debian does not package memtier and
# loadrig ships none of its code: scripts/build-peer.sh memtier builds it into the ignored
# target/peers/memtier/.
#
# Servers come from scripts/services.sh in their own state dir (LOADRIG_BENCH_SERVICES_DIR,
# default /tmp/loadrig-bench-services), stopped at the end unless KEEP_SERVICES=1. Needs
# root (services.sh installs packages, adds a user; memcslap comes from libmemcached-tools).
# LOADRIG_BIN=PATH runs that binary and builds none (default: cargo build --release).
# THREADS=N (default 2) sets loadrig's --threads and memtier's --threads (memcslap always
# runs a thread per connection).
# PAIRS_LOG, PLACEMENT and IDLE as in scripts/bench-compare.sh.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh

which_case=${1:-all}
keys=${2:-15000}
repeats=${3:-5}
case $which_case in get | mget | memtier | all) ;; *)
    echo "usage: $0 [get|mget|memtier|all] [KEYS] [REPEATS]" >&2
    exit 2
    ;;
esac
clients=4
threads=${THREADS:-2}
pipe=16
gets=$((clients * keys))
secs=${MEMTIER_SECONDS:-5}
compare_setup="$clients connections, loadrig --threads $threads"
# loadrig:key-for-memcslaps-key-length-NNNNN: 40 bytes, memcslap's average.
key_prefix=key-for-memcslaps-key-length-

export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-services}
loadrig_bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}
if [[ $which_case == memtier || ($which_case == all && -n ${MEMTIER:-}) ]]; then
    [[ -n ${MEMTIER:-} && -f $MEMTIER && -x $MEMTIER ]] || {
        say "MEMTIER=${MEMTIER:-} is not an executable file (scripts/build-peer.sh memtier builds one)"
        exit 2
    }
fi
sitting # $work, and on exit the servers stopped (bench-compare.sh)

# Run a command under /usr/bin/time: its output in $work/out, its CPU seconds on stdout.
timed() {
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${client_on[@]}" "$@" >"$work/out" 2>&1 || {
        say "failed: $1 (output below)"
        tail -n 20 "$work/out" >&2
        exit 2
    }
    awk '{print $1 + $2}' "$work/cpu"
}

# Empty the throwaway server: every run starts from an empty cache.
flush() {
    local reply
    exec 3<>"/dev/tcp/127.0.0.1/$LOADRIG_MEMCACHED_PORT"
    printf 'flush_all\r\n' >&3
    read -r reply <&3
    exec 3<&-
    [[ $reply == OK* ]] || {
        say "flush_all answered '$reply'"
        exit 2
    }
}

# memcslap's run: "ITEMS_PER_S CPU_US_PER_OP", from its "Time to set N keys: S seconds."
# and "Time to get(mget) N keys by T threads: S seconds." lines.
peer_memcslap() { # get|mget
    local cpu
    flush
    cpu=$(timed memcslap -s "127.0.0.1:$LOADRIG_MEMCACHED_PORT" -t "$1" -c "$clients" -e "$keys")
    python3 - "$work/out" "$cpu" "$gets" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
stored = int(re.search(r"Time to set\s+(\d+) keys", text).group(1))
got, s = re.search(r"Time to m?get\s+(\d+) keys by\s+\d+ threads:\s+([\d.]+) seconds", text).groups()
if int(got) != int(sys.argv[3]):
    print(f"memcslap got {got} of {sys.argv[3]} items", file=sys.stderr)
print(f"{int(got) / float(s):.0f} {float(sys.argv[2]) * 1e6 / (int(got) + stored):.2f}")
PY
}
peer_get() { peer_memcslap get; }
peer_mget() { peer_memcslap mget; }

# loadrig's run: "ITEMS_PER_S CPU_US_PER_OP"; a get that found nothing, or an error, is
# said (the server was emptied and loaded, so every get should find its item).
loadrig_run() { # loadrig flags...
    local cpu ok rate loaded
    cpu=$(timed "$loadrig_bin" run "$work/mc-get.toml" \
        --target "$LOADRIG_MEMCACHED_URL?commands=classic" --clients "$clients" \
        --threads "$threads" -o "$work/r.json" "$@")
    read -r ok rate loaded < <(python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t, get, load = r["total"], r["operations"][0], r["data_load"]
print(t["ok"], round(t["throughput_per_s"]), load["records"] if load and not load["skipped"] else 0)
if t["errors"] or get["rows"] != get["ok"]:
    print(f"loadrig: {t['errors']} errors, {get['ok'] - get['rows']} gets found nothing", file=sys.stderr)
PY
    )
    echo "$rate $(awk -v c="$cpu" -v n="$((ok + loaded))" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}
lr_get() {
    flush
    loadrig_run --ops "$gets"
}
lr_pipe() {
    flush
    loadrig_run --ops "$gets" --pipeline "$pipe"
}

# memtier's run on the items loadrig stored: "ITEMS_PER_S CPU_US_PER_OP" from its JSON.
peer_memtier() { # pipeline
    local cpu
    cpu=$(timed "$MEMTIER" --server 127.0.0.1 --port "$LOADRIG_MEMCACHED_PORT" \
        --protocol memcache_text --threads "$threads" --clients $((clients / threads)) \
        --pipeline "$1" --ratio 0:1 --key-pattern R:R --key-prefix "loadrig:$key_prefix" \
        --key-minimum 1 --key-maximum "$keys" --distinct-client-seed \
        --test-time "$secs" --hide-histogram --json-out-file "$work/memtier.json")
    python3 - "$work/memtier.json" "$cpu" <<'PY'
import json, sys
gets = json.load(open(sys.argv[1]))["ALL STATS"]["Gets"]
if gets.get("Misses/sec"):
    print(f"memtier: {gets['Misses/sec']:.0f} misses a second", file=sys.stderr)
print(f"{gets['Ops/sec']:.0f} {float(sys.argv[2]) * 1e6 / gets['Count']:.2f}")
PY
}
peer_memtier_get() { peer_memtier 1; }
peer_memtier_pipe() { peer_memtier "$pipe"; }
lr_timed_get() { loadrig_run --skip-load --duration "${secs}s"; }
lr_timed_pipe() { loadrig_run --skip-load --duration "${secs}s" --pipeline "$pipe"; }

cat >"$work/mc-get.toml" <<TOML
name = "mc-get"
description = "$keys items of 2,525 bytes stored, then gets of them at random, as memcslap"
[data]
count = $keys
key = "$key_prefix{seq 1}"
value = "{bytes 2525}"
batch = 500
[[op]]
name = "get"
kv.get = { key = "$key_prefix{uniform 1..$((keys + 1))}" }
TOML

if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
if ! command -v memcslap >/dev/null; then
    say "installing libmemcached-tools (memcslap)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libmemcached-tools >"$work/apt.log" 2>&1 || {
        cat "$work/apt.log" >&2
        exit 2
    }
fi
need memcached
echo "loadrig against memcslap and memtier_benchmark on memcached: $clients connections, $(nproc) cores, $(date -u +%Y-%m-%d)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"

case_get() {
    run_length="runs of $keys stores and $gets gets" compare \
        "memcached get, one in flight" memcslap peer_get lr_get
}
case_mget() {
    run_length="runs of $keys stores and $gets gets" CPU_GOAL=0.5 compare \
        "memcached get, memcslap's multi-get of all keys; loadrig $pipe in flight" \
        memcslap peer_mget lr_pipe
}
case_memtier() {
    flush
    "$loadrig_bin" run "$work/mc-get.toml" --target "$LOADRIG_MEMCACHED_URL" --ops 1 \
        -o "$work/load.json" >"$work/load.log" 2>&1 || {
        cat "$work/load.log" >&2
        exit 2
    }
    compare "memcached get of $keys items, one in flight" memtier peer_memtier_get lr_timed_get
    CPU_GOAL=0.5 compare "memcached get of $keys items, $pipe in flight" memtier \
        peer_memtier_pipe lr_timed_pipe
}
case $which_case in
get) case_get ;;
mget) case_mget ;;
memtier) case_memtier ;;
all)
    case_get
    case_mget
    if [[ -n ${MEMTIER:-} ]]; then case_memtier; fi
    ;;
esac
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
