#!/usr/bin/env bash
# A soak run (not in CI): MINUTES (default 60) at a steady open-loop rate against Redis and
# PostgreSQL at once, on throwaway servers of its own, checking that the rig's resident
# memory stays flat (the last quarter's mean within 10 % of the second quarter's, after
# the warm-up) and that no interval is missing from the result.
#
#   scripts/soak.sh [MINUTES] [RATE]      needs root (scripts/services.sh)
#   LOADRIG_BIN=target/debug/loadrig scripts/soak.sh 1    another build, none made
#
# It prints, for each, the intervals present of those expected, successes, errors by class,
# arrivals missed, resident memory (second and last quarter's means; start, middle, end) and
# the run's verdict.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${1:-60}
rate=${2:-500}
export LOADRIG_SERVICES_DIR=/tmp/loadrig-soak-$$
out=$(mktemp -d /tmp/loadrig-soak-out.XXXXXX)
trap 'scripts/services.sh down >/dev/null 2>&1 || true; rm -f "$LOADRIG_SERVICES_DIR.lock"' EXIT
scripts/services.sh up redis postgres
eval "$(scripts/services.sh env)"
bin=${LOADRIG_BIN:-target/release/loadrig}
if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
cat >"$out/soak.toml" <<'TOML'
name = "soak"
description = "a steady mix of new keys and reads of them"
[[op]]
name = "put"
kv.put = { key = "s{seq}", value = "{bytes 100}" }
[[op]]
name = "get"
kv.get = { key = "s{uniform 0..1000}" }
TOML

soak() { # name url
    "$bin" run "$out/soak.toml" --target "$2" --rate "$rate" --duration "${minutes}m" \
        --interval 1s -o "$out/$1.json" >"$out/$1.log" 2>&1 &
    local pid=$!
    # Resident memory (kB) every 5 s while it runs.
    while kill -0 "$pid" 2>/dev/null; do
        awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null >>"$out/$1.rss" || true
        sleep 5
    done
    wait "$pid"
}

check() { # name
    python3 - "$out/$1.json" "$out/$1.rss" "$minutes" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rss = [int(x) for x in open(sys.argv[2]) if x.strip()]
minutes = float(sys.argv[3])
n = len(r["intervals"])
want = int(minutes * 60)
idx = [i["index"] for i in r["intervals"]]
assert idx == list(range(1, n + 1)), "intervals are numbered without a gap"
assert n >= want, f"{n} intervals for {want} s"
q = len(rss) // 4
second, last = rss[q:2 * q], rss[3 * q:]
m2, m4 = sum(second) / len(second), sum(last) / len(last)
# The rig's own sample (CPU, hiccups) belongs in every interval: an hour's run once lost
# them from the second minute on, and kept each lost one in memory.
no_rig = sum(1 for i in r["intervals"] if not i.get("rig"))
t = r["total"]
classes = ", ".join(f"{k} {v}" for k, v in t["errors_by_class"].items()) or "none"
print(f"{r['workload']['name']} on {r['target']['kind']}: {n} intervals of {want}, ok {t['ok']}, "
      f"errors {t['errors']} ({classes}), missed arrivals {r.get('missed_starts', 0)}, "
      f"RSS {m2:.0f} kB -> {m4:.0f} kB ({(m4 / m2 - 1) * 100:+.1f} %); "
      f"at start (after 5 s) {rss[1] if len(rss) > 1 else rss[0]} kB, middle {rss[len(rss) // 2]} kB, "
      f"end {rss[-1]} kB; intervals without the rig's sample {no_rig}; verdict {r['validity']['verdict']}")
assert m4 <= m2 * 1.10, "resident memory grew by more than 10 %"
assert no_rig <= n // 100, "more than 1 % of the intervals lack the rig's sample"
PY
}

soak redis "$LOADRIG_REDIS_URL" &
soak postgres "$LOADRIG_PG_URL" &
wait
check redis
check postgres
echo "soak: passed; logs in $out"
