#!/bin/sh
# The in-image proof: every pin is installed at exactly its version, or the build fails.
set -eu
bad=0
for pin in $GPUFLEET_PINS; do
  name=${pin%%=*}; want=${pin#*=}
  have=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || echo "not-installed")
  if [ "$have" != "$want" ]; then
    echo "gpufleet: pin mismatch: $name wants $want, image has $have" >&2
    bad=1
  fi
done
[ "$bad" = 0 ] || exit 1
echo "gpufleet: all pins verified"
