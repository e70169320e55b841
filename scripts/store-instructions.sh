#!/usr/bin/env bash
# Instructions atoll-shard executes per ConfigMap create under bench-store, with span export
# off and on, counted by valgrind's callgrind. Unlike creates/s, an instruction count does not
# move with what else the machine runs, so two builds (or export off and on) compare in one
# run each. It counts work, not stalls: cache misses, lock waits and context switches are
# invisible to it, so it complements bench-store's figures rather than replacing them.
#
# The shard runs under callgrind twice per mode, loaded for SHORT and LONG seconds; the
# difference of the two totals over the difference of the two create counts is the cost of
# one create, with start-up and shutdown cancelled out.
#
# With RATIO (above 0, at most 1), a third mode exports with that share of traces sampled
# (parentbased_traceidratio), to show what sampling saves.
#
# usage: scripts/store-instructions.sh [SHORT LONG [RATIO]]   (default 5 25; about 2.5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
short="${1:-5}"
long="${2:-25}"
ratio="${3:-}"
if ! [[ "$short" =~ ^[0-9]+$ && "$long" =~ ^[0-9]+$ && "$short" -ge 1 && "$long" -gt "$short" && "$long" -le 120 ]] \
    || ! [[ -z "$ratio" || "$ratio" =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]]; then
    echo "usage: scripts/store-instructions.sh [SHORT LONG [RATIO]] with 1 <= SHORT < LONG <= 120 seconds, 0 < RATIO <= 1" >&2
    exit 2
fi
if ! command -v valgrind > /dev/null; then
    apt-get install -y --no-install-recommends valgrind > /dev/null
fi
scripts/deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
# Same selection as the tests (see scripts/test.sh): one RocksDB build serves both.
cargo build --workspace --all-targets
bin="$CARGO_TARGET_DIR/debug"

work="$(mktemp -d /tmp/atoll-instructions.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# bench-store starts the atoll-shard beside it: here, the shard under callgrind.
cp "$bin/bench-store" "$work/"
cat > "$work/atoll-shard" << EOF
#!/bin/sh
exec valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$work/callgrind.out" "$bin/atoll-shard" "\$@"
EOF
chmod +x "$work/atoll-shard"

# Prints "creates instructions" for one run.
measure() {
    local mode="$1" seconds="$2" out creates total export=(--tracing "$1")
    if [[ "$mode" == sampled ]]; then
        export=(--tracing on --sample-ratio "$ratio")
    fi
    rm -f "$work/callgrind.out"
    # Eight connections: callgrind runs the shard's threads one at a time, ~50 times slower.
    out="$("$work/bench-store" --skip-etcd --seconds "$seconds" --connections 8 "${export[@]}" 2>&1)" || {
        echo "$out" >&2
        return 1
    }
    creates="$(awk '$1 ~ /^atoll(\+otel)?$/ && $2 ~ /^[0-9]+$/ {print $2}' <<< "$out")"
    total="$(awk '$1 == "totals:" || $1 == "summary:" {print $2; exit}' "$work/callgrind.out")"
    if [[ -z "$creates" || -z "$total" ]]; then
        echo "no figures from the $mode run of ${seconds}s:" >&2
        echo "$out" >&2
        return 1
    fi
    echo "$creates $total"
}

declare -A per_create
modes=(off on)
[[ -n "$ratio" ]] && modes+=(sampled)
for mode in "${modes[@]}"; do
    read -r short_creates short_total <<< "$(measure "$mode" "$short")"
    read -r long_creates long_total <<< "$(measure "$mode" "$long")"
    per_create[$mode]=$(((long_total - short_total) / (long_creates - short_creates)))
    printf 'export %-7s %9d instructions per create (%d and %d creates, %d and %d s)\n' \
        "$mode" "${per_create[$mode]}" "$short_creates" "$long_creates" "$short" "$long"
done
awk -v off="${per_create[off]}" -v on="${per_create[on]}" \
    'BEGIN { printf "span export (always_on) adds %d instructions per create (%.1f%%)\n", on - off, 100 * (on - off) / off }'
if [[ -n "$ratio" ]]; then
    awk -v off="${per_create[off]}" -v on="${per_create[sampled]}" -v ratio="$ratio" \
        'BEGIN { printf "span export sampling %s of traces adds %d instructions per create (%.1f%%)\n", ratio, on - off, 100 * (on - off) / off }'
fi
