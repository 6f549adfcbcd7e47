# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Drift: how a running node differs from the manifest of the image it claims to run."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import VerificationError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.inventory import parse_packages
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.release import parse_release, release_mismatches
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_manifest_bytes

__all__ = ["check_node", "compare_node"]


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


def _read(path, what):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise VerificationError("Cannot read the %s %s: %s. Build or copy the image's manifest and signature "
                                "to the controller first." % (what, path, exc.strerror or exc), path=path)


def check_node(manifest_path, signature_path, public_key_pem, key_where, packages_text, release_text, held, node):
    """Verify the manifest's signature, parse what the node reported, and compare."""
    manifest = verify_manifest_bytes(_read(manifest_path, "manifest"),
                                     _read(signature_path or manifest_path + ".sig", "signature"),
                                     public_key_pem, manifest_path, key_where)
    node_packages = parse_packages(packages_text, "package list of %s" % node)
    node_release = parse_release(release_text, "image-release of %s" % node)
    return compare_node(manifest, node_packages, node_release, held)
