"""Locate this checkout and make it importable as ``ansible_collections.gpufleet.baremetal``.

The command line reuses the collection's module_utils (parsers, ledger, image
verification) instead of keeping a second copy; this puts them on ``sys.path``.
"""
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_PATH = os.path.join(REPO_ROOT, "build", "collections")
_LINK = os.path.join(COLLECTIONS_PATH, "ansible_collections", "gpufleet", "baremetal")


def ensure_importable():
    """Create the build/collections symlink if needed and put it on sys.path."""
    if not os.path.lexists(_LINK):
        os.makedirs(os.path.dirname(_LINK), exist_ok=True)
        os.symlink(os.path.join("..", "..", "..", ".."), _LINK)
    if COLLECTIONS_PATH not in sys.path:
        sys.path.insert(0, COLLECTIONS_PATH)
    return COLLECTIONS_PATH
