#!/usr/bin/env bash
# The whole test suite, as README.md states it and .ci/run calls it.
# Checks formatting and lints, then runs every test (unit and integration).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cargo is missing: install Rust (rustup) first" >&2
    exit 2
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --all-targets
