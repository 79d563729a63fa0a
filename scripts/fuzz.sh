#!/usr/bin/env bash
# Fuzz every target in fuzz/ for SECONDS each (default 120), growing the corpus in
# fuzz/corpus/TARGET/ and minimising it afterwards (cargo fuzz cmin), so what is kept stays
# small (seeds, regressions and the 300 smallest of the rest). A crash leaves its input in fuzz/artifacts/TARGET/; copy it into the corpus once
# fixed: tests/integration/fuzz_corpus.rs runs every corpus file on stable Rust.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${1:-120}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(workload generator check target_url result_file merge)
fi
# Safe Rust needs no AddressSanitizer to find panics; without it the targets build and run
# several times faster.
flags=(--sanitizer none --release)

cargo +nightly fuzz build "${flags[@]}"
for t in "${targets[@]}"; do
    echo "fuzz: $t for ${seconds}s" >&2
    # -max_len keeps inputs small; -rss_limit_mb stops a runaway allocation as a crash.
    # merge's inputs are several result files (a pair of small ones is 10 KB).
    max_len=8192
    [[ $t == merge ]] && max_len=32768
    cargo +nightly fuzz run "${flags[@]}" "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 2>&1 | grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ *DONE)|panicked|ERROR' || true
    cargo +nightly fuzz cmin "${flags[@]}" "$t" "corpus/$t" >/dev/null 2>&1
    # What the repository keeps: the seeds, the regressions and the 300 smallest of the rest.
    find "corpus/$t" -type f ! -name 'seed-*' ! -name 'regression-*' -printf '%s %p\n' |
        sort -n | tail -n +301 | cut -d' ' -f2- | xargs -r rm -f
done
