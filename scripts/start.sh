#!/usr/bin/env bash
# Starts a local Atoll installation in the background: a root shard and two more shards
# (shard-1, shard-2) sharing one PKI, a cache server every shard replicates to (exports,
# schemas, workspace types, shards and marked RBAC), a front-proxy in front of the shards
# (the one endpoint users talk to), and says how to use it with kubectl and `kubectl ws`.
#
#   scripts/start.sh                 build, (re)start everything, write the kubeconfigs
#   scripts/start.sh stop            stop everything
#   scripts/start.sh restart NAME    stop one process (root, shard-1, shard-2, cache or
#                                    front-proxy) and start it again with the same flags
#                                    on the same data dir, then wait until it is ready
#
# Each process logs to $ATOLL_HOME/<name>.log; the logs of the $log_keep runs before are
# kept as <name>.log.1 (the last one) … <name>.log.$log_keep.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${ATOLL_HOME:-$PWD/.atoll}"
host="${ATOLL_HOST:-127.0.0.1}"
base_port="${ATOLL_PORT:-6443}"
shards=(root shard-1 shard-2)
proxy_port="${ATOLL_PROXY_PORT:-6440}"
cache_port="${ATOLL_CACHE_PORT:-6450}"
bin_dir="${ATOLL_BIN_DIR:-$HOME/.local/bin}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
bin="$CARGO_TARGET_DIR/debug"
root_url="https://$host:$base_port"
cache_url="https://$host:$cache_port"
proxy_url="https://$host:$proxy_port"
# Logs of this many earlier runs are kept per process.
log_keep=5
# Readiness waits poll every 0.2 s this many times (30 s).
ready_polls=150
# A stopped process gets this many 0.2 s polls (10 s) to exit before SIGKILL.
exit_polls=50

# The port a shard listens on: root on the base port, then one more per shard.
shard_port() {
  local idx
  for idx in "${!shards[@]}"; do
    if [ "${shards[$idx]}" = "$1" ]; then echo $((base_port + idx)); return; fi
  done
  return 1
}

# The binary each process runs, so that a stale pid file never gets another program killed.
binary_of() {
  case "$1" in
    front-proxy) echo atoll-front-proxy ;;
    cache) echo atoll-cache-server ;;
    *) echo atoll-shard ;;
  esac
}

# The pid of process $1 if it is running (and is what the pid file says it is).
running_pid() {
  local pidfile="$state/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null || return 1
  if [ -r "/proc/$pid/cmdline" ]; then
    [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == *"$(binary_of "$1")"* ]] || return 1
  fi
  echo "$pid"
}

# Stops process $1: SIGTERM, then SIGKILL if it has not exited after $exit_polls polls.
# It returns once the process is gone, so its port and RocksDB lock are free again.
stop_one() {
  local pid
  if pid="$(running_pid "$1")"; then
    kill "$pid"
    for _ in $(seq 1 "$exit_polls"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid"
      echo "killed $1 (pid $pid): it did not exit on SIGTERM" >&2
    fi
    echo "stopped $1 (pid $pid)"
  fi
  rm -f "$state/$1.pid"
}

stop() {
  for name in front-proxy "${shards[@]}" cache; do stop_one "$name"; done
}

# Moves <name>.log to <name>.log.1, .1 to .2, …, dropping the oldest beyond $log_keep.
rotate_log() {
  local log="$state/$1.log" i
  [ -f "$log" ] || return 0
  rm -f "$log.$log_keep"
  for i in $(seq $((log_keep - 1)) -1 1); do
    [ -f "$log.$i" ] && mv "$log.$i" "$log.$((i + 1))"
  done
  mv "$log" "$log.1"
}

# Starts process $1 in the background with its flags and data dir, logging to <name>.log.
launch() {
  local name="$1" command
  case "$name" in
    cache)
      command=("$bin/atoll-cache-server" --name cache --pki-dir "$state/pki" --data-dir "$state/cache"
        --listen "$host:$cache_port")
      ;;
    front-proxy)
      command=("$bin/atoll-front-proxy" --root-shard "$root_url" --pki-dir "$state/pki"
        --data-dir "$state/front-proxy" --listen "$host:$proxy_port" --token-auth-file "$state/tokens.csv")
      ;;
    *)
      local port role
      port="$(shard_port "$name")" || { echo "no process named $name" >&2; return 1; }
      if [ "$name" = root ]; then role=(--root); else role=(--root-shard "$root_url"); fi
      # Users reach every shard through the front-proxy, so Workspace URLs name the proxy;
      # identity headers count only from its certificate (its --name is front-proxy).
      command=("$bin/atoll-shard" "${role[@]}" --name "$name" --pki-dir "$state/pki" --data-dir "$state/$name"
        --listen "$host:$port" --external-url "$proxy_url" --cache-server "$cache_url"
        --requestheader-allowed-names system:atoll:front-proxy:front-proxy)
      ;;
  esac
  mkdir -p "$state/$name"
  rotate_log "$name"
  nohup "${command[@]}" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
}

# The URL process $1 serves on.
url_of() {
  case "$1" in
    cache) echo "$cache_url" ;;
    front-proxy) echo "$proxy_url" ;;
    *) echo "https://$host:$(shard_port "$1")" ;;
  esac
}

# One readiness probe of process $1: /readyz answers 200; a shard also knows every shard
# of the installation (its ring is complete), and the front-proxy routes to root.
probe() {
  local admin="$state/root/admin.kubeconfig" url metrics
  url="$(url_of "$1")"
  if [ "$1" = front-proxy ]; then
    admin="$state/front-proxy/admin.kubeconfig"
    [ -s "$admin" ] && KUBECONFIG="$admin" kubectl get --raw /clusters/root/api >/dev/null 2>&1
    return
  fi
  [ -s "$admin" ] || return 1
  KUBECONFIG="$admin" kubectl --server "$url" get --raw /readyz >/dev/null 2>&1 || return 1
  [ "$1" = cache ] && return 0
  metrics="$(KUBECONFIG="$admin" kubectl --server "$url" get --raw /metrics 2>/dev/null)" || return 1
  [[ $'\n'"$metrics"$'\n' == *$'\n'"atoll_ring_shards ${#shards[@]}"$'\n'* ]]
}

# Waits until every process named in the arguments is ready; fails with the log of one
# that exited, or after $ready_polls polls.
wait_ready() {
  local pending=("$@") left name
  for _ in $(seq 1 "$ready_polls"); do
    left=()
    for name in "${pending[@]}"; do
      if ! running_pid "$name" >/dev/null; then
        echo "$name exited; its log:" >&2; tail -n 30 "$state/$name.log" >&2; return 1
      fi
      probe "$name" || left+=("$name")
    done
    [ "${#left[@]}" = 0 ] && return 0
    pending=("${left[@]}")
    sleep 0.2
  done
  echo "not ready after 30 s: ${pending[*]}; see their logs in $state" >&2
  return 1
}

# Writes $state/<user>.kubeconfig for a token user: the front-proxy's CA and the user's
# bearer token, nothing else, so kubectl acts as that user (a client certificate next to
# the token would win, and the user would be admin).
user_kubeconfig() {
  local user="$1" token="$2" file="$state/$1.kubeconfig" ca
  ca="$(kubectl config view --kubeconfig "$state/front-proxy/admin.kubeconfig" --raw \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
  (
    umask 077
    cat >"$file" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: atoll
  cluster:
    server: $proxy_url/clusters/root
    certificate-authority-data: $ca
users:
- name: $user
  user:
    token: $token
contexts:
- name: $user
  context:
    cluster: atoll
    user: $user
current-context: $user
YAML
  )
}

case "${1:-}" in
  stop)
    stop
    exit 0
    ;;
  restart)
    name="${2:?usage: scripts/start.sh restart root|shard-1|shard-2|cache|front-proxy}"
    case " front-proxy cache ${shards[*]} " in
      *" $name "*) ;;
      *) echo "no process named $name; there are: front-proxy cache ${shards[*]}" >&2; exit 2 ;;
    esac
    stop_one "$name"
    launch "$name"
    wait_ready "$name"
    echo "restarted $name (pid $(cat "$state/$name.pid")); log: $state/$name.log"
    exit 0
    ;;
  "") ;;
  *)
    echo "usage: scripts/start.sh [stop | restart NAME]" >&2
    exit 2
    ;;
esac

scripts/deps.sh
# The whole workspace, as the tests build it: the same dependency features, so RocksDB
# is built once for both.
cargo build --workspace --all-targets
stop
# `kubectl ws` is a kubectl plugin: kubectl finds `kubectl-ws` on PATH.
mkdir -p "$bin_dir"
install -m 0755 "$bin/kubectl-ws" "$bin_dir/kubectl-ws"

# The root shard creates the shared CAs; the cache server and the other shards wait for
# it to be up.
launch root
for _ in $(seq 1 100); do [ -s "$state/root/admin.kubeconfig" ] && break; sleep 0.2; done
launch cache
for name in "${shards[@]:1}"; do launch "$name"; done
wait_ready cache "${shards[@]}"

# Demo users for bearer tokens; admin comes with a client certificate.
tokens="$state/tokens.csv"
[ -f "$tokens" ] || printf 'alice-token,alice,alice\nbob-token,bob,bob\n' >"$tokens"
launch front-proxy
wait_ready front-proxy
kubeconfig="$state/front-proxy/admin.kubeconfig"
user_kubeconfig alice alice-token
user_kubeconfig bob bob-token

case ":$PATH:" in *":$bin_dir:"*) path_hint="" ;; *) path_hint="  export PATH=$bin_dir:\$PATH      # for kubectl ws
" ;; esac
cat <<MSG
Atoll is running. Talk to the front-proxy, $proxy_url: it routes every
workspace to its shard (root on $root_url, shard-1 and shard-2 on ports $((base_port + 1))
and $((base_port + 2)); the cache server on $cache_url; logs: $state/*.log).
As admin (a client certificate):

  export KUBECONFIG=$kubeconfig
${path_hint}  kubectl ws create team-a --enter   # a workspace on whichever shard the ring picks
  kubectl create configmap hello --from-literal=greeting=hi
  kubectl ws ..
  kubectl ws tree
  kubectl get workspaces            # PHASE Ready; the URL goes through the front-proxy
  kubectl ws ~                      # your home workspace, created on first use

Users alice and bob authenticate with bearer tokens ($tokens); their kubeconfigs
hold the token and the CA only:

  export KUBECONFIG=$state/alice.kubeconfig
  kubectl get workspaces            # Forbidden: alice may not use root
  kubectl ws ~                      # home:alice, hers to use
  kubectl ws create project --enter

Restart one process (same flags, same data dir; the previous log becomes <name>.log.1):
scripts/start.sh restart shard-2
Stop everything with:
scripts/start.sh stop
MSG
