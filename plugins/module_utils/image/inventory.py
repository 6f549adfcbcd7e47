# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Package inventories: ``dpkg-query`` output read from a built image or a running node."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

__all__ = ["DPKG_QUERY_FORMAT", "parse_packages", "pin_mismatches"]

DPKG_QUERY_FORMAT = "${binary:Package}\\t${Version}\\t${Architecture}\\t${db:Status-Status}\\n"


def parse_packages(text, where="package list"):
    """Tab-separated ``name<TAB>version<TAB>arch[<TAB>status]`` lines -> sorted list of dicts.

    ``name`` drops a ``:arch`` qualifier (multi-arch packages) so names match pins. With
    a status column only ``installed`` packages count: a removed package whose config
    files remain (status ``config-files``) is still listed by dpkg-query but not installed.
    """
    packages = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (3, 4) or not all(fields[:3]):
            raise ManifestError("%s line %d is not name<TAB>version<TAB>arch[<TAB>status]: %r. Re-run the inventory with "
                                "dpkg-query -W -f='%s'." % (where, number, line, DPKG_QUERY_FORMAT), line=number)
        if len(fields) == 4 and fields[3] != "installed":
            continue
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
