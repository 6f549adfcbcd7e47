"""Make this checkout importable as ``ansible_collections.gpufleet.baremetal``.

Tests import the collection exactly as Ansible does; the symlink under build/ is the
same one ``make collection`` creates, so a plain ``pytest`` run works too.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "baremetal")
SHARED_FIXTURES = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures"))

if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # for ``from tests.helpers import ...``
