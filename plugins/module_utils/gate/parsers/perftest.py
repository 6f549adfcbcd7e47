# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse perftest bandwidth reports (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``).

The report table ``#bytes #iterations BW peak[<unit>] BW average[<unit>] MsgRate[Mpps]``
holds one row per message size (``-a`` prints many; the largest is the line-rate
figure). perftest's ``MB/sec`` is 2^20 bytes/s and ``Gb/sec`` (``--report_gbits``) is
10^9 bits/s (perftest ``print_report_bw`` format factors). Connection or device errors
fail closed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text, to_float, to_int)

__all__ = ["PerftestRow", "PerftestResult", "parse_perftest"]

TOOL = "ib_write_bw"
_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(\S+)\]\s+BW average\[(\S+)\]")
_DEVICE = re.compile(r"Device\s*:\s*(\S+)")
_LINK = re.compile(r"Link type\s*:\s*(\S+)")
_TITLE = re.compile(r"^\s*(\S+ BW Test)\s*$")
_ERRORS = ("Couldn't", "Unable to", "Failed to", "failed to", "not found", "Error", "ERROR")
_GBITS_PER = {"Gb/sec": 1.0, "MB/sec": 1048576 * 8 / 1e9}


@dataclasses.dataclass(frozen=True)
class PerftestRow:
    size: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate_mpps: float


@dataclasses.dataclass(frozen=True)
class PerftestResult:
    test: object
    device: object
    link_type: object
    unit: str
    rows: tuple

    def average_gbps(self):
        """BW average of the largest message size, in Gb/s (10^9 bits/s)."""
        return self.rows[-1].bw_average * _GBITS_PER[self.unit]


def parse_perftest(text, tool=TOOL):
    """perftest output -> ``PerftestResult`` (raises ``ParseError`` naming ``tool``)."""
    require_text(text, tool, "a perftest report")
    found = {"test": None, "device": None, "link": None, "unit": None}
    rows = []
    for line_no, line in numbered_lines(text):
        if any(marker in line for marker in _ERRORS):
            raise ParseError(tool, "a completed bandwidth test", line_no, line, why="perftest reported an error")
        _scan(found, line)
        header = _HEADER.search(line)
        if header:
            found["unit"] = _unit(header, tool, line_no, line)
        elif found["unit"] and line.strip() and line.strip()[0].isdigit():
            rows.append(_row(line, tool, line_no))
    if found["unit"] is None:
        raise ParseError(tool, 'the "#bytes #iterations BW peak[...] BW average[...]" header',
                         why="the output has no result table: the test did not finish")
    if not rows:
        raise ParseError(tool, "at least one result row", why="the result table is empty")
    return PerftestResult(test=found["test"], device=found["device"], link_type=found["link"], unit=found["unit"],
                          rows=tuple(rows))


def _scan(found, line):
    for key, regex in (("device", _DEVICE), ("link", _LINK), ("test", _TITLE)):
        match = regex.search(line)
        if match and found[key] is None:
            found[key] = match.group(1)


def _unit(header, tool, line_no, line):
    unit = header.group(2)
    if unit not in _GBITS_PER or header.group(1) != unit:
        raise ParseError(tool, "bandwidth in Gb/sec or MB/sec", line_no, line, why="found %s" % unit)
    return unit


def _row(line, tool, line_no):
    fields = line.split()
    if len(fields) != 5:
        raise ParseError(tool, "5 columns (#bytes #iterations BW peak BW average MsgRate)", line_no, line,
                         why="found %d" % len(fields))
    return PerftestRow(size=to_int(fields[0], tool, "a message size", line_no, line),
                       iterations=to_int(fields[1], tool, "an iteration count", line_no, line),
                       bw_peak=to_float(fields[2], tool, "a peak bandwidth", line_no, line),
                       bw_average=to_float(fields[3], tool, "an average bandwidth", line_no, line),
                       msg_rate_mpps=to_float(fields[4], tool, "a message rate", line_no, line))
