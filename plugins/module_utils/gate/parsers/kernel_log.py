# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse NVIDIA XID (GPU) and SXid (NVSwitch) events from the kernel log (``dmesg``, journal).

The driver logs ``NVRM: Xid (PCI:<bus>): <code>, <details>`` (with ``pid=..., name=...``
on R460+ drivers). Timestamps differ (``[  12.3]``, ``dmesg -T``, journal prefixes) and
are ignored. A log that could not be read (``Operation not permitted``) is a failure,
not an empty log.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text)

__all__ = ["XidEvent", "KernelLog", "parse_kernel_log"]

TOOL = "dmesg"
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)$")
_SXID = re.compile(r"SXid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)$")
_UNREADABLE = ("read kernel buffer failed", "Operation not permitted", "No journal files were found")
_LOOSE = re.compile(r"\bS?Xid\b")
# What a kernel log line starts with: dmesg ``[   4.1]`` or ``dmesg -T`` ``[Sat Nov 21 ...]``, a raw
# priority ``<6>``, or a journal/syslog prefix ending in ``kernel:``. A text with none of them is not
# a kernel log, and reading it as one would pass the XID check on anything.
_KERNEL_LINE = re.compile(r"^(?:<\d+>)?\[\s*(?:\d+\.\d+|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]{8} \d{4})\]\s+\S"
                          r"|^\S.*?\skernel:\s+\S")


@dataclasses.dataclass(frozen=True)
class XidEvent:
    code: int
    pci: str
    message: str
    line_no: int


@dataclasses.dataclass(frozen=True)
class KernelLog:
    xids: tuple
    sxids: tuple = ()

    def codes(self):
        """XID codes in order of appearance (repeats kept)."""
        return tuple(event.code for event in self.xids)

    def by_gpu(self):
        """PCI bus id -> sorted unique XID codes."""
        out = {}
        for event in self.xids:
            out.setdefault(event.pci, set()).add(event.code)
        return dict((pci, tuple(sorted(codes))) for pci, codes in out.items())


def parse_kernel_log(text):
    """Kernel log text -> ``KernelLog`` (raises ``ParseError``)."""
    require_text(text, TOOL, "kernel log lines")
    xids, sxids = [], []
    for line_no, line in numbered_lines(text):
        if any(marker in line for marker in _UNREADABLE):
            raise ParseError(TOOL, "the kernel log", line_no, line,
                             why="the log could not be read (run as root or grant CAP_SYSLOG)")
        sxid = _SXID.search(line)
        xid = _XID.search(line)
        if sxid:
            sxids.append(XidEvent(int(sxid.group(2)), sxid.group(1).lower(), sxid.group(3).strip(), line_no))
        elif xid:
            xids.append(XidEvent(int(xid.group(2)), xid.group(1).lower(), xid.group(3).strip(), line_no))
        elif _LOOSE.search(line) and "NVRM" in line:
            raise ParseError(TOOL, '"NVRM: Xid (PCI:<bus>): <code>, <details>"', line_no, line,
                             why="an XID line in an unknown format must not be skipped")
    if not any(_KERNEL_LINE.search(line) for _n, line in numbered_lines(text)):
        first = text.split("\n")[0]
        raise ParseError(TOOL, 'kernel log lines ("[  4.1] ...", "[Sat Nov 21 ...] ..." or "<host> kernel: ...")',
                         1, first, why="no line looks like a kernel log line")
    return KernelLog(xids=tuple(xids), sxids=tuple(sxids))
