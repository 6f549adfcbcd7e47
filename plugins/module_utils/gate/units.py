# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Units of the gate's measurements and message sizes.

``UNITS`` maps a unit to its dimension and the factor to the dimension's base (bandwidth
base: bytes/s). Parsers return values in a check's canonical unit (``catalog.CHECKS``);
profiles may state bandwidth floors in any bandwidth unit and reports show both numbers
in the profile's unit.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import numbers
import re

__all__ = ["UNITS", "parse_size", "convert", "is_number"]

UNITS = {
    "GB/s": ("bandwidth", 1e9), "MB/s": ("bandwidth", 1e6), "GiB/s": ("bandwidth", 1073741824.0),
    "MiB/s": ("bandwidth", 1048576.0), "Gb/s": ("bandwidth", 1.25e8), "Mb/s": ("bandwidth", 1.25e5),
    "IOPS": ("rate", 1.0), "count": ("count", 1.0), "gpus": ("count", 1.0), "links": ("count", 1.0),
    "pages": ("count", 1.0), "name": ("name", 1.0), "version": ("version", 1.0),
    "xid": ("xid", 1.0), "tests": ("tests", 1.0), "us": ("time", 1e-6),
}
_SIZE_RE = re.compile(r"^(\d+)\s*([KMGT]?)i?B?$", re.IGNORECASE)


def parse_size(value):
    """Bytes from an int or an nccl-tests style size (``8G`` = 8 GiB, ``128M``, ``4KiB``)."""
    if isinstance(value, bool):
        raise ValueError("a size, not a boolean")
    if isinstance(value, int):
        return value
    match = _SIZE_RE.match(str(value).strip())
    if not match:
        raise ValueError("a size such as 8589934592, 8G or 128M")
    return int(match.group(1)) * 1024 ** " KMGT".index(match.group(2).upper() or " ")


def convert(value, source, target):
    """``value`` from unit ``source`` to ``target``; unchanged when either is None or they match."""
    if source is None or target is None or source == target:
        return value
    return value * UNITS[source][1] / UNITS[target][1]


def is_number(value):
    """A real number that is not a boolean (YAML and JSON ``true`` are not 1)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
