#!/bin/sh
# Make the image generic so every node boots unique: no machine-id, no SSH host keys,
# no logs, no apt lists or caches, no build leftovers.
set -eu
rm -rf /var/lib/gpufleet-build
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
rm -f /etc/ssh/ssh_host_*
# Cluster secrets are per cluster, never per image: the Slurm join role installs the key.
rm -f /etc/munge/munge.key
if command -v cloud-init >/dev/null 2>&1; then
  cloud-init clean --logs
fi
if id packer >/dev/null 2>&1; then
  passwd -l packer >/dev/null
fi
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
find /var/log -type f -exec truncate -s 0 {} +
rm -rf /tmp/* /var/tmp/* /root/.bash_history /var/cache/debconf/*-old /var/lib/dpkg/*-old
rm -f /var/cache/ldconfig/aux-cache
echo "gpufleet: image cleaned"
