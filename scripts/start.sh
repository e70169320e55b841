#!/usr/bin/env bash
# Starts a local Atoll installation in the background: a root shard and two more shards
# (shard-1, shard-2) sharing one PKI, and says how to use it with kubectl.
# `scripts/start.sh stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${ATOLL_HOME:-$PWD/.atoll}"
host="${ATOLL_HOST:-127.0.0.1}"
base_port="${ATOLL_PORT:-6443}"
shards=(root shard-1 shard-2)

stop() {
  for name in "${shards[@]}"; do
    pidfile="$state/$name.pid"
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      kill "$(cat "$pidfile")"
      echo "stopped $name (pid $(cat "$pidfile"))"
    fi
    rm -f "$pidfile"
  done
}
if [ "${1:-}" = "stop" ]; then stop; exit 0; fi

scripts/deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
# The whole workspace, as the tests build it: the same dependency features, so RocksDB
# is built once for both.
cargo build --workspace --all-targets
stop

root_url="https://$host:$base_port"
i=0
for name in "${shards[@]}"; do
  port=$((base_port + i))
  mkdir -p "$state/$name"
  if [ "$name" = root ]; then role=(--root); else role=(--root-shard "$root_url"); fi
  nohup "$CARGO_TARGET_DIR/debug/atoll-shard" "${role[@]}" --name "$name" --pki-dir "$state/pki" \
    --data-dir "$state/$name" --listen "$host:$port" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
  # The root shard creates the shared CAs; the others wait for it to be up.
  if [ "$name" = root ]; then
    for _ in $(seq 1 100); do [ -s "$state/root/admin.kubeconfig" ] && break; sleep 0.2; done
  fi
  i=$((i + 1))
done

kubeconfig="$state/root/admin.kubeconfig"
for _ in $(seq 1 150); do
  up=0
  for idx in "${!shards[@]}"; do
    if KUBECONFIG="$kubeconfig" kubectl --server "https://$host:$((base_port + idx))" get --raw /metrics 2>/dev/null |
      grep -q "^atoll_ring_shards ${#shards[@]}$"; then
      up=$((up + 1))
    fi
  done
  if [ "$up" = "${#shards[@]}" ]; then
    cat <<MSG
Atoll is running: root shard on $root_url, shard-1 and shard-2 on ports $((base_port + 1)) and $((base_port + 2))
(logs: $state/*.log).

  export KUBECONFIG=$kubeconfig
  kubectl get shards
  kubectl create -f - <<'YAML'
apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata:
  name: team-a
YAML
  kubectl get workspaces            # PHASE Ready, URL names the shard it landed on
  kubectl --server "\$(kubectl get workspace team-a -o jsonpath='{.spec.URL}')" get namespaces

Every logical cluster is also reachable by its canonical path on its shard:
https://<shard>/clusters/root:team-a. Stop everything with: scripts/start.sh stop
MSG
    exit 0
  fi
  for name in "${shards[@]}"; do
    if ! kill -0 "$(cat "$state/$name.pid")" 2>/dev/null; then
      echo "$name exited; its log:" >&2; tail -n 30 "$state/$name.log" >&2; exit 1
    fi
  done
  sleep 0.2
done
echo "the installation did not become ready in 30 s; see $state/*.log" >&2
exit 1
