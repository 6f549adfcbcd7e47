#!/bin/sh
# Hand the full package list, the kernel and the image-release back to the wrapper,
# which writes them into the manifest and SBOM and compares them with the pins.
set -eu
out=/var/lib/gpufleet-build
mkdir -p "$out"
dpkg-query -W -f='${binary:Package}\t${Version}\t${Architecture}\t${db:Status-Status}\n' | LC_ALL=C sort >"$out/packages.tsv"
# A container image has no kernel of its own; a disk image lists its installed kernels.
(ls /lib/modules 2>/dev/null || true) | LC_ALL=C sort >"$out/kernels.txt"
cp /etc/gpufleet/image-release "$out/image-release"
echo "gpufleet: inventory of $(wc -l <"$out/packages.tsv") packages written"
