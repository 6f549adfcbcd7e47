# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse nvbandwidth output: the text report (v0.4 and older builds) and ``-j`` JSON (v0.5+).

Text: per testcase a ``Running <name>.`` line, a description with the unit, a column
header of GPU indexes and one row per source; the diagonal of device-to-device matrices
is ``N/A`` (older builds print ``0.00``) and is not a measurement. Host tests have one
row (the CPU) and one column per GPU. JSON may follow ``WARNING:`` lines; testcases that
cannot run (one GPU, no peer access) are ``Waived`` and carry no matrix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    extract_json, field, numbered_lines, require_text, to_float)

__all__ = ["NvbTestcase", "Nvbandwidth", "parse_nvbandwidth"]

TOOL = "nvbandwidth"
_RUNNING = re.compile(r"^Running (\S+)\.\s*$")
_VERSION = re.compile(r"^nvbandwidth Version:\s*(\S+)")
_DRIVER = re.compile(r"^Driver Version:\s*(\S+)")
_UNIT = re.compile(r"\(([^()]+)\)\s*$")


@dataclasses.dataclass(frozen=True)
class NvbTestcase:
    """One testcase. ``values`` holds (label, value) pairs: ``GPU0->GPU1`` or ``GPU3`` (host tests)."""

    name: str
    status: str
    unit: str
    values: tuple
    total: object = None

    def minimum(self):
        return min(v for _l, v in self.values)


@dataclasses.dataclass(frozen=True)
class Nvbandwidth:
    version: object
    driver_version: object
    testcases: tuple

    def testcase(self, name):
        """The passed testcase ``name`` with at least one value, else ParseError with the reason."""
        for case in self.testcases:
            if case.name == name:
                if case.status != "passed" or not case.values:
                    raise ParseError(TOOL, 'measurements for testcase "%s"' % name,
                                     why="its status is %s (nvbandwidth waives device-to-device testcases "
                                         "on one GPU or without peer access)" % case.status)
                return case
        raise ParseError(TOOL, 'a testcase "%s"' % name, why="the output holds: %s" % (
            ", ".join(c.name for c in self.testcases) or "none"))


def parse_nvbandwidth(text):
    """nvbandwidth text or JSON output -> ``Nvbandwidth`` (raises ``ParseError``)."""
    require_text(text, TOOL, "nvbandwidth output")
    if any(line.lstrip().startswith("{") for line in text.split("\n")):
        return _parse_json(text)
    return _parse_text(text)


def _label(name, row, col):
    if "device_to_device" in name:
        return "GPU%s->GPU%s" % (row, col) if "write" not in name else "GPU%s<-GPU%s" % (row, col)
    return "GPU%s" % col


def _keep(name, row, col, token):
    """False for the diagonal of a device-to-device matrix (``N/A`` or a legacy ``0.00``)."""
    if token == "N/A":
        return False
    return not ("device_to_device" in name and row == col)


def _parse_json(text):
    doc = extract_json(text, TOOL, "nvbandwidth -j JSON")
    body = field(doc, "nvbandwidth", TOOL, dict, "")
    cases = []
    for index, case in enumerate(field(body, "testcases", TOOL, list, "nvbandwidth")):
        where = "nvbandwidth/testcases/%d" % index
        name = field(case, "name", TOOL, str, where)
        status = field(case, "status", TOOL, str, where).lower()
        values = []
        if status == "passed":
            matrix = field(case, "bandwidth_matrix", TOOL, list, where)
            for row, cells in enumerate(matrix):
                for col, token in enumerate(cells if isinstance(cells, list) else []):
                    if _keep(name, row, col, str(token).strip()):
                        values.append((_label(name, row, col),
                                       to_float(token, TOOL, "a number in %s/bandwidth_matrix" % where)))
        unit = _UNIT.search(str(case.get("bandwidth_description", "")).strip())
        cases.append(NvbTestcase(name=name, status=status, unit=unit.group(1) if unit else "",
                                 values=tuple(values), total=case.get("sum")))
    if not cases:
        raise ParseError(TOOL, "at least one testcase", why="nvbandwidth/testcases is empty")
    return Nvbandwidth(version=body.get("version"), driver_version=body.get("Driver Version"),
                       testcases=tuple(cases))


def _parse_text(text):
    meta = {"version": None, "driver": None}
    cases, current = [], None
    for line_no, line in numbered_lines(text):
        current = _text_line(meta, cases, current, line_no, line)
    if current is not None:
        cases.append(_finish(current))
    if not cases:
        raise ParseError(TOOL, 'a "Running <testcase>." section', why="no testcase was found")
    return Nvbandwidth(version=meta["version"], driver_version=meta["driver"], testcases=tuple(cases))


def _text_line(meta, cases, current, line_no, line):
    stripped = line.strip()
    if stripped.startswith("ERROR"):
        raise ParseError(TOOL, "a completed testcase", line_no, line, why="nvbandwidth reported an error")
    for regex, key in ((_VERSION, "version"), (_DRIVER, "driver")):
        if regex.match(stripped):
            meta[key] = regex.match(stripped).group(1)
            return current
    running = _RUNNING.match(stripped)
    if running:
        if current is not None:
            cases.append(_finish(current))
        return {"name": running.group(1), "unit": None, "columns": None, "values": [], "sum": None,
                "line": (line_no, line)}
    if current is None or not stripped:
        return current
    if stripped.startswith("SUM "):
        current["sum"] = to_float(stripped.split()[-1], TOOL, "the SUM value", line_no, line)
    elif current["unit"] is None:
        unit = _UNIT.search(stripped)
        if not unit:
            raise ParseError(TOOL, "a description ending in the unit, e.g. (GB/s)", line_no, line)
        current["unit"] = unit.group(1)
    elif current["columns"] is None:
        current["columns"] = [_index(tok, line_no, line) for tok in stripped.split()]
    else:
        _matrix_row(current, line_no, line)
    return current


def _index(token, line_no, line):
    if not token.isdigit():
        raise ParseError(TOOL, "a header of GPU indexes", line_no, line)
    return token


def _matrix_row(current, line_no, line):
    tokens = line.split()
    if len(tokens) != len(current["columns"]) + 1 or not tokens[0].isdigit():
        raise ParseError(TOOL, "a row label and %d values" % len(current["columns"]), line_no, line)
    for col, token in zip(current["columns"], tokens[1:]):
        if _keep(current["name"], tokens[0], col, token):
            value = to_float(token, TOOL, "a bandwidth value", line_no, line)
            current["values"].append((_label(current["name"], tokens[0], col), value))


def _finish(current):
    if not current["values"]:
        raise ParseError(TOOL, 'values for testcase "%s"' % current["name"], *current["line"],
                         why="the section has no matrix")
    return NvbTestcase(name=current["name"], status="passed", unit=current["unit"],
                       values=tuple(current["values"]), total=current["sum"])
