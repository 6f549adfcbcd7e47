# A systemd-booted node for the roles' systemd paths (molecule/systemd scenarios of cluster_join
# and rdma_fabric): Debian 12 + systemd 252 as PID 1, munge + slurmd as units, systemd-networkd
# and netplan for the rails. Built by tests/integration/roles/test_molecule_systemd.py and
# `make molecule-systemd` from the debootstrap base image (no registry needed).
# Run with: /sbin/init as the command, /sys/fs/cgroup mounted read-only, tmpfs on /run, /run/lock
# and /tmp (cgroup v1 host, docker 20.10; no --privileged).
ARG BASE_IMAGE=gpufleet/debian-base:bookworm
FROM ${BASE_IMAGE}
# Masked: units that cannot work in a container (getty, udev: /sys is read-only). Disabled: what
# the roles enable themselves (munge and slurmd: cluster_join; systemd-networkd: rdma_fabric).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      systemd systemd-sysv dbus iproute2 munge slurmd slurm-client netplan.io \
 && rm -rf /var/lib/apt/lists/* \
 && systemctl mask getty.target console-getty.service systemd-udev-trigger.service \
      systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
 && systemctl disable munge.service slurmd.service systemd-networkd.service systemd-networkd.socket
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
