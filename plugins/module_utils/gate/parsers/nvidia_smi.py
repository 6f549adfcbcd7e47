# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``nvidia-smi --query-gpu=... --format=csv`` and the ``nvidia-smi -q`` text report.

Both give one ``GpuHealth`` per GPU: identity plus the memory-error counters the gate
judges (volatile ECC, retired pages, row remapping), the clock-event reasons and SM
clocks, and in ``-q`` text the cumulative clock-event counters and the NVSwitch fabric
state. ``None`` means the GPU does not report that value (``[N/A]``, ``[Not Supported]``:
page retirement on A100 and later, row remapping before A100, the counters before the
575 driver series) and is never read as zero.

Drivers R535 and later say "clocks event reasons" (``clocks_event_reasons.*``, "Clocks
Event Reasons"); older ones say "clocks throttle reasons". Both spellings name the same
NVML reasons and are read alike.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import NotReported, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text, to_int)

__all__ = ["GpuHealth", "NvidiaSmiGpus", "parse_nvidia_smi_csv", "parse_nvidia_smi_q", "na", "CLOCK_REASONS",
           "active_flag", "clock_mhz", "counter_us", "reason_pairs"]

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
# NVML clock-event reasons (nvmlClocksEventReasons, formerly nvmlClocksThrottleReasons): the
# name in --query-gpu fields -> bit in ``clocks_event_reasons.active``.
CLOCK_REASONS = (("gpu_idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
                 ("hw_slowdown", 0x8), ("sync_boost", 0x10), ("sw_thermal_slowdown", 0x20),
                 ("hw_thermal_slowdown", 0x40), ("hw_power_brake_slowdown", 0x80), ("display_clock_setting", 0x100))
_REASON_NAMES = dict(CLOCK_REASONS)
_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")
_SM_CLOCK_FIELDS = {"clocks.sm": "sm_clock_mhz", "clocks.current.sm": "sm_clock_mhz", "clocks.max.sm": "sm_clock_max_mhz",
                    "clocks.max.sm_clock": "sm_clock_max_mhz"}
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
    clock_reasons: object = None    # ((reason, active), ...) in CLOCK_REASONS order
    clock_counters: object = None   # ((reason, microseconds since driver load), ...)
    sm_clock_mhz: object = None
    sm_clock_max_mhz: object = None
    fabric_state: object = None     # -q "Fabric": "Completed", "In Progress", "Not Started"; None for N/A
    fabric_status: object = None    # "Success" or the failure nvidia-smi names


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


def active_flag(token, line_no=None, line=None):
    """A clock-event reason's ``Active`` / ``Not Active`` (None for N/A)."""
    token = token.strip()
    if na(token):
        return None
    if token not in ("Active", "Not Active"):
        raise ParseError(TOOL, '"Active" or "Not Active"', line_no, line, why="found %r" % token)
    return token == "Active"


def _number(token, unit, expected, line_no=None, line=None, unit_optional=False):
    """A whole number followed by ``unit`` (``1410 MHz``, ``0 us``); None for N/A or Not Found."""
    token = token.strip()
    if na(token) or token.lower() == "not found":
        return None
    if not re.match(r"^\d+( %s)%s$" % (unit, "?" if unit_optional else ""), token):
        raise ParseError(TOOL, expected, line_no, line, why="found %r" % token)
    return int(token.split()[0])


def clock_mhz(token, line_no=None, line=None):
    return _number(token, "MHz", "a clock in MHz", line_no, line, unit_optional=True)


def counter_us(token, line_no=None, line=None):
    return _number(token, "us", 'a counter in microseconds ("<n> us")', line_no, line)


def _reason_mask(token, line_no=None, line=None):
    """``clocks_event_reasons.active`` (``0x0000000000000004``) -> the reasons whose bit is set."""
    token = token.strip()
    if na(token):
        return None
    try:
        mask = int(token, 16)
    except ValueError:
        raise ParseError(TOOL, "a hexadecimal reason mask such as 0x0000000000000004", line_no, line,
                         why="found %r" % token)
    return tuple((name, bool(mask & bit)) for name, bit in CLOCK_REASONS)


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
    for field, attr in _SM_CLOCK_FIELDS.items():
        if field in row:
            values[attr] = clock_mhz(row[field], line_no, line)
    reasons = _csv_reasons(row, line_no, line)
    if reasons is not None:
        values["clock_reasons"] = reasons
    return GpuHealth(**values)


def _csv_reasons(row, line_no, line):
    """Clock-event reasons from ``*.active`` (a mask) or the per-reason Active/Not Active fields."""
    for prefix in _REASON_PREFIXES:
        if prefix + "active" in row:
            return _reason_mask(row[prefix + "active"], line_no, line)
    found = {}
    for field, value in row.items():
        for prefix in _REASON_PREFIXES:
            name = field[len(prefix):] if field.startswith(prefix) else None
            if name in _REASON_NAMES:
                found[name] = active_flag(value, line_no, line)
    return reason_pairs(found)


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


# -q labels of the clock-event reasons and their counters (both driver generations' section names).
_Q_REASON_SECTIONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")
_Q_COUNTER_SECTIONS = ("Clocks Event Reasons Counters", "Clocks Throttle Reasons Counters")
_Q_REASONS = {"Idle": "gpu_idle", "Applications Clocks Setting": "applications_clocks_setting",
              "SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown", "HW Thermal Slowdown": "hw_thermal_slowdown",
              "HW Power Brake Slowdown": "hw_power_brake_slowdown", "Sync Boost": "sync_boost",
              "SW Thermal Slowdown": "sw_thermal_slowdown", "Display Clock Setting": "display_clock_setting"}
_Q_COUNTERS = {"SW Power Capping": "sw_power_cap", "Sync Boost": "sync_boost",
               "SW Thermal Slowdown": "sw_thermal_slowdown", "HW Thermal Slowdown": "hw_thermal_slowdown",
               "HW Power Braking": "hw_power_brake_slowdown", "HW Slowdown": "hw_slowdown"}
_Q_SCALARS = {("Clocks", "SM"): ("sm_clock_mhz", clock_mhz), ("Max Clocks", "SM"): ("sm_clock_max_mhz", clock_mhz),
              ("Fabric", "State"): ("fabric_state", lambda v, n, l: None if na(v) else v.strip()),
              ("Fabric", "Status"): ("fabric_status", lambda v, n, l: None if na(v) else v.strip())}


def _q_clock_line(gpu, section, key, value, line_no, line):
    """Read a line of the reasons or counters sections into ``gpu``; False when it is neither."""
    if section in _Q_REASON_SECTIONS and key in _Q_REASONS:
        gpu.setdefault("_reasons", {})[_Q_REASONS[key]] = active_flag(value, line_no, line)
    elif section in _Q_COUNTER_SECTIONS and key in _Q_COUNTERS:
        gpu.setdefault("_counters", {})[_Q_COUNTERS[key]] = counter_us(value, line_no, line)
    elif (section, key) in _Q_SCALARS:
        attr, convert = _Q_SCALARS[(section, key)]
        gpu[attr] = convert(value, line_no, line)
    else:
        return False
    return True


def reason_pairs(found, skip_none=False):
    """{reason: value} -> ((reason, value), ...) in CLOCK_REASONS order; None when nothing was found."""
    pairs = tuple((n, found[n]) for n, _b in CLOCK_REASONS if n in found and not (skip_none and found[n] is None))
    return pairs or None


def _q_gpu(gpu):
    """A ``GpuHealth`` from the accumulated -q fields (reasons and counters as ordered pairs)."""
    reasons, counters = gpu.pop("_reasons", None), gpu.pop("_counters", None)
    if reasons is not None:
        gpu["clock_reasons"] = reason_pairs(reasons)
    if counters is not None:
        gpu["clock_counters"] = reason_pairs(counters, skip_none=True)
    return GpuHealth(**gpu)


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
        elif current is not None and section == "Volatile" and "Correctable" in key:
            _add(current, "ecc_corrected_volatile", _count(value, line_no, line))
        elif current is not None:
            _q_clock_line(current, section, key, value, line_no, line)
    if attached is None or attached != len(gpus):
        raise ParseError(TOOL, '"Attached GPUs" and one "GPU <bus id>" section per GPU',
                         why="found %s attached and %d section(s)" % (attached, len(gpus)))
    return NvidiaSmiGpus(driver_version=driver, gpus=tuple(_q_gpu(g) for g in gpus))
