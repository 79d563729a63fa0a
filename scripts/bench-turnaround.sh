#!/usr/bin/env bash
# Where a round trip's time goes in pgbench's tpcb-like, for pgbench and for loadrig on one
# throwaway PostgreSQL: per statement, the server's turnaround (the request's packet to the
# reply's, on loopback) and the client's (the reply's packet to the next request's), from a
# tcpdump capture of each run, seconds 2-4. A transaction's time is the sum of both over
# its seven statements; a slower run shows on which side the time went (docs/performance.md,
# "Where a round trip's time goes").
#
# Usage: scripts/bench-turnaround.sh [ROUNDS] [SECONDS]      (default 4 rounds of 6 s runs)
# Each round runs pgbench (-M prepared, 4 clients, -j THREADS) and loadrig (run pgbench-tpcb,
# 4 clients, --threads THREADS; THREADS defaults to 2), in an order flipped every round.
# LOADRIG_BIN=PATH runs that binary and builds none (default: cargo build --release). The
# server comes from scripts/services.sh in LOADRIG_BENCH_SERVICES_DIR (default
# /tmp/loadrig-bench-services) and is stopped at the end unless KEEP_SERVICES=1. Needs root
# (tcpdump, and services.sh installs packages); installs tcpdump if it is missing.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

rounds=${1:-4}
secs=${2:-6}
threads=${THREADS:-2}
[[ $rounds =~ ^[1-9][0-9]*$ && $secs =~ ^[0-9]+$ && $threads =~ ^[1-9][0-9]*$ ]] && ((secs >= 5)) || {
    echo "usage: $0 [ROUNDS] [SECONDS]   (SECONDS at least 5: the capture is seconds 2-4 of each run; THREADS a positive count)" >&2
    exit 2
}
command -v tcpdump >/dev/null || {
    apt-get install -y -q tcpdump >/dev/null 2>&1 || {
        echo "bench-turnaround: tcpdump is missing and could not be installed (apt-get install tcpdump)" >&2
        exit 2
    }
}
# shellcheck source=scripts/bench-pg.sh
source scripts/bench-pg.sh
pgbench -i -s 10 -q -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig >"$work/init.log" 2>&1 || {
    cat "$work/init.log" >&2
    exit 1
}
"$loadrig_bin" run pgbench-tpcb --target '${LOADRIG_PG_URL}' --set scale=10 --clients 1 --ops 1 \
    -o "$work/load.json" >"$work/load.log" 2>&1 || {
    echo "bench-turnaround: loading pgbench-tpcb's tables failed:" >&2
    cat "$work/load.log" >&2
    exit 1
}

run() { # side: one run with its capture, printed as a JSON line
    local side=$1
    # Only packets with data (PSH): the handshakes and bare ACKs carry no statement.
    tcpdump -i lo -n -s 1024 -U -w "$work/cap.pcap" \
        "tcp port $LOADRIG_PG_PORT and (tcp[tcpflags] & tcp-push != 0)" 2>"$work/tcpdump.log" &
    local dump=$!
    until grep -q listening "$work/tcpdump.log"; do
        kill -0 "$dump" 2>/dev/null || {
            cat "$work/tcpdump.log" >&2
            exit 2
        }
        sleep 0.05
    done
    local rate ran=0
    if [[ $side == pgbench ]]; then
        pgbench -M prepared -c 4 -j "$threads" -T "$secs" -h 127.0.0.1 -p "$LOADRIG_PG_PORT" \
            -U loadrig loadrig >"$work/out" 2>&1 || ran=$?
        rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out" | head -n1)
    else
        "$loadrig_bin" run pgbench-tpcb --target '${LOADRIG_PG_URL}' --set scale=10 --skip-load \
            --clients 4 --threads "$threads" --duration "${secs}s" -o "$work/r.json" >"$work/out" 2>&1 || ran=$?
    fi
    kill -INT "$dump"
    wait "$dump" || true
    if ((ran != 0)); then
        echo "bench-turnaround: the $side run failed (exit $ran):" >&2
        cat "$work/out" >&2
        exit 1
    fi
    [[ $side == pgbench ]] ||
        rate=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['total']['throughput_per_s'])" "$work/r.json")
    python3 scripts/turnaround.py "$work/cap.pcap" "$LOADRIG_PG_PORT" 2 2 |
        python3 -c "import json,sys; d=json.load(sys.stdin); d.update(side=sys.argv[1], rate=float(sys.argv[2])); print(json.dumps(d))" "$side" "$rate"
}

echo "side tx/s server-us/statement client-us/statement (means over seconds 2-4)"
for i in $(seq "$rounds"); do
    if ((i % 2)); then order=(pgbench loadrig); else order=(loadrig pgbench); fi
    for side in "${order[@]}"; do
        run "$side" | tee -a "$work/runs" |
            python3 -c "import json,sys; d=json.load(sys.stdin); print(d['side'], round(d['rate']), d['server']['mean'], d['client']['mean'])"
    done
done
echo
python3 - "$work/runs" <<'PY'
import json, statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    runs.setdefault(d["side"], []).append(d)
print("medians over the runs, µs: server turnaround / client turnaround per statement")
for side, rs in runs.items():
    print(f"{side}: {st.median(r['rate'] for r in rs):.0f} tx/s, all statements "
          f"{st.median(r['server']['mean'] for r in rs):.1f} / {st.median(r['client']['mean'] for r in rs):.1f}")
    for sql in [s["sql"] for s in rs[0]["statements"]]:
        means = [(s["server"]["mean"], s["client"]["mean"])
                 for r in rs for s in r["statements"] if s["sql"] == sql and s["client"]]
        if means:
            print(f"  {st.median(m[0] for m in means):7.1f} / {st.median(m[1] for m in means):5.1f}  {sql[:70]}")
PY
