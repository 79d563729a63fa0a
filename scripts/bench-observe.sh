#!/usr/bin/env bash
# What observing the server costs a run (docs/observe.md, "What observing costs";
# docs/performance.md, "Other references").
#
#   scripts/bench-observe.sh [CASE] SECONDS REPEATS
#
# CASE is all (default) or one of:
#   pg-select   pgbench-select-only --set scale=10, 4 clients (PostgreSQL)
#   pg-tpcb     pgbench-tpcb --set scale=10, 4 clients (PostgreSQL)
#   mysql       oltp_point_select --set table_size=100000, 4 clients (MariaDB)
#   mysql-rw    oltp_read_write --set table_size=100000, 4 clients (MariaDB)
#   ldap        one-level searches by cn among 10,000 entries, 4 clients (slapd, cn=Monitor)
#   redis       GET and SET on 100,000 keys, 50 clients (Redis)
#   http        GET of nginx's small static file, 50 clients (nginx, stub_status named)
#
# Each case runs the same loadrig with --observe off and on, in turns whose order flips from
# one to the next (scripts/bench-compare.sh: "observe off" is the peer, "loadrig" the observed
# run), and prints the ratios of the medians and the pairs the observed run did better in,
# then, over the observed runs, the medians of what the run itself recorded as the observer's
# cost: `server.cost.cpu_share` (the observer's CPU of the rig's) and `server_time_share` (its
# statements' server time of every statement's). The shares are the measurement; the
# throughput pairs are supporting evidence, and a difference inside the machine's run-to-run
# swing is only that. LOADRIG_BIN=PATH runs that build (default: cargo build --release);
# KEEP_SERVICES=1 keeps the servers; PAIRS_LOG=FILE logs the pairs for bench_pairs.py pool.
set -euo pipefail
cd "$(dirname "$0")/.."

case=all
if (($# == 3)); then
    case=$1
    shift
fi
(($# == 2)) || {
    echo "usage: scripts/bench-observe.sh [all|pg-select|pg-tpcb|mysql|mysql-rw|ldap|redis|http] SECONDS REPEATS" >&2
    exit 2
}
secs=$1
repeats=$2
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh

if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}
sitting # $work, and on exit the servers stopped (bench-compare.sh)

# The case's run: set by each case below.
run_args=()
clients=4

# One run with --observe $1: prints "OPS_PER_S CPU_US_PER_OP"; an observed run appends its
# cost shares to $work/shares.
one() {
    local observe=$1 cpu ok
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${client_on[@]}" "$bin" run "${run_args[@]}" \
        --clients "$clients" --duration "${secs}s" --observe "$observe" -o "$work/r.json" \
        >"$work/out" 2>&1 || {
        say "failed (output below)"
        tail -n 20 "$work/out" >&2
        exit 2
    }
    cpu=$(awk '{print $1 + $2}' "$work/cpu")
    ok=$(field "$work/r.json" "r['total']['ok']")
    if [[ $observe == on ]]; then
        field "$work/r.json" "' '.join(str(r['server'].get('cost', {}).get(k, 'nan')) for k in ('cpu_share', 'server_time_share'))" >>"$work/shares"
    fi
    field "$work/r.json" "r['total']['throughput_per_s']" | tr '\n' ' '
    python3 -c "print(f'{$cpu * 1e6 / max($ok, 1):.2f}')"
}
observe_off() { one off; }
observe_on() { one on; }

shares() { # title
    python3 - "$1" "$work/shares" <<'EOF'
import math, statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[2]) if line.strip()]
def med(k):
    v = [r[k] for r in rows if not math.isnan(r[k])]
    return f"{statistics.median(v) * 100:.2f} % (range {min(v) * 100:.2f}-{max(v) * 100:.2f} %)" if v else "not measured"
print(f"  {sys.argv[1]}: the observer's CPU of the rig's {med(0)}; its server time of the statements' {med(1)}")
EOF
    rm -f "$work/shares"
}

measure() { # title
    RATE_GOAL= CPU_GOAL=1 compare "$1" "observe off" observe_off observe_on
    shares "$1"
}

load_once() { # workload target --set...
    "$bin" run "$1" --target "$2" "${@:3}" --clients 1 --ops 1 --observe off -o "$work/load.json" \
        >"$work/load.log" 2>&1 || {
        cat "$work/load.log" >&2
        exit 2
    }
}

want() { [[ $case == all || $case == "$1" ]]; }

echo "observing on against off: ${secs}s runs, median of $repeats, alternating ($(nproc) cores)"
if want pg-select || want pg-tpcb; then
    need postgres
    if want pg-select; then
        load_once pgbench-select-only "$LOADRIG_PG_URL" --set scale=10
        run_args=(pgbench-select-only --target "$LOADRIG_PG_URL" --set scale=10 --skip-load)
        clients=4
        measure "pg-select: pgbench-select-only, 4 clients"
    fi
    if want pg-tpcb; then
        load_once pgbench-tpcb "$LOADRIG_PG_URL" --set scale=10
        run_args=(pgbench-tpcb --target "$LOADRIG_PG_URL" --set scale=10 --skip-load)
        clients=4
        measure "pg-tpcb: pgbench-tpcb, 4 clients"
    fi
fi
if want mysql || want mysql-rw; then
    need mariadb
    if want mysql; then
        load_once oltp_point_select "$LOADRIG_MYSQL_URL" --set table_size=100000
        run_args=(oltp_point_select --target "$LOADRIG_MYSQL_URL" --set table_size=100000 --skip-load)
        clients=4
        measure "mysql: oltp_point_select, 4 clients"
    fi
    if want mysql-rw; then
        load_once oltp_read_write "$LOADRIG_MYSQL_URL" --set table_size=100000
        run_args=(oltp_read_write --target "$LOADRIG_MYSQL_URL" --set table_size=100000 --skip-load)
        clients=4
        measure "mysql-rw: oltp_read_write, 4 clients"
    fi
fi
if want ldap; then
    need slapd
    ldap="$LOADRIG_LDAP_URL?bind_dn=$LOADRIG_LDAP_BIND_DN&password=\${LOADRIG_LDAP_PASSWORD}&base=$LOADRIG_LDAP_BASE"
    # 10,000 entries cn=k0..k9999 under the target's own ou=loadrig (cn is indexed).
    cat >"$work/ldap-load.toml" <<'EOF'
name = "ldap-load"
[[op]]
name = "put"
kv.put = { key = "k{seq}", value = "{bytes 16}" }
EOF
    "$bin" run "$work/ldap-load.toml" --target "$ldap" --clients 4 --ops 10000 --observe off \
        -o "$work/load.json" >"$work/load.log" 2>&1 || {
        cat "$work/load.log" >&2
        exit 2
    }
    cat >"$work/ldap.toml" <<EOF
name = "ldap-search"
[[op]]
name = "search"
ldap.search = { base = "ou=loadrig,$LOADRIG_LDAP_BASE", scope = "one", filter = "(cn=k{uniform 0..10000})", attrs = ["cn"] }
EOF
    run_args=("$work/ldap.toml" --target "$ldap")
    clients=4
    measure "ldap: one-level search by cn, 4 clients"
    "$bin" cleanup --target "$ldap" >/dev/null 2>&1 || true
fi
if want redis; then
    need redis
    cat >"$work/redis.toml" <<'EOF'
name = "redis-get-set"
[[op]]
name = "get"
kv.get = { key = "key:{uniform 0..100000}" }
[[op]]
name = "set"
kv.put = { key = "key:{uniform 0..100000}", value = "{bytes 3}" }
EOF
    run_args=("$work/redis.toml" --target "$LOADRIG_REDIS_URL")
    clients=50
    measure "redis: GET and SET, 50 clients"
fi
if want http; then
    need nginx
    cat >"$work/http.toml" <<'EOF'
name = "http-get"
[[op]]
name = "get"
http = { path = "/static/hello.txt", expect = 200 }
EOF
    run_args=("$work/http.toml" --target "$LOADRIG_HTTP_URL?status=/nginx_status")
    clients=50
    measure "http: GET, 50 clients"
fi
