#!/usr/bin/env bash
# The whole test suite, as README.md states it and .ci/run calls it.
# Checks formatting and lints, starts throwaway servers on free loopback ports
# (scripts/services.sh: PostgreSQL, MariaDB, Redis, OpenLDAP, nginx), runs every
# test with LOADRIG_REQUIRE_ALL=1 (so no server test may skip), then `loadrig kube` on a
# one-node Kubernetes (scripts/k8s.sh e2e), and stops the servers.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cargo is missing: install Rust (rustup) first" >&2
    exit 2
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The HTML report test opens reports in headless Chromium through chromedriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver
    else
        echo "chromium and chromedriver are missing and cannot be installed here (needs apt-get as root)" >&2
    fi
fi
# Tests that need something from outside (a browser, a server) fail instead of skipping.
export LOADRIG_REQUIRE_ALL=1

# The one-node Kubernetes of the last step: its components build from Go modules (once per
# machine, minutes) at a lower priority while cargo builds and tests, in a process group of
# their own that the exit trap ends.
k8s_build= k8s_log=$(mktemp)
if [ "$(id -u)" = 0 ]; then
    setsid nice -n 10 scripts/k8s.sh build >"$k8s_log" 2>&1 &
    k8s_build=$!
fi
trap '[ -z "$k8s_build" ] || kill -- -"$k8s_build" 2>/dev/null || true; rm -f "$k8s_log"' EXIT

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
cargo build --locked --all-targets

# A state dir of our own (services.sh creates it), so parallel runs never share servers.
export LOADRIG_SERVICES_DIR=${LOADRIG_SERVICES_DIR:-/tmp/loadrig-test-services-$$}
trap 'scripts/services.sh down || true; rm -f "$LOADRIG_SERVICES_DIR.lock" "$k8s_log"
      [ -z "$k8s_build" ] || kill -- -"$k8s_build" 2>/dev/null || true' EXIT
scripts/services.sh up
eval "$(scripts/services.sh env)"

cargo test --locked --all-targets --no-fail-fast

# `loadrig kube` end to end on a one-node Kubernetes built here (docs/distributed.md): the
# first run on a machine builds the components from Go modules into the user's cache
# (minutes), later runs start the cluster in seconds; it is stopped and removed after.
if [ -n "$k8s_build" ]; then
    wait "$k8s_build" || { cat "$k8s_log" >&2; echo "scripts/k8s.sh build failed" >&2; exit 1; }
    k8s_build=
    scripts/k8s.sh e2e
else
    echo "scripts/k8s.sh e2e needs root (containers, mounts): skipped" >&2
    [ "${LOADRIG_REQUIRE_ALL:-}" != 1 ] || exit 1
fi
