#!/bin/sh
# Install exactly the pinned package versions, then hold them (apt-mark hold) so an
# unattended upgrade cannot move a node away from its image.
# GPUFLEET_PINS is a space-separated list of name=version words; splitting it is intended.
# shellcheck disable=SC2086
set -euf
[ -n "${GPUFLEET_PINS:-}" ] || { echo "gpufleet: no pins given (GPUFLEET_PINS is empty)" >&2; exit 1; }
apt-get install -y -q --no-install-recommends $GPUFLEET_PINS
names=$(printf '%s\n' $GPUFLEET_PINS | sed 's/=.*//')
apt-mark hold $names >/dev/null
echo "gpufleet: installed and held $(printf '%s\n' $names | wc -l) pinned packages"
