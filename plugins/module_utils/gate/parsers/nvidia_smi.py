# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``nvidia-smi --query-gpu=... --format=csv`` and the ``nvidia-smi -q`` text report.

Both give one ``GpuHealth`` per GPU: identity plus the memory-error counters the gate
judges (volatile uncorrectable ECC, retired pages, row remapping). ``None`` means the
GPU does not report that counter (``[N/A]``, ``[Not Supported]``: page retirement on
A100 and later, row remapping before A100) and is never read as zero.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import NotReported, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text, to_int)

__all__ = ["GpuHealth", "NvidiaSmiGpus", "parse_nvidia_smi_csv", "parse_nvidia_smi_q", "na"]

TOOL = "nvidia-smi"
_NA = ("n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "")
_FATAL = ("NVIDIA-SMI has failed", "couldn't communicate with the NVIDIA driver", "is not a valid field",
          "Unable to determine the device handle", "GPU is lost")
# CSV field -> GpuHealth attribute (counters) ; retirement/remap "pending"/"failure" are Yes/No flags.
_CSV_COUNTERS = {
    "ecc.errors.uncorrected.volatile.total": "ecc_uncorrected_volatile",
    "ecc.errors.corrected.volatile.total": "ecc_corrected_volatile",
    "ecc.errors.uncorrected.aggregate.total": "ecc_uncorrected_aggregate",
    "retired_pages.sbe": "retired_sbe", "retired_pages.single_bit_ecc.count": "retired_sbe",
    "retired_pages.dbe": "retired_dbe", "retired_pages.double_bit.count": "retired_dbe",
    "remapped_rows.correctable": "remap_correctable", "remapped_rows.uncorrectable": "remap_uncorrectable",
}
_CSV_FLAGS = {"retired_pages.pending": "retired_pending", "remapped_rows.pending": "remap_pending",
              "remapped_rows.failure": "remap_failure"}
# GpuHealth attribute -> the nvidia-smi field name a user queries (first spelling wins).
_FIELD_OF = dict(reversed([(attr, name) for name, attr in list(_CSV_COUNTERS.items()) + list(_CSV_FLAGS.items())]))


@dataclasses.dataclass(frozen=True)
class GpuHealth:
    index: int
    name: object = None
    bus_id: object = None
    ecc_uncorrected_volatile: object = None
    ecc_corrected_volatile: object = None
    ecc_uncorrected_aggregate: object = None
    retired_sbe: object = None
    retired_dbe: object = None
    retired_pending: object = None
    remap_correctable: object = None
    remap_uncorrectable: object = None
    remap_pending: object = None
    remap_failure: object = None


@dataclasses.dataclass(frozen=True)
class NvidiaSmiGpus:
    driver_version: object
    gpus: tuple
    fields: tuple = ()

    def count(self):
        return len(self.gpus)

    def names(self):
        return tuple((g.index, g.name) for g in self.gpus)

    def per_gpu(self, attribute):
        """(``GPU<n>``, value) pairs of ``attribute``; ``NotReported`` when a GPU reports N/A."""
        values = tuple(("GPU%d" % g.index, getattr(g, attribute)) for g in self.gpus)
        if not values or any(v is None for _l, v in values):
            missing = [label for label, v in values if v is None]
            field = _FIELD_OF.get(attribute, attribute)
            hint = ("Query the field, or if MIG is enabled on these GPUs run the gate with MIG disabled "
                    "(nvidia-smi -mig 0) or waive the check with skip_checks")
            raise NotReported(TOOL, field, missing, hint)
        return values


def na(token):
    return token.strip().lower() in _NA


def _flag(token, line_no=None, line=None):
    token = token.strip()
    if na(token):
        return None
    if token.lower() not in ("yes", "no"):
        raise ParseError(TOOL, "Yes or No", line_no, line, why="found %r" % token)
    return token.lower() == "yes"


def _count(token, line_no=None, line=None):
    token = token.strip()
    return None if na(token) else to_int(token.split()[0], TOOL, "a counter", line_no, line)


def _fatal(lines):
    for line_no, line in lines:
        if any(marker in line for marker in _FATAL):
            raise ParseError(TOOL, "GPU information", line_no, line, why="nvidia-smi reported an error")


def parse_nvidia_smi_csv(text):
    """``--query-gpu=<fields> --format=csv`` (with header; units allowed) -> ``NvidiaSmiGpus``."""
    require_text(text, TOOL, "nvidia-smi CSV output")
    lines = [(n, l) for n, l in numbered_lines(text) if l.strip()]
    _fatal(lines)
    if lines[0][1].strip() == "No devices were found":
        return NvidiaSmiGpus(driver_version=None, gpus=())
    fields = tuple(re.sub(r"\s*\[[^\]]*\]$", "", f.strip()) for f in lines[0][1].split(","))
    if "index" not in fields:
        raise ParseError(TOOL, 'a CSV header naming the "index" field', lines[0][0], lines[0][1],
                         why="query with --format=csv (not noheader) and include index")
    gpus, driver = [], None
    for line_no, line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            raise ParseError(TOOL, "%d CSV columns" % len(fields), line_no, line, why="found %d" % len(cells))
        row = dict(zip(fields, cells))
        driver = row.get("driver_version", driver)
        gpus.append(_csv_gpu(row, line_no, line))
    return NvidiaSmiGpus(driver_version=driver, gpus=tuple(gpus), fields=fields)


def _csv_gpu(row, line_no, line):
    values = {"index": to_int(row["index"], TOOL, "a GPU index", line_no, line),
              "name": row.get("name"), "bus_id": row.get("pci.bus_id")}
    for field, attr in _CSV_COUNTERS.items():
        if field in row:
            values[attr] = _count(row[field], line_no, line)
    for field, attr in _CSV_FLAGS.items():
        if field in row:
            values[attr] = _flag(row[field], line_no, line)
    return GpuHealth(**values)


_Q_KEYS = {
    ("Retired Pages", "Single Bit ECC"): ("retired_sbe", _count),
    ("Retired Pages", "Double Bit ECC"): ("retired_dbe", _count),
    ("Retired Pages", "Pending Page Blacklist"): ("retired_pending", _flag),
    ("Retired Pages", "Pending Page Retirement"): ("retired_pending", _flag),
    ("Remapped Rows", "Correctable Error"): ("remap_correctable", _count),
    ("Remapped Rows", "Uncorrectable Error"): ("remap_uncorrectable", _count),
    ("Remapped Rows", "Pending"): ("remap_pending", _flag),
    ("Remapped Rows", "Remapping Failure Occurred"): ("remap_failure", _flag),
}


def _add(gpu, attribute, value):
    """Sum the SRAM and DRAM uncorrectable counters (R525+ drivers split them)."""
    if value is not None:
        gpu[attribute] = gpu.get(attribute, 0) + value


def parse_nvidia_smi_q(text):
    """``nvidia-smi -q`` text (e.g. ``-d PAGE_RETIREMENT,ROW_REMAPPER``) -> ``NvidiaSmiGpus``."""
    require_text(text, TOOL, "nvidia-smi -q output")
    lines = numbered_lines(text)
    _fatal(lines)
    driver, attached, gpus, current, section = None, None, [], None, None
    for line_no, line in lines:
        stripped = line.strip()
        key, _sep, value = (part.strip() for part in stripped.partition(":"))
        if stripped.startswith("Driver Version") and _sep:
            driver = value
        elif stripped.startswith("Attached GPUs") and _sep:
            attached = to_int(value, TOOL, "the number of attached GPUs", line_no, line)
        elif re.match(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d$", stripped):
            current = {"index": len(gpus), "bus_id": stripped.split()[1]}
            gpus.append(current)
        elif current is not None and not _sep:
            section = stripped
        elif current is not None and (section, key) in _Q_KEYS:
            attr, convert = _Q_KEYS[(section, key)]
            current[attr] = convert(value, line_no, line)
        elif current is not None and key == "Product Name":
            current["name"] = value
        elif current is not None and section == "Volatile" and "Uncorrectable" in key:
            _add(current, "ecc_uncorrected_volatile", _count(value, line_no, line))
    if attached is None or attached != len(gpus):
        raise ParseError(TOOL, '"Attached GPUs" and one "GPU <bus id>" section per GPU',
                         why="found %s attached and %d section(s)" % (attached, len(gpus)))
    return NvidiaSmiGpus(driver_version=driver, gpus=tuple(GpuHealth(**g) for g in gpus))
