#!/usr/bin/env bash
# Starts a local Atoll installation in the background: a root shard and two more shards
# (shard-1, shard-2) sharing one PKI, a cache server every shard replicates to (exports,
# schemas, workspace types, shards and marked RBAC), a front-proxy in front of the shards
# (the one endpoint users talk to), and says how to use it with kubectl and `kubectl ws`.
# `scripts/start.sh stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${ATOLL_HOME:-$PWD/.atoll}"
host="${ATOLL_HOST:-127.0.0.1}"
base_port="${ATOLL_PORT:-6443}"
shards=(root shard-1 shard-2)
proxy_port="${ATOLL_PROXY_PORT:-6440}"
cache_port="${ATOLL_CACHE_PORT:-6450}"
bin_dir="${ATOLL_BIN_DIR:-$HOME/.local/bin}"

stop() {
  for name in front-proxy "${shards[@]}" cache; do
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
# `kubectl ws` is a kubectl plugin: kubectl finds `kubectl-ws` on PATH.
mkdir -p "$bin_dir"
install -m 0755 "$CARGO_TARGET_DIR/debug/kubectl-ws" "$bin_dir/kubectl-ws"

root_url="https://$host:$base_port"
cache_url="https://$host:$cache_port"
i=0
for name in "${shards[@]}"; do
  port=$((base_port + i))
  mkdir -p "$state/$name"
  if [ "$name" = root ]; then role=(--root); else role=(--root-shard "$root_url"); fi
  # Users reach every shard through the front-proxy, so Workspace URLs name the proxy.
  nohup "$CARGO_TARGET_DIR/debug/atoll-shard" "${role[@]}" --name "$name" --pki-dir "$state/pki" \
    --data-dir "$state/$name" --listen "$host:$port" --external-url "https://$host:$proxy_port" \
    --cache-server "$cache_url" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
  # The root shard creates the shared CAs; the cache server and the other shards wait for
  # it to be up.
  if [ "$name" = root ]; then
    for _ in $(seq 1 100); do [ -s "$state/root/admin.kubeconfig" ] && break; sleep 0.2; done
    mkdir -p "$state/cache"
    nohup "$CARGO_TARGET_DIR/debug/atoll-cache-server" --name cache --pki-dir "$state/pki" \
      --data-dir "$state/cache" --listen "$host:$cache_port" >"$state/cache.log" 2>&1 &
    echo $! >"$state/cache.pid"
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
    break
  fi
  for name in "${shards[@]}" cache; do
    if ! kill -0 "$(cat "$state/$name.pid")" 2>/dev/null; then
      echo "$name exited; its log:" >&2; tail -n 30 "$state/$name.log" >&2; exit 1
    fi
  done
  sleep 0.2
done
if [ "$up" != "${#shards[@]}" ]; then
  echo "the installation did not become ready in 30 s; see $state/*.log" >&2
  exit 1
fi

# Demo users for bearer tokens; admin comes with a client certificate.
tokens="$state/tokens.csv"
[ -f "$tokens" ] || printf 'alice-token,alice,alice\nbob-token,bob,bob\n' >"$tokens"
mkdir -p "$state/front-proxy"
nohup "$CARGO_TARGET_DIR/debug/atoll-front-proxy" --root-shard "$root_url" --pki-dir "$state/pki" \
  --data-dir "$state/front-proxy" --listen "$host:$proxy_port" --token-auth-file "$tokens" \
  >"$state/front-proxy.log" 2>&1 &
echo $! >"$state/front-proxy.pid"
kubeconfig="$state/front-proxy/admin.kubeconfig"
for _ in $(seq 1 150); do
  if [ -s "$kubeconfig" ] && KUBECONFIG="$kubeconfig" kubectl get --raw /clusters/root/api >/dev/null 2>&1; then
    case ":$PATH:" in *":$bin_dir:"*) path_hint="" ;; *) path_hint="  export PATH=$bin_dir:\$PATH      # for kubectl ws
" ;; esac
    cat <<MSG
Atoll is running. Talk to the front-proxy, https://$host:$proxy_port: it routes every
workspace to its shard (root on $root_url, shard-1 and shard-2 on ports $((base_port + 1))
and $((base_port + 2)); the cache server on $cache_url; logs: $state/*.log).

  export KUBECONFIG=$kubeconfig
${path_hint}  kubectl ws create team-a --enter   # a workspace on whichever shard the ring picks
  kubectl create configmap hello --from-literal=greeting=hi
  kubectl ws ..
  kubectl ws tree
  kubectl get workspaces            # PHASE Ready; the URL goes through the front-proxy
  kubectl ws ~                      # your home workspace, created on first use

Users alice and bob have bearer tokens in $tokens
(kubectl --token alice-token get --raw /clusters/~/api). Stop everything with:
scripts/start.sh stop
MSG
    exit 0
  fi
  if ! kill -0 "$(cat "$state/front-proxy.pid")" 2>/dev/null; then
    echo "the front-proxy exited; its log:" >&2; tail -n 30 "$state/front-proxy.log" >&2; exit 1
  fi
  sleep 0.2
done
echo "the front-proxy did not become ready in 30 s; see $state/front-proxy.log" >&2
exit 1
