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
# ansible-test fetches its pip bootstrap from a host CI cannot reach; serve our stand-in.
pipver=$("$VENV/bin/python" -c 'from ansible_test._internal.python_requirements import PIP_VERSION as v; print(v)' 2>/dev/null || echo 24.2)
cache=~/.ansible/test/cache/get_pip_${pipver//./_}.py
mkdir -p "$(dirname "$cache")" && cp "$ROOT/scripts/ansible_test_get_pip.py" "$cache"
exec ansible-test sanity --python 3.11 --color no --requirements "$@"
