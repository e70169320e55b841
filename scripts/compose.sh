#!/usr/bin/env bash
# The multi-host installation of deploy/docker-compose.yaml: every process in its own
# container, talking to the others by service name, the front-proxy published on
# 127.0.0.1, Prometheus scraping them all.
#
#   scripts/compose.sh up [--observability]  build everything, start, wait, print the kubeconfig
#   scripts/compose.sh down                  stop and remove containers, network and volumes
#   scripts/compose.sh images                stage built binaries and build the images only
#   scripts/compose.sh start [--observability]  start from existing images, wait, write the kubeconfig
#   scripts/compose.sh kubeconfig            print the admin kubeconfig of a running installation
#
# Environment:
#   ATOLL_COMPOSE_PROJECT  compose project name; every container, network and volume
#                          carries it                                  [atoll]
#   ATOLL_PROXY_PORT       front-proxy on 127.0.0.1                    [7440]
#   ATOLL_PROMETHEUS_PORT  Prometheus on 127.0.0.1                     [9090]
#   ATOLL_BASE_IMAGE       base of both images; atoll-base:bookworm is built locally with
#                          debootstrap, other names are pulled     [atoll-base:bookworm]
#   ATOLL_BIN_DIR          where the built binaries are   [$CARGO_TARGET_DIR/debug]
#   ATOLL_COMPOSE_KUBECONFIG  where `start` writes the admin kubeconfig
#                          [.atoll/compose/$ATOLL_COMPOSE_PROJECT.kubeconfig]
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
repo="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/atoll-target}"
project="${ATOLL_COMPOSE_PROJECT:-atoll}"
export ATOLL_PROXY_PORT="${ATOLL_PROXY_PORT:-7440}"
export ATOLL_PROMETHEUS_PORT="${ATOLL_PROMETHEUS_PORT:-9090}"
export ATOLL_IMAGE="${ATOLL_IMAGE:-atoll:local}"
export ATOLL_PROMETHEUS_IMAGE="${ATOLL_PROMETHEUS_IMAGE:-atoll-prometheus:local}"
base_image="${ATOLL_BASE_IMAGE:-atoll-base:bookworm}"
bin_dir="${ATOLL_BIN_DIR:-$CARGO_TARGET_DIR/debug}"
kubeconfig="${ATOLL_COMPOSE_KUBECONFIG:-$repo/.atoll/compose/$project.kubeconfig}"
compose=(docker-compose -p "$project" -f "$repo/deploy/docker-compose.yaml")
binaries=(atoll-shard atoll-cache-server atoll-front-proxy atoll-agent kubectl-ws)
# Shards that must be in the front-proxy's routing before the installation counts as ready.
shard_count=3
ready_timeout="${ATOLL_COMPOSE_READY_SECONDS:-300}"
# Temporary paths removed on exit, however the script ends.
cleanup=()
trap 'rm -rf "${cleanup[@]}"' EXIT

usage() {
  sed -n '2,21p' "$script" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Builds the Atoll image from binaries built once on the host (a build context of the
# binaries and the container helpers only, so the daemon is not sent the repository) and
# the Prometheus image, both on $base_image.
images() {
  if [ "$base_image" = atoll-base:bookworm ]; then
    deploy/base-image.sh "$base_image"
  fi
  local context
  context="$(mktemp -d /var/tmp/atoll-image.XXXXXX)"
  cleanup+=("$context")
  mkdir -p "$context/bin" "$context/container"
  for binary in "${binaries[@]}"; do
    if [ ! -x "$bin_dir/$binary" ]; then
      echo "$bin_dir/$binary is missing: build with cargo build --workspace --all-targets (or set ATOLL_BIN_DIR)" >&2
      exit 1
    fi
    # Debug info off, symbols kept: half the size, and a panic's backtrace still names
    # its functions.
    if command -v strip >/dev/null; then
      strip --strip-debug -o "$context/bin/$binary" "$bin_dir/$binary"
      chmod 0755 "$context/bin/$binary"
    else
      install -m 0755 "$bin_dir/$binary" "$context/bin/$binary"
    fi
  done
  install -m 0755 deploy/container/* "$context/container/"
  echo "building $ATOLL_IMAGE and $ATOLL_PROMETHEUS_IMAGE on $base_image" >&2
  build_image "$ATOLL_IMAGE" -f deploy/Dockerfile "$context"
  build_image "$ATOLL_PROMETHEUS_IMAGE" deploy/prometheus
}

# docker build -t TAG ARGS..., then removes the image TAG named before, if nothing else
# uses it: every build of new binaries would otherwise leave a few hundred MB behind.
build_image() {
  local tag="$1" before after
  shift
  before="$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)"
  docker build -q --build-arg BASE_IMAGE="$base_image" -t "$tag" "$@" >/dev/null
  after="$(docker image inspect -f '{{.Id}}' "$tag")"
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    # Refused (and left alone) while a container or another tag still uses it.
    docker rmi "$before" >/dev/null 2>&1 || true
  fi
}

# The admin kubeconfig the front-proxy wrote into its volume, with the server rewritten
# from the address inside the container to the port published on the host.
print_kubeconfig() {
  "${compose[@]}" exec -T front-proxy cat /var/lib/atoll/data/admin.kubeconfig |
    sed -E "s#\"server\": \"https://[^/\"]+#\"server\": \"https://127.0.0.1:$ATOLL_PROXY_PORT#"
}

# How many shards the front-proxy routes to (its atoll_front_proxy_shards gauge, which
# it serves itself); empty while it does not answer.
proxy_shards() {
  KUBECONFIG="$kubeconfig" kubectl get --raw /metrics --request-timeout 2s 2>/dev/null |
    sed -n 's/^atoll_front_proxy_shards \([0-9]*\)$/\1/p'
}

start() {
  local profile=()
  if [ "${1:-}" = --observability ]; then
    profile=(--profile observability)
    export OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4317
  else
    # A collector address from the caller's shell means nothing inside the containers.
    unset OTEL_EXPORTER_OTLP_ENDPOINT
  fi
  # A kubeconfig left from an earlier installation would name other CAs.
  rm -f "$kubeconfig"
  local started=$SECONDS
  # `up` itself waits for each service's dependencies to be healthy (depends_on), so it
  # returns once the front-proxy has been started.
  "${compose[@]}" "${profile[@]}" up -d
  mkdir -p "$(dirname "$kubeconfig")"
  local shards=""
  cleanup+=("$kubeconfig.tmp")
  local deadline=$((SECONDS + ready_timeout))
  until [ "$shards" = "$shard_count" ]; do
    if [ $SECONDS -ge $deadline ]; then
      echo "the installation was not ready within ${ready_timeout}s (front-proxy routes to ${shards:-no} shards); logs:" >&2
      "${compose[@]}" logs --tail 20 >&2
      exit 1
    fi
    sleep 1
    if [ ! -s "$kubeconfig" ] && print_kubeconfig >"$kubeconfig.tmp" 2>/dev/null && [ -s "$kubeconfig.tmp" ]; then
      chmod 0600 "$kubeconfig.tmp"
      mv "$kubeconfig.tmp" "$kubeconfig"
    fi
    [ -s "$kubeconfig" ] || continue
    shards="$(proxy_shards)"
  done
  # The front-proxy knows every shard; root answering through it means routing works.
  until KUBECONFIG="$kubeconfig" kubectl get --raw /clusters/root/api >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "root does not answer through the front-proxy" >&2
      exit 1
    fi
    sleep 1
  done
  echo "ready in $((SECONDS - started)) s" >&2
}

case "${1:-}" in
  up)
    shift
    scripts/deps.sh
    # The whole workspace, as the tests build it, so RocksDB is built once for both.
    cargo build --workspace --all-targets
    images
    start "$@"
    # `kubectl ws` is a kubectl plugin: kubectl finds `kubectl-ws` on PATH.
    path_hint=""
    command -v kubectl-ws >/dev/null || path_hint="  export PATH=$bin_dir:\$PATH   # for kubectl ws
"
    cat <<MSG
Atoll is running in docker-compose project $project: a front-proxy on
https://127.0.0.1:$ATOLL_PROXY_PORT in front of shards root, shard-1 and shard-2, regional
caches cache-a (root, shard-1) and cache-b (shard-2) under cache-global, and Prometheus on
http://127.0.0.1:$ATOLL_PROMETHEUS_PORT.

  export KUBECONFIG=$kubeconfig
${path_hint}  kubectl ws create team-a --enter   # a workspace on whichever shard the ring picks
  kubectl create configmap hello --from-literal=greeting=hi
  kubectl ws ..
  kubectl get workspaces            # the shard each landed on: metadata.annotations
  docker-compose -p $project -f deploy/docker-compose.yaml ps

MSG
    if [ "${1:-}" = --observability ]; then
      echo "Jaeger: http://127.0.0.1:${ATOLL_JAEGER_PORT:-16686}   Grafana: http://127.0.0.1:${ATOLL_GRAFANA_PORT:-3000}"
      echo
    fi
    echo "Tear it down (containers, network, volumes) with: scripts/compose.sh down"
    ;;
  start)
    shift
    start "$@"
    echo "$kubeconfig"
    ;;
  images) images ;;
  kubeconfig) print_kubeconfig ;;
  down)
    # Also the observability services, so a profile started earlier goes too.
    "${compose[@]}" --profile observability down -v --remove-orphans
    rm -f "$kubeconfig"
    ;;
  *) usage ;;
esac
