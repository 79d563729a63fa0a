#!/usr/bin/env python3
"""The verdicts of the bench scripts' comparisons (scripts/bench-compare.sh).

  bench_pairs.py compare TITLE CPU_GOAL RATE_GOAL NAME "RATES" "CPUS" [NAME "RATES" "CPUS"]...
      Each side's medians (loadrig last), loadrig's ratios of the medians against each peer,
      and the pairs (the runs of one turn) loadrig did better in, with the two-sided sign
      test's p-value. With PAIRS_LOG=FILE set, each pair is also appended to FILE as a JSON
      line, so that pairs from several sittings can be pooled.
  bench_pairs.py pool FILE...
      The pairs of every sitting logged in FILEs, per case and peer: how many loadrig did
      better in, the sign test over all of them, the median of the pairs' ratios, and their
      geometric mean with a 95 % bootstrap interval (10,000 resamples of the pairs, a fixed
      seed, so the same files give the same interval). One sitting's seven pairs are only as
      good as the sitting (a whole sitting can run slow or fast); pooled, a difference has to
      hold across sittings.
"""

import json
import os
import random
import statistics
import sys
from datetime import datetime, timezone
from math import comb, exp, log


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def sign_test(better, n):
    """Two-sided p-value of `better` wins in `n` pairs when either side is as likely to win."""
    if n == 0:
        return 1.0
    tail = min(better, n - better)
    return min(1.0, 2 * sum(comb(n, i) for i in range(tail + 1)) / 2**n)


def pair_counts(pairs):
    """'throughput F of N (sign test p = …), CPU per op C of N (p = …)' for (peer, loadrig) pairs
    of (rate, cpu)."""
    n = len(pairs)
    faster = sum(lr[0] > peer[0] for peer, lr in pairs)
    cheaper = sum(lr[1] < peer[1] for peer, lr in pairs)
    return (f"throughput {faster} of {n} (sign test p = {sign_test(faster, n):.2f}), "
            f"CPU per op {cheaper} of {n} (p = {sign_test(cheaper, n):.2f})")


def compare(title, cpu_goal, rate_goal, args):
    # (name, the runs as printed, rates, CPU per op)
    sides = [(args[i], f"{args[i + 1].strip()} | {args[i + 2].strip()}",
              [float(x) for x in args[i + 1].split()], [float(x) for x in args[i + 2].split()])
             for i in range(0, len(args), 3)]
    for name, runs, rates, cpus in sides:
        print(f"  {name:16s} {statistics.median(rates):10.0f} ops/s "
              f"{statistics.median(cpus):9.2f} client CPU µs/op   (runs: {runs})")
    _, _, lr_rates, lr_cpus = sides[-1]
    log = os.environ.get("PAIRS_LOG")
    at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name, _, rates, cpus in sides[:-1]:
        pairs = list(zip(zip(rates, cpus), zip(lr_rates, lr_cpus)))
        goal = f">= {rate_goal}x throughput, " if rate_goal else ""
        print(f"  loadrig/{name}: throughput {statistics.median(lr_rates) / statistics.median(rates):.2f}x, "
              f"client CPU per op {statistics.median(lr_cpus) / statistics.median(cpus):.2f}x "
              f"(goal: {goal}<= {cpu_goal}x CPU)")
        print(f"  pairs where loadrig did better: {pair_counts(pairs)}")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                for (rate, cpu), (lr_rate, lr_cpu) in pairs:
                    f.write(json.dumps({"case": title, "peer": name, "at": at,
                                        "peer_rate": rate, "peer_cpu": cpu,
                                        "rate": lr_rate, "cpu": lr_cpu}) + "\n")


def geometric_mean(ratios):
    return exp(statistics.fmean(log(r) for r in ratios))


def bootstrap_interval(ratios, resamples=10_000, seed=19):
    """The 2.5th and 97.5th percentiles of the geometric mean over resamples of the ratios."""
    rng = random.Random(seed)
    logs = [log(r) for r in ratios]
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    return exp(means[int(0.025 * resamples)]), exp(means[int(0.975 * resamples) - 1])


def pool(files):
    groups = {}  # (case, peer) -> {"pairs": [...], "sittings": {at}}
    for path in files:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    p = json.loads(line)
                    key = (p["case"], p["peer"])
                    pair = ((float(p["peer_rate"]), float(p["peer_cpu"])),
                            (float(p["rate"]), float(p["cpu"])))
                except (ValueError, KeyError, TypeError) as e:
                    die(f"{path}:{number}: not a pair of bench_pairs.py's log ({e})")
                g = groups.setdefault(key, {"pairs": [], "sittings": set()})
                g["pairs"].append(pair)
                g["sittings"].add(p.get("at"))
    if not groups:
        die("no pairs in " + ", ".join(files))
    for (case, peer), g in groups.items():
        pairs = g["pairs"]
        rate = statistics.median(lr[0] / peer_side[0] for peer_side, lr in pairs)
        cpu = statistics.median(lr[1] / peer_side[1] for peer_side, lr in pairs)
        print(f"{case}, loadrig/{peer}: {len(pairs)} pairs from {len(g['sittings'])} sitting(s); "
              f"median of the pairs' ratios: throughput {rate:.2f}x, CPU per op {cpu:.2f}x")
        print(f"  pairs where loadrig did better: {pair_counts(pairs)}")
        for what, i in (("throughput", 0), ("CPU per op", 1)):
            ratios = [lr[i] / peer_side[i] for peer_side, lr in pairs]
            low, high = bootstrap_interval(ratios)
            print(f"  geometric mean of the pairs' ratios, {what}: {geometric_mean(ratios):.3f}x "
                  f"(95 % bootstrap interval {low:.3f}-{high:.3f}x)")


def main(argv):
    if len(argv) >= 5 and argv[0] == "compare" and (len(argv) - 4) % 3 == 0:
        compare(argv[1], argv[2], argv[3], argv[4:])
    elif len(argv) >= 2 and argv[0] == "pool":
        pool(argv[1:])
    else:
        die(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as e:
        die(f"bench_pairs.py: {e}")
