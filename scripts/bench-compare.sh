# shellcheck shell=bash
# The comparison bench-peers.sh, bench-net.sh and bench-floor.sh share (sourced by them).
#
# compare TITLE PEER-NAME PEER-FN LOADRIG-FN [PEER-NAME PEER-FN]...
# runs the functions $repeats times, in turns whose order flips from one to the next
# (peer, [second peer,] loadrig, then loadrig, [second peer,] peer, ...): a run that leaves
# the server or the machine slower or faster for the next one then favours neither side.
# Each prints "OPS_PER_S CPU_US_PER_OP" for one run of ${secs}s. Prints each side's medians
# and, against each peer, loadrig's ratios of the medians, then the pairs (a peer's run and
# loadrig's run in the same turn) in which loadrig did better, with the two-sided sign test's
# p-value: on a shared machine whole runs swing by a fifth, and a swing hits both runs of a
# pair, so the count of pairs says whether a difference of medians is more than the swing.
# CPU_GOAL (default 1) and RATE_GOAL (default 1; empty: none) are the goals named after the
# ratios (issue 14: at most the peer's CPU per operation, half of it pipelined; 1.1x the
# kernel floor's). PAIRS_LOG=FILE appends every pair to FILE; `scripts/bench_pairs.py pool
# FILE...` counts the pairs of several sittings together (a script that sets $compare_setup,
# e.g. its thread count, has it added to each title, so only like runs are pooled).
compare() {
    local title=$1 lr_fn=$4 i k ran line rate cpu
    [[ -n ${compare_setup:-} ]] && title+=" [$compare_setup]"
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
    echo "$title (${secs}s runs, median of ${repeats}, alternating, order flipped each turn)"
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
