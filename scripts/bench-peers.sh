#!/usr/bin/env bash
# loadrig against each server's own benchmark client, on the same throwaway server with the
# same number of clients, run alternately (peer, loadrig, loadrig, peer, ...). Each
# process's own CPU (user + system, from /usr/bin/time) is divided by the operations it
# completed. Prints the median of the repeats for each side and the ratios.
#
# Usage: scripts/bench-peers.sh [CASE|all] [SECONDS] [REPEATS]
# THREADS=N (default 2) sets both sides' client threads (pgbench -j, loadrig --threads; the
# sysbench cases keep sysbench's thread per client, and without THREADS run loadrig's
# built-ins with their own [load] threads, as they ship). SB_DRIVERS=pgsql (or mysql) runs
# the sysbench cases on that server only; SB_TESTS=oltp_read_write (or oltp_point_select)
# runs that test only.
# PIPELINE_REFILL=each|all (default all) is loadrig's --pipeline-refill in the pipelined
# cases: all writes a connection's 16 again once all 16 are answered, as redis-benchmark -P
# and pgbench's \endpipeline do; each refills a stream as soon as its reply is read, as
# memtier --pipeline does; both (redis-pipe) runs loadrig both ways, each as a further peer
# of all.
#   pg-select     pgbench -S -M prepared -c 4 -j 2  vs  loadrig, 4 clients, --threads 2
#   pg-connect    pgbench -S -C -M prepared -c 4 -j 2  vs  loadrig --connection per-op
#   pg-connect-tls  the same over TLS: pgbench with PGSSLMODE=require  vs  loadrig with
#                 sslmode=verify-full&ca=THE_CA (loadrig also verifies the certificate)
#   pg-tpcb       pgbench (tpcb-like) -M prepared -s 10  vs  loadrig run pgbench-tpcb --set scale=10
#   pg-select-only  pgbench -S -M prepared -s 10  vs  loadrig run pgbench-select-only --set scale=10
#   mysql-select  sysbench oltp_point_select, 4 threads  vs  loadrig, 4 clients, --threads 2
#                 (loadrig alone when sysbench cannot be installed)
#   pg-pipe       pgbench -M prepared with 16 selects between \startpipeline and \endpipeline
#                 vs  loadrig --pipeline 16 (4 connections, primary-key selects), with
#                 pipeline_sync=batch: one Sync per batch, as \endpipeline sends it
#   pg-pipe-op    the same, loadrig with a Sync after every select (pipeline_sync=op)
#   redis-pipe    redis-benchmark -t get -P 16 -c 4  vs  loadrig --pipeline 16, 4 connections
#                 (and memtier_benchmark --pipeline 16 --threads 2 --clients 2 when MEMTIER is set:
#                 then A B C C B A, redis-benchmark, memtier, loadrig)
#   redis-pipe-tls  the same over TLS: redis-benchmark --tls --cacert THE_CA  vs  loadrig on
#                 rediss://...?ca=THE_CA (both verify the certificate)
#   sysbench      sysbench oltp_read_write and oltp_point_select (100,000 rows, 4 threads)
#                 against loadrig's built-ins of the same names (4 clients, each built-in's
#                 own threads: per-client for oltp_point_select, 2 for oltp_read_write; see
#                 docs/performance.md on a thread per client), on MariaDB and PostgreSQL;
#                 every oltp_read_write run, either side's, on its own freshly prepared table
#
# Servers come from scripts/services.sh in their own state dir
# (LOADRIG_BENCH_SERVICES_DIR, default /tmp/loadrig-bench-services) and are stopped at the
# end unless KEEP_SERVICES=1. Needs root (services.sh installs packages, adds a user).
# loadrig expands ${VAR} in --target itself, which keeps passwords out of argv (ps).
#
# LOADRIG_BIN=PATH runs that loadrig binary and builds none (default: cargo build --release,
# then target/release/loadrig).
# PLACEMENT=split runs the servers on the last CPU and every client on the others
# (scripts/bench-compare.sh).
# IDLE=poll makes idle CPUs poll before they halt, IDLE=halt makes them halt at once, for the
# sitting (scripts/bench-compare.sh).
# SYSBENCH_RAND=special has sysbench and loadrig draw ids as sysbench 1.0 does by default
# (default: uniform, both sides told so; see sysbench_rand below).
# MEMTIER=PATH adds memtier_benchmark (Redis Ltd) as a second Redis peer. Debian does not
# package it and loadrig ships none of its code: scripts/build-peer.sh memtier builds it from
# its upstream source into the ignored target/peers/memtier/, then
# MEMTIER=target/peers/memtier/memtier_benchmark. Without MEMTIER the Redis case runs
# redis-benchmark and loadrig only.
# SLICE=DURATION (like 300us) schedules both sides alike: loadrig with --client-slice DURATION,
# the peers under scripts/with-slice.py DURATION. SLICE=kernel runs loadrig with the kernel's
# default slice, as the peers run. Unset: loadrig's default (300us), the peers' (the kernel's).
# shellcheck disable=SC2016
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) stops the script too
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-compare.sh
source scripts/bench-compare.sh

which_case=${1:-all}
secs=${2:-10}
repeats=${3:-3}
clients=4
threads=${THREADS:-2}
refill=${PIPELINE_REFILL:-all}
case $refill in each | all | both) ;; *)
    echo "PIPELINE_REFILL=$refill: expected each, all or both" >&2
    exit 2
    ;;
esac
lr_refill=$refill # loadrig's own run; with both, each runs as a further peer (redis-pipe)
[[ $refill == both ]] && lr_refill=all
compare_setup="$clients clients, loadrig --threads $threads" # in the titles (bench-compare.sh)
lr_threads=(--threads "$threads") # loadrig's; empty runs a workload's own [load] threads

export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-services}
# libpq's default sslmode is prefer, and the throwaway PostgreSQL offers TLS: pgbench and
# sysbench's pgsql driver would encrypt every message (TLS 1.3; half of pgbench's user time on
# tpcb-like) while loadrig's plain postgres:// URLs do not. The TLS case asks for it itself.
export PGSSLMODE=disable
target_dir=${CARGO_TARGET_DIR:-target}
loadrig_bin=${LOADRIG_BIN:-$target_dir/release/loadrig}
sitting # $work, and on exit the servers stopped (bench-compare.sh)

# Run a command under /usr/bin/time: its output in $work/out, its CPU seconds on stdout.
timed() {
    local slice=()
    if [[ $1 != "$loadrig_bin" && -n ${SLICE:-} && $SLICE != kernel ]]; then
        slice=(scripts/with-slice.py "$SLICE")
    fi
    /usr/bin/time -f '%U %S' -o "$work/cpu" "${client_on[@]}" "${slice[@]}" "$@" >"$work/out" 2>&1 || {
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
    cpu=$(timed "$loadrig_bin" run "$wl" --clients "$clients" "${lr_threads[@]}" \
        --duration "${secs}s" ${SLICE:+--client-slice "$SLICE"} -o "$work/r.json" "$@")
    ok=$(field "$work/r.json" "r['total']['ok']")
    rate=$(field "$work/r.json" "r['total']['throughput_per_s']")
    errors=$(field "$work/r.json" "r['total']['errors']")
    if ((errors > 0)); then say "loadrig counted $errors errors: $(field "$work/r.json" "r['total']['error_messages'][:3]")"; fi
    echo "$rate $(awk -v c="$cpu" -v n="$ok" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

# Run each peer and loadrig REPEATS times, the order flipped each turn (A B B A, or A B C C B A
# with a second peer), then print the medians and the ratios against each peer.

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

pgbench_run() { # pgbench flags (-S for select-only, none for tpcb-like)...
    local cpu n rate
    cpu=$(timed pgbench "$@" -c "$clients" -j "$threads" -T "$secs" \
        -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig)
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
    rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out" | head -n1)
    echo "$rate $(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

peer_pg_select() { pgbench_run -S -M prepared; }
lr_pg_select() { loadrig_run "$work/pg-select.toml" --target '${LOADRIG_PG_URL}'; }
peer_pg_connect() { pgbench_run -S -M prepared -C; }
lr_pg_connect() { loadrig_run "$work/pg-select.toml" --target '${LOADRIG_PG_URL}' --connection per-op; }
peer_pg_connect_tls() { PGSSLMODE=require pgbench_run -S -M prepared -C; }
lr_pg_connect_tls() { loadrig_run "$work/pg-select.toml" --target '${LOADRIG_PG_TLS_URL}' --connection per-op; }

case_pg_select() {
    pg_prepare
    compare "pg-select: primary-key select, prepared" pgbench peer_pg_select lr_pg_select
}

case_pg_connect() {
    pg_prepare
    compare "pg-connect: a new SCRAM connection per select" pgbench peer_pg_connect lr_pg_connect
}

case_pg_connect_tls() {
    pg_prepare
    compare "pg-connect-tls: a new TLS + SCRAM connection per select" pgbench peer_pg_connect_tls lr_pg_connect_tls
}

# Load a built-in's tables once before its timed runs, which then reuse them (--skip-load),
# as pgbench -i and sysbench prepare run once before the peer's runs. Reloading before every
# timed run (this script until 2026-11-25) left the server busy with the fresh rows (hint
# bits, autovacuum, InnoDB's flushing and purge) during loadrig's runs and not the peer's.
lr_load_once() { # workload target --set...
    say "loadrig: $1's data, loaded once"
    lr_load "$@"
}
lr_load() { # workload target --set...
    local wl=$1 target=$2
    shift 2
    "$loadrig_bin" run "$wl" --target "$target" "$@" --clients 1 --ops 1 -o "$work/load.json" \
        >"$work/load.log" 2>&1 || {
        cat "$work/load.log" >&2
        exit 2
    }
}

# The built-ins' own loadrig_pgbench_* tables at scale 10, beside pgbench's pgbench_* tables
# of the same scale.
peer_pg_tpcb() { pgbench_run -M prepared; }
lr_pg_tpcb() { loadrig_run pgbench-tpcb --target '${LOADRIG_PG_URL}' --set scale=10 --skip-load; }
peer_pg_select_only() { pgbench_run -S -M prepared; }
lr_pg_select_only() { loadrig_run pgbench-select-only --target '${LOADRIG_PG_URL}' --set scale=10 --skip-load; }

# Rows the last loadrig run touched per transaction (pgbench's scripts: tpcb-like 5, one a
# statement; select-only 1).
rows_per_tx() {
    echo "  loadrig rows per transaction: $(field "$work/r.json" "round(r['operations'][0]['rows'] / r['operations'][0]['ok'], 3)")"
}

case_pg_tpcb() {
    pg_prepare
    lr_load_once pgbench-tpcb '${LOADRIG_PG_URL}' --set scale=10
    compare "pg-tpcb: pgbench's tpcb-like, prepared, scale 10" pgbench peer_pg_tpcb lr_pg_tpcb
    rows_per_tx
}

case_pg_select_only() {
    pg_prepare
    lr_load_once pgbench-select-only '${LOADRIG_PG_URL}' --set scale=10
    compare "pg-select-only: pgbench -S, prepared, scale 10" pgbench peer_pg_select_only lr_pg_select_only
    rows_per_tx
}

# Pipelined: pgbench sends 16 selects and one Sync, then waits for all 16 (\endpipeline);
# loadrig with pipeline_sync=batch writes its 16 streams' selects and one Sync, and records
# them when the batch's ReadyForQuery comes, each timed on its own (pg-pipe-op: a Sync per
# select). With PIPELINE_REFILL=each, a stream's next select goes out as soon as its reply
# is read instead of once all 16 are answered. An operation is one select.
pipe=16
pg_pipeline_sync="batch"
peer_pg_pipe() {
    local cpu n rate i
    {
        for i in $(seq "$pipe"); do echo "\set aid$i random(1, 1000000)"; done
        echo '\startpipeline'
        for i in $(seq "$pipe"); do echo "SELECT abalance FROM pgbench_accounts WHERE aid = :aid$i;"; done
        printf '%s\n' '\endpipeline'
    } >"$work/pipe.sql"
    cpu=$(timed pgbench -M prepared -f "$work/pipe.sql" -c "$clients" -j "$threads" -T "$secs" \
        -h 127.0.0.1 -p "$LOADRIG_PG_PORT" -U loadrig loadrig)
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
    rate=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out" | head -n1)
    awk -v c="$cpu" -v n="$n" -v r="$rate" -v p="$pipe" 'BEGIN {printf "%.0f %.2f\n", r * p, c * 1e6 / (n * p)}'
}
lr_pg_pipe() {
    loadrig_run "$work/pg-select.toml" --target "\${LOADRIG_PG_URL}?pipeline_sync=$pg_pipeline_sync" \
        --pipeline "$pipe" --pipeline-refill "$lr_refill"
}

case_pg_pipe() {
    pg_prepare
    CPU_GOAL=0.5 compare "pg-pipe: primary-key selects, 16 in flight per connection, pipeline_sync=$pg_pipeline_sync, refill $lr_refill" \
        pgbench peer_pg_pipe lr_pg_pipe
}

# --- Redis -------------------------------------------------------------------

# GETs of 100,000 random keys (absent on both sides: redis-benchmark's key:NNN and
# loadrig's loadrig:key:NNN are never set), 16 in flight per connection.
peer_redis_pipe() { # extra redis-benchmark flags (TLS)
    local n=$((secs * 300000)) cpu port=$LOADRIG_REDIS_PORT
    [[ $# -gt 0 ]] && port=$LOADRIG_REDIS_TLS_PORT
    cpu=$(timed redis-benchmark -h 127.0.0.1 -p "$port" -a "$LOADRIG_REDIS_PASSWORD" \
        -t get -P "$pipe" -c "$clients" -n "$n" -r 100000 -d 3 --csv "$@")
    python3 - "$work/out" "$n" "$cpu" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0] == "GET"]
n, cpu = int(sys.argv[2]), float(sys.argv[3])
print(f"{float(rows[0][1]):.0f} {cpu * 1e6 / n:.2f}")
PY
}
lr_redis_pipe() { # refill, URL
    cat >"$work/redis-get.toml" <<'TOML'
name = "redis-get"
description = "GET of 100,000 random keys, as redis-benchmark -t get -r 100000"
[[op]]
name = "get"
kv.get = { key = "key:{uniform 0..100000}" }
TOML
    local url='${LOADRIG_REDIS_URL}' # loadrig expands it: no password in argv
    [[ $# -gt 1 ]] && url=$2
    loadrig_run "$work/redis-get.toml" --target "$url" --pipeline "$pipe" \
        --pipeline-refill "${1:-$lr_refill}"
}
lr_redis_pipe_each() { lr_redis_pipe each; }
peer_redis_pipe_tls() { peer_redis_pipe --tls --cacert "$LOADRIG_CA_FILE"; }
lr_redis_pipe_tls() { lr_redis_pipe "$lr_refill" '${LOADRIG_REDIS_TLS_URL}'; }

# memtier keeps up to --pipeline requests in flight on each connection and refills them
# after each read (loadrig's PIPELINE_REFILL=each), where redis-benchmark -P waits for its
# whole batch (all, the default). Its keys (key:1 .. key:100000, each connection drawing
# its own) are never set either. It counts every reply; an operation is one GET.
peer_memtier_pipe() {
    local cpu
    cpu=$(timed "$MEMTIER" --server 127.0.0.1 --port "$LOADRIG_REDIS_PORT" \
        --authenticate "$LOADRIG_REDIS_PASSWORD" --protocol redis \
        --threads "$threads" --clients $((clients / threads)) --pipeline "$pipe" \
        --ratio 0:1 --key-pattern R:R --key-minimum 1 --key-maximum 100000 --key-prefix key: \
        --distinct-client-seed --data-size 3 --test-time "$secs" --hide-histogram \
        --json-out-file "$work/memtier.json")
    memtier_rate "$cpu"
}

# "OPS_PER_S CPU_US_PER_OP" of the last memtier run, from its JSON totals.
memtier_rate() { # cpu-seconds
    python3 - "$work/memtier.json" "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["ALL STATS"]["Totals"]
print(f"{t['Ops/sec']:.0f} {float(sys.argv[2]) * 1e6 / t['Count']:.2f}")
PY
}

case_redis_pipe() {
    need redis
    local more=() # further peers: memtier, loadrig refilling each stream at once
    [[ -n ${MEMTIER:-} ]] && more=(memtier peer_memtier_pipe)
    [[ $refill == both ]] && more+=("loadrig, refill each" lr_redis_pipe_each)
    CPU_GOAL=0.5 compare "redis-pipe: GET, 16 in flight per connection, refill $lr_refill" redis-benchmark peer_redis_pipe \
        lr_redis_pipe "${more[@]}"
}

case_redis_pipe_tls() {
    need redis
    CPU_GOAL=0.5 compare "redis-pipe-tls: GET over TLS, 16 in flight per connection, refill $lr_refill" \
        redis-benchmark peer_redis_pipe_tls lr_redis_pipe_tls
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

# How both sides draw ids in the sysbench cases: SYSBENCH_RAND=uniform (the default) or
# special. sysbench 1.0 (Debian's) draws with its skewed `special` unless told otherwise (three
# draws in four on 1 % of the ids, whose rows and index pages then stay in the server's
# caches), and loadrig's built-ins uniformly unless told otherwise (rand_type, as sysbench 1.1),
# so both are always told: until 2026-11-27 sysbench ran with `special` against loadrig's
# uniform, and the server did less work per query for sysbench.
sysbench_rand=${SYSBENCH_RAND:-uniform}
case $sysbench_rand in uniform | special) ;; *)
    echo "SYSBENCH_RAND=$sysbench_rand: expected uniform or special" >&2
    exit 2
    ;;
esac
sysbench_rand_flag=--rand-type=$sysbench_rand

sysbench_args() {
    echo oltp_point_select "$sysbench_rand_flag" --db-driver=mysql --mysql-host=127.0.0.1 \
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
    local id_draw=uniform
    [[ $sysbench_rand == special ]] && id_draw=sysbench_special
    cat >"$work/mysql-select.toml" <<EOF
name = "mysql-select"
description = "sysbench oltp_point_select: one primary-key select on $table (100,000 rows)"
$setup
[[op]]
name = "select"
sql = { query = "SELECT c FROM $table WHERE id = ?", params = ["{$id_draw 1..100001}"] }
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
        compare "mysql-select: primary-key select, prepared (MariaDB, $sysbench_rand ids)" sysbench \
            peer_mysql_select lr_mysql_select
    else
        echo
        echo "mysql-select: sysbench is not installable here; loadrig alone"
        local i
        for i in $(seq "$repeats"); do lr_mysql_select; done | awk '{print "  loadrig " $1 " ops/s " $2 " client CPU µs/op"}'
    fi
}

# sysbench's own OLTP tests against loadrig's built-ins of the same name, on one server.
sb_args() { # test driver
    if [[ $2 == mysql ]]; then
        echo "$1" "$sysbench_rand_flag" --db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$LOADRIG_MYSQL_PORT" \
            --mysql-user=loadrig "--mysql-password=$LOADRIG_MYSQL_PASSWORD" --mysql-db=loadrig
    else
        echo "$1" "$sysbench_rand_flag" --db-driver=pgsql --pgsql-host=127.0.0.1 "--pgsql-port=$LOADRIG_PG_PORT" \
            --pgsql-user=loadrig "--pgsql-password=$LOADRIG_PG_PASSWORD" --pgsql-db=loadrig
    fi
}

# oltp_read_write changes its table, and the table's cost to the server grows with every
# transaction it has seen (dead rows, a longer index on k): over 20 runs on one table the
# server's CPU per transaction rose from about 1.0 to 1.4-1.6 ms. Prepared once, each side's table
# drifted with its own side's transactions, so whichever side ran more of them paid for it in
# the next pair. So every read_write run, either side's, starts from its own fresh table, as a
# loadrig run of the built-in does (its setup reloads) and as sysbench's prepare, run, cleanup:
# both sides' tables dropped, this side's prepared, and on PostgreSQL a CHECKPOINT, so that the
# timed run does not write out the load's pages or an earlier run's (docs/performance.md, "A
# fresh table for every read_write run").
sb_fresh() { # sysbench|loadrig
    # shellcheck disable=SC2046
    sysbench $(sb_args "$SB_TEST" "$SB_DRIVER") --tables=1 cleanup >/dev/null 2>&1 || true
    "$loadrig_bin" cleanup --target "$SB_URL" >"$work/cleanup.log" 2>&1 || {
        cat "$work/cleanup.log" >&2
        exit 2
    }
    if [[ $1 == sysbench ]]; then
        # shellcheck disable=SC2046
        sysbench $(sb_args "$SB_TEST" "$SB_DRIVER") --tables=1 --table-size=100000 prepare \
            >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; exit 2; }
    else
        lr_load "$SB_TEST" "$SB_URL" --set table_size=100000
    fi
    if [[ $SB_DRIVER == pgsql ]]; then
        psql -X -q -h "$LOADRIG_SERVICES_DIR/postgres/run" -p "$LOADRIG_PG_PORT" -U postgres \
            -d loadrig -c CHECKPOINT >"$work/checkpoint.log" 2>&1 || {
            cat "$work/checkpoint.log" >&2
            exit 2
        }
    fi
}

sb_peer() {
    local cpu n rate
    if [[ $SB_TEST == oltp_read_write ]]; then sb_fresh sysbench; fi
    # shellcheck disable=SC2046
    cpu=$(timed sysbench $(sb_args "$SB_TEST" "$SB_DRIVER") --tables=1 --table-size=100000 \
        --threads="$clients" --time="$secs" run)
    read -r n rate < <(sed -n 's/^ *transactions: *\([0-9]*\) *(\([0-9.]*\) per sec.*/\1 \2/p' "$work/out")
    echo "$rate $(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.2f", c * 1e6 / n}')"
}

sb_loadrig() {
    if [[ $SB_TEST == oltp_read_write ]]; then sb_fresh loadrig; fi
    loadrig_run "$SB_TEST" --target "$SB_URL" --set table_size=100000 --set "rand_type=$sysbench_rand" --skip-load
}

case_sysbench() {
    need mariadb postgres
    have_sysbench || { say "sysbench is not installable here"; exit 2; }
    local driver test
    if [[ -z ${THREADS:-} ]]; then
        lr_threads=() # each built-in as it ships
        compare_setup="$clients clients, loadrig's built-ins with their own threads"
    fi
    for driver in ${SB_DRIVERS:-mysql pgsql}; do
        SB_DRIVER=$driver
        SB_URL='${LOADRIG_MYSQL_URL}'
        [[ $driver == pgsql ]] && SB_URL='${LOADRIG_PG_URL}'
        # shellcheck disable=SC2046
        sysbench $(sb_args oltp_read_write "$driver") --tables=1 cleanup >/dev/null 2>&1 || true
        # shellcheck disable=SC2046
        sysbench $(sb_args oltp_read_write "$driver") --tables=1 --table-size=100000 prepare \
            >"$work/init.log" 2>&1 || { cat "$work/init.log" >&2; exit 2; }
        lr_load_once oltp_read_write "$SB_URL" --set table_size=100000
        for test in ${SB_TESTS:-oltp_point_select oltp_read_write}; do
            SB_TEST=$test
            compare "$test on $driver (100,000 rows, $sysbench_rand ids)" sysbench sb_peer sb_loadrig
        done
    done
}

# --- main --------------------------------------------------------------------

if [[ -z ${LOADRIG_BIN:-} ]]; then CARGO_TARGET_DIR=$target_dir cargo build --release --quiet; fi
if [[ -n ${MEMTIER:-} && ! (-f $MEMTIER && -x $MEMTIER) ]]; then
    say "MEMTIER=$MEMTIER is not an executable file (scripts/build-peer.sh memtier builds one)"
    exit 2
fi
echo "loadrig peer benchmarks: $clients clients on $threads threads, $(nproc) cores, $(date -u +%Y-%m-%d)"
case $which_case in
pg-select) case_pg_select ;;
pg-connect) case_pg_connect ;;
pg-connect-tls) case_pg_connect_tls ;;
pg-tpcb) case_pg_tpcb ;;
pg-select-only) case_pg_select_only ;;
mysql-select) case_mysql_select ;;
sysbench) case_sysbench ;;
pg-pipe) case_pg_pipe ;;
pg-pipe-op)
    pg_pipeline_sync="op"
    case_pg_pipe
    ;;
redis-pipe) case_redis_pipe ;;
redis-pipe-tls) case_redis_pipe_tls ;;
all)
    case_pg_select
    case_pg_connect
    case_pg_connect_tls
    case_pg_tpcb
    case_pg_select_only
    case_mysql_select
    case_sysbench
    case_pg_pipe
    case_redis_pipe
    case_redis_pipe_tls
    ;;
*)
    echo "usage: $0 [pg-select|pg-connect|pg-connect-tls|pg-tpcb|pg-select-only|mysql-select|sysbench|pg-pipe|redis-pipe|redis-pipe-tls|all] [SECONDS] [REPEATS]" >&2
    exit 2
    ;;
esac
