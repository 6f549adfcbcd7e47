#!/usr/bin/env bash
# Install the host packages this project needs on Debian 12 and make sure dockerd runs.
# `--demo`: only what `make demo` uses (the lab and its images); no flag: everything the tests
# use too (.ci/run, `make host`). Safe to re-run. Needs root (or sudo).
set -euo pipefail
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
PACKAGES=(
  python3 python3-venv python3-pip make git openssl curl
  docker.io debootstrap packer
  gcc libc6-dev   # the lab's boot-time simulation (lab/hwsim/boottime)
  libvirt-dev pkg-config python3-dev   # the venv's libvirt-python builds against them (lab/pyproject.toml)
)
TEST_PACKAGES=(
  fio iperf3 rdma-core perftest swtpm swtpm-tools tpm2-tools minisign shellcheck
  chromium
  prometheus   # promtool: the alert rules' checks and unit tests (contrib/prometheus)
  # the installer ISO (gpufleet image installer), whole-disk images and the lab's machine node
  cpio xorriso grub-efi-amd64-bin grub-pc-bin mtools gdisk dosfstools e2fsprogs qemu-system-x86 ovmf
  libvirt-daemon-system libvirt-clients   # the machine node behind a Redfish BMC (lab/machine/bmc.py)
)
case "${1:-}" in
  --demo) ;;
  "") PACKAGES+=("${TEST_PACKAGES[@]}"); TESTS=1 ;;
  *) echo "usage: $0 [--demo]" >&2; exit 2 ;;
esac
missing=()
for p in "${PACKAGES[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# only promtool is wanted from the prometheus package: no server running beside the tests
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd"
  $SUDO sh -c 'nohup dockerd >/var/log/gpufleet-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/gpufleet-dockerd.log" >&2; exit 1; }
fi
# libvirtd for the machine node's BMC; started by hand where there is no systemd (containers, CI)
if [[ -n "${TESTS:-}" ]] && ! virsh -c qemu:///system uri >/dev/null 2>&1; then
  echo "starting libvirtd"
  $SUDO sh -c 'virtlogd -d; libvirtd -d'
  for _ in $(seq 1 30); do virsh -c qemu:///system uri >/dev/null 2>&1 && break; sleep 1; done
  virsh -c qemu:///system uri >/dev/null 2>&1 || { echo "libvirtd did not start" >&2; exit 1; }
fi
echo "host ready: docker $(docker version --format '{{.Server.Version}}'), packer $(packer version | head -1)"
