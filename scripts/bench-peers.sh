#!/usr/bin/env bash
# loadrig against each server's own benchmark client, on the same throwaway server with the
# same number of clients, run alternately (peer, loadrig, peer, loadrig, ...). Each
# process's own CPU (user + system, from /usr/bin/time) is divided by the operations it
# completed. Prints the median of the repeats for each side and the ratios.
#
# Usage: scripts/bench-peers.sh [CASE|all] [SECONDS] [REPEATS]
#   pg-select     pgbench -S -M prepared -c 4 -j 2  vs  loadrig, 4 clients, --threads 2
#   pg-connect    pgbench -S -C -M prepared -c 4 -j 2  vs  loadrig --connection per-op
#   mysql-select  sysbench oltp_point_select, 4 threads  vs  loadrig, 4 clients, --threads 2
#                 (loadrig alone when sysbench cannot be installed)
#
# Servers come from scripts/services.sh in their own state dir
# (LOADRIG_BENCH_SERVICES_DIR, default /tmp/loadrig-bench-services) and are stopped at the
# end unless KEEP_SERVICES=1. Needs root (services.sh installs packages, adds a user).
# loadrig expands ${VAR} in --target itself, which keeps passwords out of argv (ps).
# shellcheck disable=SC2016
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) stops the script too
cd "$(dirname "$0")/.."

which_case=${1:-all}
secs=${2:-10}
repeats=${3:-3}
clients=4
threads=2

export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-services}
target_dir=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
started=()

finish() {
    rm -rf "$work"
    if ((${#started[@]})) && [[ ${KEEP_SERVICES:-0} != 1 ]]; then
        scripts/services.sh down >/dev/null 2>&1 || true
    fi
}
trap finish EXIT

say() { echo "bench-peers: $*" >&2; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# Start the servers a case needs (once) and load their variables.
need() { # svc...
    scripts/services.sh up "$@" >"$work/services.log" 2>&1 || {
        cat "$work/services.log" >&2
        exit 2
    }
    started+=("$@")
    eval "$(scripts/services.sh env)"
}

# Run a command under /usr/bin/time: its output in $work/out, its CPU seconds on stdout.
timed() {
    /usr/bin/time -f '%U %S' -o "$work/cpu" "$@" >"$work/out" 2>&1 || {
        say "failed: $1 (output below)"
        tail -n 20 "$work/out" >&2
        exit 2
    }
    awk '{print $1 + $2}' "$work/cpu"
}

# One loadrig run: prints "OPS_PER_S CPU_US_PER_OP".
loadrig_run() { # workload-file args...
    local wl=$1 cpu ok rate errors
    shift
    cpu=$(timed "$target_dir/release/loadrig" run "$wl" --clients "$clients" --threads "$threads" \
        --duration "${secs}s" -o "$work/r.json" "$@")
    ok=$(field "$work/r.json" "r['total']['ok']")
    rate=$(field "$work/r.json" "r['total']['throughput_per_s']")
    errors=$(field "$work/r.json" "r['total']['errors']")
    if ((errors > 0)); then say "loadrig counted $errors errors: $(field "$work/r.json" "r['total']['error_messages'][:3]")"; fi
    echo "$rate $(awk -v c="$cpu" -v n="$ok" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

# Alternate peer and loadrig REPEATS times, then print the medians and ratios.
compare() { # title peer-name peer-function loadrig-function
    local title=$1 peer=$2 peer_fn=$3 lr_fn=$4 i p l out
    local pr=() pc=() lr=() lc=()
    echo
    echo "$title (${clients} clients, ${secs}s runs, median of ${repeats}, alternating)"
    for i in $(seq "$repeats"); do
        out=$($peer_fn)
        read -r p l <<<"$out"
        pr+=("$p")
        pc+=("$l")
        out=$($lr_fn)
        read -r p l <<<"$out"
        lr+=("$p")
        lc+=("$l")
        say "$title run $i: $peer ${pr[-1]} ops/s ${pc[-1]} us/op, loadrig ${lr[-1]} ops/s ${lc[-1]} us/op"
    done
    local mpr mpc mlr mlc
    mpr=$(printf '%s\n' "${pr[@]}" | median)
    mpc=$(printf '%s\n' "${pc[@]}" | median)
    mlr=$(printf '%s\n' "${lr[@]}" | median)
    mlc=$(printf '%s\n' "${lc[@]}" | median)
    printf '  %-10s %12s ops/s %10s client CPU µs/op   (runs: %s | %s)\n' "$peer" \
        "$(printf '%.0f' "$mpr")" "$mpc" "${pr[*]}" "${pc[*]}"
    printf '  %-10s %12s ops/s %10s client CPU µs/op   (runs: %s | %s)\n' loadrig \
        "$(printf '%.0f' "$mlr")" "$mlc" "${lr[*]}" "${lc[*]}"
    awk -v a="$mlr" -v b="$mpr" -v c="$mlc" -v d="$mpc" 'BEGIN {
        printf "  loadrig/%s: throughput %.2fx, client CPU per op %.2fx\n", "peer", a / b, c / d }'
}

# --- PostgreSQL --------------------------------------------------------------

pg_prepare() {
    [[ -n ${PG_READY:-} ]] && return 0
    need postgres
    export PGPASSWORD=$LOADRIG_PG_PASSWORD
    say "pgbench -i -s 10"
    pgbench -i -s 10 -q -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig >"$work/init.log" 2>&1 || {
        cat "$work/init.log" >&2
        exit 2
    }
    cat >"$work/pg-select.toml" <<'EOF'
name = "pg-select"
description = "pgbench -S: one primary-key select on pgbench_accounts (scale 10)"
[[op]]
name = "select"
sql = { query = "SELECT abalance FROM pgbench_accounts WHERE aid = $1", params = ["{uniform 1..1000000}"] }
EOF
    PG_READY=1
}

pgbench_run() { # extra pgbench flags...
    local cpu n rate
    cpu=$(timed pgbench -S "$@" -c "$clients" -j "$threads" -T "$secs" \
        -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig)
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
    rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out" | head -n1)
    echo "$rate $(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

peer_pg_select() { pgbench_run -M prepared; }
lr_pg_select() { loadrig_run "$work/pg-select.toml" --target '${LOADRIG_PG_URL}'; }
peer_pg_connect() { pgbench_run -M prepared -C; }
lr_pg_connect() { loadrig_run "$work/pg-select.toml" --target '${LOADRIG_PG_URL}' --connection per-op; }

case_pg_select() {
    pg_prepare
    compare "pg-select: primary-key select, prepared" pgbench peer_pg_select lr_pg_select
}

case_pg_connect() {
    pg_prepare
    compare "pg-connect: a new SCRAM connection per select" pgbench peer_pg_connect lr_pg_connect
}

# --- MariaDB -----------------------------------------------------------------

have_sysbench() {
    command -v sysbench >/dev/null && return 0
    if [[ $(id -u) == 0 ]]; then
        say "installing sysbench"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sysbench \
            >"$work/apt.log" 2>&1 || true
    fi
    command -v sysbench >/dev/null
}

sysbench_args() {
    echo oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 \
        "--mysql-port=$LOADRIG_MYSQL_PORT" --mysql-user=loadrig \
        "--mysql-password=$LOADRIG_MYSQL_PASSWORD" --mysql-db=loadrig --tables=1 --table-size=100000
}

mysql_prepare() {
    [[ -n ${MYSQL_READY:-} ]] && return 0
    need mariadb
    if have_sysbench; then
        say "sysbench prepare (100,000 rows)"
        # shellcheck disable=SC2046
        sysbench $(sysbench_args) cleanup >/dev/null 2>&1 || true
        # shellcheck disable=SC2046
        sysbench $(sysbench_args) prepare >"$work/init.log" 2>&1 || {
            cat "$work/init.log" >&2
            exit 2
        }
        table=sbtest1
        setup=""
    else
        # The same table and rows, in loadrig's namespace (MariaDB's sequence engine).
        table=loadrig_sbtest1
        setup="setup = [
  \"CREATE TABLE IF NOT EXISTS loadrig_sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)\",
  \"INSERT IGNORE INTO loadrig_sbtest1 SELECT seq, seq, REPEAT('c', 119), REPEAT('p', 59) FROM seq_1_to_100000\",
]"
    fi
    cat >"$work/mysql-select.toml" <<EOF
name = "mysql-select"
description = "sysbench oltp_point_select: one primary-key select on $table (100,000 rows)"
$setup
[[op]]
name = "select"
sql = { query = "SELECT c FROM $table WHERE id = ?", params = ["{uniform 1..100000}"] }
EOF
    MYSQL_READY=1
}

peer_mysql_select() {
    local cpu n rate
    # shellcheck disable=SC2046
    cpu=$(timed sysbench $(sysbench_args) --threads="$clients" --time="$secs" run)
    read -r n rate < <(sed -n 's/^ *transactions: *\([0-9]*\) *(\([0-9.]*\) per sec.*/\1 \2/p' "$work/out")
    echo "$rate $(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}
lr_mysql_select() { loadrig_run "$work/mysql-select.toml" --target '${LOADRIG_MYSQL_URL}'; }

case_mysql_select() {
    mysql_prepare
    if command -v sysbench >/dev/null; then
        compare "mysql-select: primary-key select, prepared (MariaDB)" sysbench \
            peer_mysql_select lr_mysql_select
    else
        echo
        echo "mysql-select: sysbench is not installable here; loadrig alone"
        local i
        for i in $(seq "$repeats"); do lr_mysql_select; done | awk '{print "  loadrig " $1 " ops/s " $2 " client CPU µs/op"}'
    fi
}

# --- main --------------------------------------------------------------------

CARGO_TARGET_DIR=$target_dir cargo build --release --quiet
echo "loadrig peer benchmarks: $(nproc) cores, $(date -u +%Y-%m-%d)"
case $which_case in
pg-select) case_pg_select ;;
pg-connect) case_pg_connect ;;
mysql-select) case_mysql_select ;;
all)
    case_pg_select
    case_pg_connect
    case_mysql_select
    ;;
*)
    echo "usage: $0 [pg-select|pg-connect|mysql-select|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
