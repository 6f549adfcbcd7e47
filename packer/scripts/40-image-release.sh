#!/bin/sh
# /etc/gpufleet/image-release (os-release style). The acceptance gate's attestation
# phase compares BUILD_ID and PINS_SHA256 with the signed manifest of this build.
set -eu
mkdir -p /etc/gpufleet
cat >/etc/gpufleet/image-release <<RELEASE
NAME="gpufleet node image"
VERSION="$GPUFLEET_IMAGE_VERSION"
BUILD_ID="$GPUFLEET_BUILD_ID"
PINS_SHA256="$GPUFLEET_PINS_SHA256"
OS_ID="$GPUFLEET_OS_ID"
OS_VERSION_ID="$GPUFLEET_OS_VERSION_ID"
RELEASE
chmod 0644 /etc/gpufleet/image-release
echo "gpufleet: wrote /etc/gpufleet/image-release for $GPUFLEET_BUILD_ID"
