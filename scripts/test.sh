#!/usr/bin/env bash
# Runs every test: unit, property, in-process integration and end-to-end (real processes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

# One target directory outside the clone, reused across runs and clones: RocksDB's C++
# build alone took 16 minutes on this 2-core machine (a whole first build about 30), so
# it should happen once. Another clone still recompiles the workspace's own crates.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# The end-to-end tests start the real binaries, so build them first. Every cargo command
# of this project selects the whole workspace with all targets: a narrower selection
# unifies dependency features differently and so rebuilds RocksDB from scratch.
cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast
