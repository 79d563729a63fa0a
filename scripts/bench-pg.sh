# shellcheck shell=bash
# The loadrig binary and the throwaway PostgreSQL that bench-placement.sh and
# bench-turnaround.sh share (sourced by them from the repository's root). LOADRIG_BIN=PATH
# runs that binary and builds none (default: cargo build --release). The server comes from
# scripts/services.sh in LOADRIG_BENCH_SERVICES_DIR (default /tmp/loadrig-bench-services) and
# is stopped at the end unless KEEP_SERVICES=1. Sets loadrig_bin, work (a directory removed
# at the end), the LOADRIG_PG_* variables and PGPASSWORD.
loadrig_bin=${LOADRIG_BIN:-${CARGO_TARGET_DIR:-target}/release/loadrig}
if [[ -z ${LOADRIG_BIN:-} ]]; then cargo build --release --quiet; fi
export LOADRIG_SERVICES_DIR=${LOADRIG_BENCH_SERVICES_DIR:-/tmp/loadrig-bench-services}
export PGSSLMODE=disable # as bench-peers.sh: loadrig's postgres:// URLs do not encrypt either
work=$(mktemp -d)
finish() {
    rm -rf "$work"
    [[ ${KEEP_SERVICES:-0} == 1 ]] || scripts/services.sh down >/dev/null 2>&1 || true
}
trap finish EXIT
scripts/services.sh up postgres >"$work/services.log" 2>&1 || {
    cat "$work/services.log" >&2
    exit 2
}
eval "$(scripts/services.sh env)"
export PGPASSWORD=$LOADRIG_PG_PASSWORD
