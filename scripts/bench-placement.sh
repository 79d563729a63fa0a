#!/usr/bin/env bash
# Where a PostgreSQL run's CPU goes, run by run: loadrig at each thread count of THREADS_LIST
# and a peer (sysbench oltp_point_select, or pgbench -S), alternately on one throwaway
# server, 4 clients each. Per run it prints the rate, the client's CPU per transaction
# (/usr/bin/time), the server's CPU per transaction (the user + system ticks of the
# `postgres: loadrig loadrig` backends, sampled 1 s and 3 s into the run, over the
# transactions of those 2 s at the run's rate) and the CPUs the client's threads and the
# backends ran on. On a two-core machine a run's rate is set by the sum of both sides' CPU
# per transaction; this shows which side's cost moved in a slow run (docs/performance.md,
# "Where a slow run's CPU goes").
#
# Usage: scripts/bench-placement.sh [sysbench|pgbench] [ROUNDS] [SECONDS]
# THREADS_LIST="2 4" (default 2): loadrig's --threads for its runs, each a side of its own.
# LOADRIG_BIN=PATH runs that binary and builds none (default: cargo build --release). The
# servers come from scripts/services.sh in LOADRIG_BENCH_SERVICES_DIR (default
# /tmp/loadrig-bench-services) and are stopped at the end unless KEEP_SERVICES=1. SECONDS
# must be at least 4 (the samples are at 1 s and 3 s).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

peer=${1:-sysbench}
rounds=${2:-12}
secs=${3:-4}
case $peer in sysbench | pgbench) ;; *)
    echo "usage: $0 [sysbench|pgbench] [ROUNDS] [SECONDS]" >&2
    exit 2
    ;;
esac
((secs >= 4)) || {
    echo "SECONDS=$secs: expected at least 4 (the server is sampled 1 s and 3 s into each run)" >&2
    exit 2
}
read -r -a thread_counts <<<"${THREADS_LIST:-2}"
# shellcheck source=scripts/bench-pg.sh
source scripts/bench-pg.sh

# Uniform ids, as loadrig's built-in draws them (sysbench 1.0's default is its skewed
# `special`; scripts/bench-peers.sh says why that matters).
sb=(--rand-type=uniform --db-driver=pgsql --pgsql-host=127.0.0.1 "--pgsql-port=$LOADRIG_PG_PORT" --pgsql-user=loadrig
    "--pgsql-password=$LOADRIG_PG_PASSWORD" --pgsql-db=loadrig --tables=1 --table-size=100000)
if [[ $peer == sysbench ]]; then
    workload=oltp_point_select
    lr_set=(--set table_size=100000)
    sysbench oltp_point_select "${sb[@]}" cleanup >/dev/null 2>&1 || true
    sysbench oltp_point_select "${sb[@]}" prepare >"$work/prep.log" 2>&1
else
    workload=pgbench-select-only
    lr_set=(--set scale=10)
    pgbench -i -s 10 -q -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig >"$work/prep.log" 2>&1
fi
"$loadrig_bin" run "$workload" --target '${LOADRIG_PG_URL}' "${lr_set[@]}" --clients 1 --ops 1 \
    -o "$work/load.json" >"$work/load.log" 2>&1

backend_ticks() { # user + system ticks of the load's backends, summed
    local t=0 b
    for b in $(pgrep -f '^postgres: loadrig loadrig' || true); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$b/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
cpus() { # pid: the CPU each client thread last ran on, then each backend's
    local s="" t
    for t in /proc/"$1"/task/*; do
        case $(cat "$t/comm" 2>/dev/null) in clients-* | sysbench | pgbench)
            s+=$(awk '{print $39}' "$t/stat" 2>/dev/null) ;;
        esac
    done
    s+=/
    for t in $(pgrep -f '^postgres: loadrig loadrig' || true); do
        s+=$(awk '{print $39}' "/proc/$t/stat" 2>/dev/null || true)
    done
    echo "$s"
}

tick_us=$((1000000 / $(getconf CLK_TCK)))
run() { # side: one run, printed as "side rate client-us/tx server-us/tx cpus"
    local side=$1 cmd
    case $side in
        sysbench) cmd=(sysbench oltp_point_select "${sb[@]}" --threads=4 "--time=$secs" run) ;;
        pgbench) cmd=(pgbench -S -M prepared -c 4 -j 2 -T "$secs" -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig) ;;
        *) cmd=("$loadrig_bin" run "$workload" --target '${LOADRIG_PG_URL}' "${lr_set[@]}" --skip-load
            --clients 4 --threads "${side#loadrig-t}" --duration "${secs}s" -o "$work/r.json") ;;
    esac
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${cmd[@]}" >"$work/out" 2>&1 &
    local timer=$! pid=""
    while [[ -z $pid ]]; do pid=$(pgrep -P "$timer" || true); done # the client under time
    sleep 1
    local t0 t1 placed
    t0=$(backend_ticks)
    sleep 2
    t1=$(backend_ticks)
    placed=$(cpus "$pid")
    wait "$timer"
    local n rate
    case $side in
        sysbench) read -r n rate < <(sed -n 's/^ *transactions: *\([0-9]*\) *(\([0-9.]*\) per sec.*/\1 \2/p' "$work/out") ;;
        pgbench)
            n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
            rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out" | head -n1)
            ;;
        *) read -r n rate < <(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['total']; print(t['ok'], t['throughput_per_s'])" "$work/r.json") ;;
    esac
    awk -v side="$side" -v n="$n" -v rate="$rate" -v placed="$placed" -v tick="$tick_us" \
        -v d="$((t1 - t0))" -v cpu="$(awk '{print $1 + $2}' "$work/cpu")" \
        'BEGIN {printf "%s %.0f %.2f %.2f %s\n", side, rate, cpu * 1e6 / n, d * tick / 2 / rate, placed}'
}

sides=("$peer")
for t in "${thread_counts[@]}"; do sides+=("loadrig-t$t"); done
echo "side tx/s client-us/tx server-us/tx cpus(client threads/backends)"
for i in $(seq "$rounds"); do
    order=("${sides[@]}")
    # Rotate the order each round, so no side always runs right after another.
    for ((k = 0; k < i % ${#sides[@]}; k++)); do order=("${order[@]:1}" "${order[0]}"); done
    for side in "${order[@]}"; do run "$side" | tee -a "$work/runs"; done
done
echo
python3 - "$work/runs" "$peer" <<'EOF'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    side, rate, client, server, _ = line.split()
    runs.setdefault(side, []).append((float(rate), float(client), float(server)))
peer = st.median(r for r, _, _ in runs[sys.argv[2]])
for side, rs in runs.items():
    rate = st.median(r for r, _, _ in rs)
    print(f"{side}: median {rate:.0f} tx/s ({rate / peer:.2f}x {sys.argv[2]}), "
          f"client {st.median(c for _, c, _ in rs):.2f} us/tx, "
          f"server {st.median(s for _, _, s in rs):.2f} us/tx, "
          f"{sum(r < 0.9 * peer for r, _, _ in rs)} of {len(rs)} runs under 0.9x {sys.argv[2]}'s median")
EOF
