# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Drift: how a running node differs from the manifest of the image it claims to run."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.release import release_mismatches

__all__ = ["compare_node"]


def _package_drift(expected, actual):
    want = dict((p["name"], p["version"]) for p in expected)
    have = dict((p["name"], p["version"]) for p in actual)
    changed = [{"package": n, "expected": want[n], "actual": have[n]}
               for n in sorted(set(want) & set(have)) if want[n] != have[n]]
    return {
        "added": [{"package": n, "version": have[n]} for n in sorted(set(have) - set(want))],
        "removed": [{"package": n, "version": want[n]} for n in sorted(set(want) - set(have))],
        "changed": changed,
    }


def compare_node(manifest, node_packages, node_release, held=None):
    """Drift report of one node.

    ``node_packages``: parsed dpkg-query list; ``node_release``: parsed image-release;
    ``held``: names apt-mark reports as held (None when not collected). Pinned packages
    that are no longer held are drift too: nothing then stops an upgrade.
    """
    packages = _package_drift(manifest["packages"], node_packages)
    release = release_mismatches(node_release, manifest["release"])
    unheld = []
    if held is not None:
        unheld = sorted(set(manifest["pins"]["requested"]) - set(held))
    count = sum(len(v) for v in packages.values()) + len(release) + len(unheld)
    return {
        "drifted": count > 0,
        "count": count,
        "version": manifest["version"],
        "build_id": manifest["build_id"],
        "packages": packages,
        "release": release,
        "unheld_pins": unheld,
    }
