#!/usr/bin/env bash
# Build the Debian 12 base image every container of this project starts from
# (Molecule platforms, the Packer docker source, the lab's nodes and Slurm controller).
# No image registry is reachable on CI, so the rootfs comes from debootstrap and enters
# docker through `docker import`. Idempotent: an existing image is kept unless FORCE=1.
set -euo pipefail
IMAGE=${GPUFLEET_BASE_IMAGE:-gpufleet/debian-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
# python3 for Ansible; systemd-less containers, so only what roles and probes need.
PACKAGES=python3,python3-apt,sudo,iproute2,ca-certificates,procps,gnupg,curl,less,kmod,iputils-ping

# One build at a time on this host: make test's workers ask for the image concurrently.
exec 9>"${TMPDIR:-/tmp}/gpufleet-base-image.lock"
flock 9
if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "base image $IMAGE exists (FORCE=1 rebuilds)"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed: apt-get install debootstrap" >&2; exit 2; }
work=$(mktemp -d /tmp/gpufleet-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "debootstrap $SUITE from $MIRROR into $work/rootfs"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; echo "debootstrap failed (log above)" >&2; exit 1; }
# Keep apt lists out of the image; containers run `apt-get update` when they install.
rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/*.bin
tar -C "$work/rootfs" -c . | docker import \
  -c 'CMD ["/bin/bash"]' -c 'ENV LANG=C.UTF-8' - "$IMAGE" >/dev/null
echo "imported $IMAGE"
