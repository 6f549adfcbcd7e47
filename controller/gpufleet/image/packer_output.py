# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Parse ``packer -machine-readable`` output (pure functions, no subprocess).

Each line is ``timestamp,target,type,data...``; commas inside data are written as
``%!(PACKER_COMMA)`` and newlines as a literal backslash-n.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["MachineLine", "parse_line", "parse_version", "error_lines", "missing_pins"]


class MachineLine(object):
    __slots__ = ("timestamp", "target", "kind", "data")

    def __init__(self, timestamp, target, kind, data):
        self.timestamp = timestamp
        self.target = target
        self.kind = kind
        self.data = data

    def text(self):
        """The human text of a ``ui`` line (its last field), else the joined data."""
        if self.kind == "ui" and len(self.data) >= 2:
            return self.data[-1]
        return ",".join(self.data)


def _unescape(field):
    return field.replace("%!(PACKER_COMMA)", ",").replace("\\n", "\n").replace("\\r", "\r")


def parse_line(line):
    """One machine-readable line -> MachineLine, or None for anything else (plain output)."""
    parts = line.rstrip("\r\n").split(",")
    if len(parts) < 3 or not parts[0].isdigit():
        return None
    return MachineLine(int(parts[0]), parts[1], parts[2], [_unescape(p) for p in parts[3:]])


def parse_version(text):
    """Packer version from ``packer version`` (plain or machine-readable) -> (major, minor, patch)."""
    match = re.search(r"(?:Packer v|version,)(\d+)\.(\d+)\.(\d+)", text)
    if not match:
        return None
    return tuple(int(g) for g in match.groups())


def error_lines(lines):
    """Text of ``ui,error`` lines (Packer's own failure messages)."""
    return [item.text() for item in lines if item is not None and item.kind == "ui" and item.data[:1] == ["error"]]


# apt-get's words when a pinned version has left the archive (Debian's security and point
# releases replace versions; the archive keeps only the newest of each suite)
_APT_VERSION_GONE = re.compile(r"E: Version '([^']+)' for '([^']+)' was not found")


def missing_pins(lines):
    """``[(package, version)]`` that apt-get said it cannot find, in order, once each."""
    found = []
    for item in lines:
        if item is None:
            continue
        for version, package in _APT_VERSION_GONE.findall(item.text()):
            if (package, version) not in found:
                found.append((package, version))
    return found
