#!/bin/sh
# Configure the pin file's apt repositories and their signing keys.
# A key whose fingerprint differs from the pinned one fails the build.
set -eu
keyring_dir=/usr/share/keyrings
if [ -n "${GPUFLEET_APT_KEYS:-}" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends gnupg curl ca-certificates >/dev/null
  for entry in $GPUFLEET_APT_KEYS; do
    name=${entry%%,*}; rest=${entry#*,}; url=${rest%,*}; fingerprint=${entry##*,}
    curl -fsSL "$url" | gpg --dearmor >"$keyring_dir/$name.gpg"
    actual=$(gpg --show-keys --with-colons "$keyring_dir/$name.gpg" | awk -F: '$1 == "fpr" {print $10; exit}')
    if [ "$actual" != "$fingerprint" ]; then
      echo "gpufleet: apt key $name from $url has fingerprint $actual, pin file expects $fingerprint" >&2
      exit 1
    fi
    echo "gpufleet: apt key $name verified ($fingerprint)"
  done
fi
if [ -n "${GPUFLEET_APT_SOURCES:-}" ]; then
  # The pin file's sources replace the base image's, so every package has one origin.
  rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*.sources
  printf '%s\n' "$GPUFLEET_APT_SOURCES" | tr '|' '\n' >/etc/apt/sources.list.d/gpufleet.list
fi
apt-get update -qq
echo "gpufleet: apt sources configured"
