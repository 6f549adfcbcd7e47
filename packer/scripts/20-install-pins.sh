#!/bin/sh
# Install exactly the pinned package versions, then hold them (apt-mark hold) so an
# unattended upgrade cannot move a node away from its image.
set -eu
[ -n "${GPUFLEET_PINS:-}" ] || { echo "gpufleet: no pins given (GPUFLEET_PINS is empty)" >&2; exit 1; }
# shellcheck disable=SC2086 # word splitting of "name=version" pairs is intended
apt-get install -y -q --no-install-recommends $GPUFLEET_PINS
names=$(printf '%s\n' $GPUFLEET_PINS | sed 's/=.*//')
# shellcheck disable=SC2086
apt-mark hold $names >/dev/null
echo "gpufleet: installed and held $(printf '%s\n' $names | wc -l) pinned packages"
