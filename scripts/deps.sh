#!/usr/bin/env bash
# Installs the system packages Atoll's build, tests and benchmarks need, only when missing.
#   libclang-dev       bindgen for the RocksDB build (librocksdb-sys)
#   protobuf-compiler  protoc for gRPC code generation (etcd-client in the benchmark)
#   libprotobuf-dev    protoc's well-known types (google/protobuf/*.proto); only a
#                      "recommends" of protobuf-compiler, so --no-install-recommends skips it
#   etcd-server        the baseline of the store benchmark
#   nginx              the baseline of the proxy benchmark (a TLS reverse proxy in front of a
#                      shard); the benchmark runs /usr/sbin/nginx from a temporary prefix and
#                      never uses the package's own service (which an init system may start)
#   kubectl            the client the end-to-end tests drive (v1.32 ships with this machine kind)
# and one PyPI package:
#   kubernetes         the official Python client, driven by tests/python/client_scenarios.py
#                      (from PyPI, for a release that knows the Kubernetes versions we serve)
set -euo pipefail

need=()
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/descriptor.proto ] || need+=(libprotobuf-dev)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
[ -x /usr/sbin/nginx ] || need+=(nginx)
command -v python3 >/dev/null 2>&1 || need+=(python3)

if [ "${#need[@]}" -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

if ! command -v kubectl >/dev/null 2>&1; then
  echo "kubectl is missing: install kubectl v1.32 (it is preinstalled on this machine kind)" >&2
  exit 1
fi

# The Python client test (tests/tests/python_client.rs) runs the official client against a
# real shard; without it that test fails at import, which says nothing about the server.
if ! python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "installing the Python kubernetes client"
  python3 -m pip install --quiet 'kubernetes>=31'
fi
