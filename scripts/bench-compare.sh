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
# kernel floor's).
compare() {
    local title=$1 lr_fn=$4 i k ran line rate cpu
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
    python3 - "${CPU_GOAL:-1}" "${RATE_GOAL-1}" "${sides[@]}" <<'EOF'
import statistics, sys
from math import comb

cpu_goal, rate_goal = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
# (name, the runs as printed, rates, CPU per op)
sides = [(args[i], f"{args[i + 1].strip()} | {args[i + 2].strip()}",
          [float(x) for x in args[i + 1].split()], [float(x) for x in args[i + 2].split()])
         for i in range(0, len(args), 3)]

def sign_test(better, n):
    """Two-sided p-value of `better` wins in `n` pairs when either side is as likely to win."""
    tail = min(better, n - better)
    return min(1.0, 2 * sum(comb(n, i) for i in range(tail + 1)) / 2 ** n)

for name, runs, rates, cpus in sides:
    print(f"  {name:16s} {statistics.median(rates):10.0f} ops/s {statistics.median(cpus):9.2f} client CPU µs/op   (runs: {runs})")
_, _, lr_rates, lr_cpus = sides[-1]
for name, _, rates, cpus in sides[:-1]:
    n = min(len(rates), len(lr_rates))
    faster = sum(lr_rates[i] > rates[i] for i in range(n))
    cheaper = sum(lr_cpus[i] < cpus[i] for i in range(n))
    goal = f">= {rate_goal}x throughput, " if rate_goal else ""
    print(f"  loadrig/{name}: throughput {statistics.median(lr_rates) / statistics.median(rates):.2f}x, "
          f"client CPU per op {statistics.median(lr_cpus) / statistics.median(cpus):.2f}x "
          f"(goal: {goal}<= {cpu_goal}x CPU)")
    print(f"  pairs where loadrig did better: throughput {faster} of {n} (sign test p = {sign_test(faster, n):.2f}), "
          f"CPU per op {cheaper} of {n} (p = {sign_test(cheaper, n):.2f})")
EOF
}
