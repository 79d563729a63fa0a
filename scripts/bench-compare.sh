# shellcheck shell=bash
# What the bench-*.sh scripts that compare loadrig with a peer share (sourced by them): the
# alternating comparison, the placement of servers and clients, and a sitting's plumbing.
#
# compare TITLE PEER-NAME PEER-FN LOADRIG-FN [PEER-NAME PEER-FN]...
# runs the functions $repeats times, in turns whose order flips from one to the next
# (peer, [second peer,] loadrig, then loadrig, [second peer,] peer, ...): a run that leaves
# the server or the machine slower or faster for the next one then favours neither side.
# Each prints "OPS_PER_S CPU_US_PER_OP" for one run of ${secs}s (or what $run_length says,
# for a script whose runs are counts). Prints each side's medians and, against each peer,
# loadrig's ratios of the medians, then the pairs (a peer's run and loadrig's run in the same
# turn) in which loadrig did better, with the two-sided sign test's p-value: on a shared
# machine whole runs swing by a fifth, and a swing hits both runs of a pair, so the count of
# pairs says whether a difference of medians is more than the swing.
# CPU_GOAL (default 1) and RATE_GOAL (default 1; empty: none) are the goals named after the
# ratios (issue 14: at most the peer's CPU per operation, half of it pipelined; 1.1x the
# kernel floor's). PAIRS_LOG=FILE appends every pair to FILE; `scripts/bench_pairs.py pool
# FILE...` counts the pairs of several sittings together (a script that sets $compare_setup,
# e.g. its thread count, has it added to each title, so only like runs are pooled).
#
# PLACEMENT=split puts every server process on the last CPU and every client (the peer and
# loadrig alike) on the others, as a server and its load generator on separate machines are
# placed; the default (shared) leaves both to the scheduler. On two shared cores a run's rate
# is two cores over the sum of the client's and the server's CPU per operation, and which
# core each of the server's processes lands on moves the server's share by a fifth from run
# to run (docs/performance.md, "Where a slow run's CPU goes"); split takes that lottery out.
# A script honours it by calling place_servers once its servers are up and running its
# clients behind "${client_on[@]}".
placement=${PLACEMENT:-shared}
case $placement in shared | split) ;; *)
    echo "PLACEMENT=$placement: expected shared or split" >&2
    exit 2
    ;;
esac
client_on=() # the clients' command prefix: taskset under split, nothing otherwise

# IDLE=poll makes an idle CPU poll for up to 2 ms before it halts, for the sitting: the
# guest's counterpart of limiting C-states for a benchmark (tuned's latency-performance). On
# this VM an idle vCPU halts at once (haltpoll, guest_halt_poll_ns=0), and each wake-up of a
# thread on a halted vCPU goes through the hypervisor at the waker's expense
# (docs/performance.md, "The minimal C client beside them"). Both clients of a comparison run
# under the same setting. IDLE=halt makes an idle CPU halt at once (guest_halt_poll_ns=0),
# for a machine whose host sets a poll time: the same kind of VM has come with 0 and with
# 200,000 ns. The default (host) leaves the machine as it is. A script honours it by
# calling place_servers after setting an EXIT trap that calls idle_restore.
idle=${IDLE:-host}
case $idle in host | poll | halt) ;; *)
    echo "IDLE=$idle: expected host, poll or halt" >&2
    exit 2
    ;;
esac
haltpoll=/sys/module/haltpoll/parameters
idle_saved=() # the machine's guest_halt_poll_ns and grow_start while IDLE=poll|halt holds them

poll_idle() {
    [[ $idle != host ]] && ((${#idle_saved[@]} == 0)) || return 0
    [[ -w $haltpoll/guest_halt_poll_ns ]] || {
        echo "IDLE=$idle needs the haltpoll idle driver and root ($haltpoll is not writable)" >&2
        exit 2
    }
    idle_saved=("$(<"$haltpoll/guest_halt_poll_ns")" "$(<"$haltpoll/guest_halt_poll_grow_start")")
    local ns=2000000
    [[ $idle == halt ]] && ns=0
    echo "$ns" >"$haltpoll/guest_halt_poll_ns"
    [[ $idle == halt ]] || echo "$ns" >"$haltpoll/guest_halt_poll_grow_start"
}

# Put the machine's idle setting back (in every script's EXIT trap; nothing if unchanged).
idle_restore() {
    ((${#idle_saved[@]})) || return 0
    echo "${idle_saved[0]}" >"$haltpoll/guest_halt_poll_ns"
    echo "${idle_saved[1]}" >"$haltpoll/guest_halt_poll_grow_start"
    idle_saved=()
}

# place_servers SVC...: IDLE=poll's setting (once), and under split, pin the services'
# processes (and their threads and children, so PostgreSQL's later backends too) to the last
# CPU, and the clients to the rest.
place_servers() {
    poll_idle
    [[ $placement == split ]] || return 0
    local last=$(($(nproc) - 1)) svc pid p
    ((last >= 1)) || {
        echo "PLACEMENT=split needs two CPUs or more; this machine has $(nproc)" >&2
        exit 2
    }
    for svc in "$@"; do
        pid=$(scripts/services.sh pid "$svc")
        for p in $pid $(pgrep -P "$pid" || true); do
            taskset -a -p -c "$last" "$p" >/dev/null
        done
    done
    client_on=(taskset -c "0-$((last - 1))")
}

# The sitting's scratch folder and servers, for the scripts that start theirs case by case
# (bench-peers.sh, bench-observe.sh, bench-memcached.sh): `sitting` makes $work and sets the
# EXIT trap, which restores the idle setting, removes $work and stops the servers `need`
# started, unless KEEP_SERVICES=1.
sitting() {
    work=$(mktemp -d)
    started=()
    trap end_sitting EXIT
}

end_sitting() {
    idle_restore
    rm -rf "$work"
    if ((${#started[@]})) && [[ ${KEEP_SERVICES:-0} != 1 ]]; then
        scripts/services.sh down >/dev/null 2>&1 || true
    fi
}

# need SVC...: start the servers a case needs (those already up stay), load their
# variables, and place them (place_servers).
need() {
    scripts/services.sh up "$@" >"$work/services.log" 2>&1 || {
        cat "$work/services.log" >&2
        exit 2
    }
    started+=("$@")
    eval "$(scripts/services.sh env)"
    place_servers "$@"
}

say() { echo "$(basename "$0" .sh): $*" >&2; }

# field FILE EXPR: a Python expression over the JSON document in FILE (as r).
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

compare() {
    local title=$1 lr_fn=$4 i k ran line rate cpu
    local setup=${compare_setup:-}
    # Said only once place_servers has pinned them, so a title never claims a layout.
    ((${#client_on[@]})) && setup+="${setup:+, }servers on the last CPU, clients on the rest"
    ((${#idle_saved[@]})) && setup+="${setup:+, }idle CPUs $idle"
    [[ -n $setup ]] && title+=" [$setup]"
    local names=("$2") fns=("$3")
    shift 4
    while (($# >= 2)); do
        names+=("$1")
        fns+=("$2")
        shift 2
    done
    names+=(loadrig)
    fns+=("$lr_fn")
    local rates=() cpus=()
    echo
    echo "$title (${run_length:-${secs}s runs}, median of ${repeats}, alternating, order flipped each turn)"
    local order=("${!fns[@]}") reversed=()
    for ((k = ${#fns[@]} - 1; k >= 0; k--)); do reversed+=("$k"); done
    for i in $(seq "$repeats"); do
        line="  $title run $i:"
        local turn=("${order[@]}")
        ((i % 2 == 0)) && turn=("${reversed[@]}")
        for k in "${turn[@]}"; do
            ran=$(${fns[k]}) # an assignment, so a failed run stops the script
            read -r rate cpu <<<"$ran"
            rates[k]+="$rate "
            cpus[k]+="$cpu "
            line+=" ${names[k]} $rate ops/s $cpu µs/op;"
        done
        echo "$line" >&2
    done
    local sides=()
    for k in "${!fns[@]}"; do sides+=("${names[k]}" "${rates[k]}" "${cpus[k]}"); done
    python3 scripts/bench_pairs.py compare "$title" "${CPU_GOAL:-1}" "${RATE_GOAL-1}" "${sides[@]}"
}
