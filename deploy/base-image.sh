#!/usr/bin/env bash
# Builds the base image the Dockerfiles start from, atoll-base:bookworm, from Debian's
# own packages: a minbase debootstrap of bookworm imported as a one-layer image. Machines
# that pull images use debian:bookworm-slim instead (the Dockerfiles' default); this one
# exists for machines that can reach a Debian mirror but no image registry. Does nothing
# when the image is already there, so callers may run it every time.
#
#   deploy/base-image.sh [IMAGE]      # default atoll-base:bookworm
# Environment: ATOLL_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
image="${1:-atoll-base:bookworm}"
mirror="${ATOLL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
if ! command -v debootstrap >/dev/null; then
  echo "installing debootstrap" >&2
  sudo_cmd=(); [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y debootstrap >/dev/null
fi

root="$(mktemp -d /var/tmp/atoll-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "building $image with debootstrap (minbase bookworm from $mirror)" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# The same apt behaviour as Debian's official slim images: sources from the mirror above,
# no recommends, no cached .debs or package lists left in layers built on top.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
APT::Install-Recommends "false";
APT
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "built $image" >&2
