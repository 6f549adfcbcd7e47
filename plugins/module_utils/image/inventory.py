# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Package inventories: ``dpkg-query`` output read from a built image or a running node."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

__all__ = ["DPKG_QUERY_FORMAT", "parse_packages", "pin_mismatches"]

DPKG_QUERY_FORMAT = "${binary:Package}\\t${Version}\\t${Architecture}\\n"


def parse_packages(text, where="package list"):
    """Tab-separated ``name<TAB>version<TAB>arch`` lines -> sorted list of dicts.

    ``name`` drops a ``:arch`` qualifier (multi-arch packages) so names match pins.
    """
    packages = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(fields):
            raise ManifestError("%s line %d is not name<TAB>version<TAB>arch: %r. Re-run the inventory with "
                                "dpkg-query -W -f='%s'." % (where, number, line, DPKG_QUERY_FORMAT), line=number)
        name = fields[0].split(":")[0]
        packages[name] = {"name": name, "version": fields[1], "arch": fields[2]}
    if not packages:
        raise ManifestError("%s is empty: the image inventory failed. Check the build log." % where)
    return [packages[name] for name in sorted(packages)]


def pin_mismatches(pins, packages):
    """[{package, requested, installed}] for each pin not installed at exactly its version."""
    installed = dict((p["name"], p["version"]) for p in packages)
    return [{"package": name, "requested": version, "installed": installed.get(name)}
            for name, version in sorted(pins.items()) if installed.get(name) != version]
