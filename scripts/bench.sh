#!/usr/bin/env bash
# Runs a benchmark program: `scripts/bench.sh store [flags]` runs bench-store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
# Same selection as the tests (see scripts/test.sh): one RocksDB build serves both.
cargo build --workspace --all-targets
name="${1:?usage: scripts/bench.sh store [flags]}"
shift
exec "$CARGO_TARGET_DIR/debug/bench-$name" "$@"
