"""Tests import the collection exactly as Ansible and the controller package do.

The symlink under build/ is the one ``make collection`` creates; ANSIBLE_COLLECTIONS_PATH
points at it (unless the caller set one), and importing ``gpufleet`` installs Ansible's
collection loader over that path (see gpufleet.collection). ``tests`` and ``lab`` import
from the checkout through pytest.ini's ``pythonpath``.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "baremetal")
SHARED_FIXTURES = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures"))

if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)

import gpufleet  # noqa: E402,F401  (installs the collection loader)

# Property tests explore new random inputs on a developer's machine; in CI (GPUFLEET_CI=1) they
# replay a fixed sequence, so a red CI is a change's fault and reproducible, never the dice.
# Bugs found locally get a named regression case (see tests/unit/lab/twin/test_lab_twin.py).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("GPUFLEET_CI"):
    _hypothesis_settings.load_profile("ci")
