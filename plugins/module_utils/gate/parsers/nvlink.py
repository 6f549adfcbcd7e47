# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``nvidia-smi nvlink --status``: per GPU, each link's speed or ``<inactive>``.

A GPU whose links are all down prints ``NVML: Unable to retrieve NVLink information as
all links are inactive`` instead of link lines: that GPU has zero active links.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text, to_float)

__all__ = ["NvlinkGpu", "NvlinkStatus", "parse_nvlink_status"]

TOOL = "nvidia-smi nvlink --status"
_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?\s*$")
_LINK = re.compile(r"^Link (\d+): (.+?)\s*$")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?) GB/s$")
_ALL_INACTIVE = "all links are inactive"


@dataclasses.dataclass(frozen=True)
class NvlinkGpu:
    """``links``: (link number, GB/s) pairs; an inactive link has speed ``None``."""

    index: int
    name: str
    links: tuple

    def active(self):
        return sum(1 for _n, speed in self.links if speed is not None)


@dataclasses.dataclass(frozen=True)
class NvlinkStatus:
    gpus: tuple

    def active_links(self):
        """(``GPU<n>``, active link count) pairs."""
        return tuple(("GPU%d" % g.index, g.active()) for g in self.gpus)

    def link_speeds(self):
        return tuple(("GPU%d link %d" % (g.index, n), s) for g in self.gpus for n, s in g.links if s is not None)


def parse_nvlink_status(text):
    """``nvidia-smi nvlink --status`` -> ``NvlinkStatus`` (raises ``ParseError``)."""
    require_text(text, TOOL, "nvlink status output")
    gpus, current = [], None
    for line_no, line in numbered_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        gpu = _GPU.match(stripped)
        link = _LINK.match(stripped)
        if gpu:
            current = {"index": int(gpu.group(1)), "name": gpu.group(2), "links": []}
            gpus.append(current)
        elif current is None:
            raise ParseError(TOOL, '"GPU <n>: <name>" before link lines', line_no, line)
        elif link:
            current["links"].append((int(link.group(1)), _speed(link.group(2), line_no, line)))
        elif _ALL_INACTIVE in stripped:
            current["links"] = []
        else:
            raise ParseError(TOOL, '"Link <n>: <speed> GB/s" or "<inactive>"', line_no, line)
    if not gpus:
        raise ParseError(TOOL, "at least one GPU section", why="no GPU line was found")
    return NvlinkStatus(gpus=tuple(NvlinkGpu(index=g["index"], name=g["name"], links=tuple(g["links"]))
                                   for g in gpus))


def _speed(token, line_no, line):
    if token.strip("<>").lower() == "inactive":
        return None
    match = _SPEED.match(token)
    if not match:
        raise ParseError(TOOL, "a link speed in GB/s or <inactive>", line_no, line)
    return to_float(match.group(1), TOOL, "a link speed", line_no, line)
