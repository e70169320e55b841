#!/usr/bin/env bash
# Runs a benchmark program: `scripts/bench.sh store [flags]` runs bench-store,
# `scripts/bench.sh workspaces [flags]` runs bench-workspaces,
# `scripts/bench.sh proxy [flags]` runs bench-proxy (shard direct vs front-proxy vs nginx),
# `scripts/bench.sh replication [flags]` runs bench-replication (lag through one cache and
# through a regional cache under a parent), `scripts/bench.sh placement [flags]` runs
# bench-placement (one scheduling decision over 10,000 candidate clusters), and
# `scripts/bench.sh placement-e2e [flags]` runs bench-placement-e2e (1,000 namespaces placed
# on 20 SyncTargets and synced into members by agents), and `scripts/bench.sh ocm [flags]` runs
# bench-ocm (one OCM Placement over 2,000 ManagedClusters with three prioritizers),
# `scripts/bench.sh fleet [flags]` runs bench-fleet (1,000 Fleet placements over 1,000 members),
# `scripts/bench.sh fleet-e2e [flags]` runs bench-fleet-e2e (one Fleet placement picking 100 of 1,000
# members end to end, 20 of them served by real agents applying into a member installation), and
# `scripts/bench.sh export-view [flags]` runs bench-export-view (a provider's list and watch
# through the APIExport views of 10,000 bound workspaces on three shards).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: scripts/bench.sh store|workspaces|proxy|replication|placement|placement-e2e|ocm|fleet|fleet-e2e|export-view [flags]}"
shift
# Checked before building, so a typo does not cost a build.
case "$name" in
    store | workspaces | proxy | replication | placement | placement-e2e | ocm | fleet | fleet-e2e | export-view) ;;
    *)
        echo "unknown benchmark: $name (known: store, workspaces, proxy, replication, placement, placement-e2e, ocm, fleet, fleet-e2e, export-view)" >&2
        exit 2
        ;;
esac
scripts/deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
# Same selection as the tests (see scripts/test.sh): one RocksDB build serves both.
cargo build --workspace --all-targets
exec "$CARGO_TARGET_DIR/debug/bench-$name" "$@"
