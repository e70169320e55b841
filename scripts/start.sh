#!/usr/bin/env bash
# Starts a local Atoll installation (for now: one root shard) in the background and says
# how to use it with kubectl. `scripts/start.sh stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${ATOLL_HOME:-$PWD/.atoll}"
pidfile="$state/root.pid"

stop() {
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    echo "stopped the root shard (pid $(cat "$pidfile"))"
  fi
  rm -f "$pidfile"
}
if [ "${1:-}" = "stop" ]; then stop; exit 0; fi

scripts/deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
# The whole workspace, as the tests build it: the same dependency features, so RocksDB
# is built once for both.
cargo build --workspace --all-targets
stop
mkdir -p "$state/root"
listen="${ATOLL_LISTEN:-127.0.0.1:6443}"
nohup "$CARGO_TARGET_DIR/debug/atoll-shard" --root --name root \
  --data-dir "$state/root" --listen "$listen" >"$state/root.log" 2>&1 &
echo $! >"$pidfile"

kubeconfig="$state/root/admin.kubeconfig"
for _ in $(seq 1 100); do
  if [ -s "$kubeconfig" ] && KUBECONFIG="$kubeconfig" kubectl get --raw /readyz >/dev/null 2>&1; then
    cat <<MSG
Atoll is running: root shard on https://$listen (log: $state/root.log).

  export KUBECONFIG=$kubeconfig
  kubectl get namespaces
  kubectl create configmap hello --from-literal=greeting=hi
  kubectl api-resources

Each logical cluster is served at https://$listen/clusters/<name>; the kubeconfig points at root.
Create another logical cluster and use it:

  echo '{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}' |
    kubectl create --raw /clusters/team-a/apis/core.kcp.io/v1alpha1/logicalclusters -f -
  kubectl --server https://$listen/clusters/team-a get namespaces

Stop it with: scripts/start.sh stop
MSG
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "the root shard exited; its log:" >&2; tail -n 30 "$state/root.log" >&2; exit 1
  fi
  sleep 0.2
done
echo "the root shard did not become ready in 20 s; see $state/root.log" >&2
exit 1
