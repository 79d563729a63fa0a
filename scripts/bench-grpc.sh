#!/usr/bin/env bash
# loadrig's grpc:// target against ghz (the gRPC load tool) on the same throwaway etcd, the
# same call and the same connections:
#   range:     etcd's KV/Range of one key (serializable), 50 connections, one call in flight
#              on each: ghz -c 50 --connections 50  vs  loadrig --clients 50
#   range-mux: the same call, 4 HTTP/2 connections with 16 calls in flight on each (streams):
#              ghz -c 64 --connections 4  vs  loadrig --clients 4 --pipeline 16
#   put:       KV/Put of a 3-byte value to one key, 50 connections, one in flight (etcd's log
#              and fsync per put bound it: a figure of the server more than of the client)
# Runs alternate, the order flipped each turn (scripts/bench-compare.sh). Each process's own
# CPU (user + sys, /usr/bin/time) is divided by the calls it completed.
# Usage: scripts/bench-grpc.sh [range|range-mux|put|all] [SECONDS] [REPEATS]   (all: the first two)
# GHZ=PATH is the ghz binary (default target/peers/ghz/ghz): Debian does not package ghz and
# loadrig ships none of its code; scripts/build-peer.sh ghz installs it there as a Go module.
# ETCD_BENCHMARK=PATH adds etcd's own load tool as a second peer of the range cases
# (`benchmark range KEY --consistency s --conns N --clients M`, a fixed total of calls rather
# than a duration; scripts/build-peer.sh etcd-benchmark builds it into target/peers/).
# etcd comes from scripts/services.sh in ${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-grpc}
# and is stopped at the end. LOADRIG_BIN=PATH runs that loadrig binary and builds none
# (default: cargo build --release). PLACEMENT, IDLE and PAIRS_LOG as in bench-compare.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh
which=${1:-all}
secs=${2:-6}
repeats=${3:-5}
case $which in range | range-mux | put | all) ;; *)
    echo "usage: $0 [range|range-mux|put|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
ghz=${GHZ:-target/peers/ghz/ghz}
if [[ ! (-f $ghz && -x $ghz) ]]; then
    echo "GHZ=$ghz is not an executable file (scripts/build-peer.sh ghz installs one)" >&2
    exit 2
fi
if [[ -n ${ETCD_BENCHMARK:-} && ! (-f $ETCD_BENCHMARK && -x $ETCD_BENCHMARK) ]]; then
    echo "ETCD_BENCHMARK=$ETCD_BENCHMARK is not an executable file (scripts/build-peer.sh etcd-benchmark builds one)" >&2
    exit 2
fi
export LOADRIG_SERVICES_DIR=${LOADRIG_SERVICES_DIR:-/tmp/loadrig-bench-grpc}
[[ -x /usr/bin/time ]] || apt-get install -y time >/dev/null
if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}
out=$(mktemp -d)
trap 'idle_restore; "$bin" cleanup --target "${LOADRIG_ETCD_URL:-grpc://127.0.0.1:1}" >/dev/null 2>&1 || true; scripts/services.sh down >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
scripts/services.sh up etcd
eval "$(scripts/services.sh env)"
place_servers etcd

key=loadrig/bench
key64=$(printf %s "$key" | base64)
value64=$(printf %s abc | base64)
# The key both sides read, stored once (etcd's bytes fields are base64 in JSON).
printf 'name = "seed"\n[[op]]\nname = "put"\nkv.put = { key = "bench", value = "abc" }\n' >"$out/seed.toml"
"$bin" run "$out/seed.toml" --target "$LOADRIG_ETCD_URL" --clients 1 --ops 1 -o "$out/seed.json" >/dev/null

json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
cpu() { awk '{printf "%.3f", $1 + $2}' "$1"; } # user + sys seconds from /usr/bin/time -f '%U %S'

peer() { # CALL JSON CONCURRENCY CONNECTIONS: prints "OPS_PER_S CPU_US_PER_OP"
    /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        "$ghz" --insecure --proto workloads/etcd/rpc.proto --import-paths workloads \
        --call "$1" -d "$2" -c "$3" --connections "$4" -z "${secs}s" \
        -O json -o "$out/ghz.json" "127.0.0.1:$LOADRIG_ETCD_PORT" >"$out/ghz.txt" 2>&1 ||
        { tail -n 20 "$out/ghz.txt" >&2; exit 2; }
    # The calls answered OK over ghz's own duration; the calls in flight when it stops end
    # as Unavailable ("use of closed network connection") and are not counted.
    local ok errors
    ok=$(json "$out/ghz.json" "r['statusCodeDistribution'].get('OK', 0)")
    errors=$(json "$out/ghz.json" "r['count'] - $ok")
    ((errors <= $3)) || echo "ghz: $errors calls failed" >&2
    json "$out/ghz.json" "f\"{$ok * 1e9 / r['total']:.0f} {$(cpu "$out/time") * 1e6 / max(1, $ok):.2f}\""
}

# etcd's benchmark: CONNECTIONS CLIENTS; about $secs seconds of calls at the rate its last
# run measured (it runs a total, not a duration; compare runs each side in a subshell, so
# the rate is kept in a file).
peer_etcd() {
    local etcd_total=$((secs * 5000))
    [[ -f $out/etcd_total.$1 ]] && etcd_total=$(<"$out/etcd_total.$1")
    /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        "$ETCD_BENCHMARK" --endpoints "127.0.0.1:$LOADRIG_ETCD_PORT" --conns "$1" --clients "$2" \
        range "$key" --consistency s --total "$etcd_total" >"$out/etcd.txt" 2>"$out/etcd.err" ||
        { tail -n 20 "$out/etcd.err" "$out/etcd.txt" >&2; exit 2; }
    grep -q "Error distribution" "$out/etcd.txt" && echo "etcd benchmark: calls failed" >&2
    local rate
    rate=$(awk '/Requests\/sec:/ {print $2}' "$out/etcd.txt")
    awk -v r="$rate" -v n="$etcd_total" -v c="$(cpu "$out/time")" \
        'BEGIN {printf "%.0f %.2f\n", r, c * 1e6 / n}'
    # The next runs' total: about $secs seconds at this rate.
    awk -v r="$rate" -v s="$secs" 'BEGIN {printf "%d", r * s}' >"$out/etcd_total.$1"
}

loadrig_case() { # OP [loadrig options...]
    local op=$1
    shift
    cat >"$out/w.toml" <<EOF
name = "etcd-bench"
[grpc]
proto = "etcd/rpc.proto"
[[op]]
name = "call"
$op
EOF
    /usr/bin/time -f '%U %S' -o "$out/time" "${client_on[@]}" \
        "$bin" run "$out/w.toml" --target "$LOADRIG_ETCD_URL" --threads 2 \
        --duration "${secs}s" -o "$out/r.json" "$@" >/dev/null
    local ok errors
    ok=$(json "$out/r.json" "r['total']['ok']")
    errors=$(json "$out/r.json" "r['total']['errors']")
    ((errors == 0)) || echo "loadrig: $errors errors" >&2
    json "$out/r.json" "f\"{r['total']['throughput_per_s']:.0f} {$(cpu "$out/time") * 1e6 / max(1, $ok):.2f}\""
}

range_op="grpc = { method = \"etcdserverpb.KV/Range\", request = { key = \"$key\", serializable = true } }"
range_json="{\"key\":\"$key64\",\"serializable\":true}"
put_op="grpc = { method = \"etcdserverpb.KV/Put\", request = { key = \"$key\", value = \"abc\" } }"
put_json="{\"key\":\"$key64\",\"value\":\"$value64\"}"

peer_range() { peer etcdserverpb.KV.Range "$range_json" 50 50; }
loadrig_range() { loadrig_case "$range_op" --clients 50; }
peer_range_mux() { peer etcdserverpb.KV.Range "$range_json" 64 4; }
loadrig_range_mux() { loadrig_case "$range_op" --clients 4 --pipeline 16; }
peer_etcd_range() { peer_etcd 50 50; }
peer_etcd_range_mux() { peer_etcd 4 64; }
peer_put() { peer etcdserverpb.KV.Put "$put_json" 50 50; }
loadrig_put() { loadrig_case "$put_op" --clients 50; }

echo "loadrig vs ghz $(cat "$(dirname "$ghz")/COMMIT" 2>/dev/null || true) on etcd: ${secs}s runs, median of $repeats, alternating ($(nproc) cores)"
echo "client CPU per call = the process's user + sys time / calls completed"
etcd_peer=()
[[ -n ${ETCD_BENCHMARK:-} ]] && etcd_peer=("etcd benchmark" peer_etcd_range)
if [[ $which == range || $which == all ]]; then
    compare "etcd Range, 50 connections" "ghz -c 50" peer_range loadrig_range "${etcd_peer[@]}"
fi
[[ -n ${ETCD_BENCHMARK:-} ]] && etcd_peer=("etcd benchmark" peer_etcd_range_mux)
if [[ $which == range-mux || $which == all ]]; then
    compare "etcd Range, 4 connections x 16 streams" "ghz -c 64" peer_range_mux loadrig_range_mux \
        "${etcd_peer[@]}"
fi
if [[ $which == put ]]; then
    compare "etcd Put, 50 connections" "ghz -c 50" peer_put loadrig_put
fi
