#!/usr/bin/env bash
# Run `ansible-test sanity` on a clean copy of the collection as `ansible-galaxy` would
# ship it (build_ignore applies: lab/, cli/, .ci/ are not part of the collection).
# Usage: scripts/sanity.sh [ansible-test sanity args, e.g. --test validate-modules plugins/modules/x.py]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
OUT=$ROOT/build/sanity
DEST=$OUT/ansible_collections/gpufleet/baremetal
rm -rf "$OUT" && mkdir -p "$OUT/dist"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$OUT/dist" "$ROOT" >/dev/null
mkdir -p "$DEST" && tar -xzf "$OUT"/dist/gpufleet-baremetal-*.tar.gz -C "$DEST"
cd "$DEST"
# ansible-test wants a git tree or explicit targets; init one so it knows the file list.
git init -q && git add -A && git -c user.email=ci@gpufleet -c user.name=ci commit -qm sanity
export PATH="$VENV/bin:$PATH"
exec ansible-test sanity --python 3.11 --color no --requirements "$@"
