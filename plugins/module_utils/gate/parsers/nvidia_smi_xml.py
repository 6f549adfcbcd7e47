# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``nvidia-smi -q -x`` XML into the same ``GpuHealth`` records as the CSV parser.

Drivers R525 and later split volatile ECC counts into ``sram_*``/``dram_*`` elements;
older drivers nest ``single_bit``/``double_bit`` with a ``total``. Retired pages live in
``retired_pages`` (``pending_blacklist`` before R470, ``pending_retirement`` after), row
remapping in ``remapped_rows``. Clock-event reasons are ``clocks_event_reasons`` (R535-class
and later) or ``clocks_throttle_reasons``; newer drivers add ``clocks_event_reasons_counters``
(microseconds). ``N/A`` stays ``None``.

``parse_nvidia_smi_any`` picks the XML, ``-q`` text or CSV parser by content.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.etree import ElementTree

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import require_text
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import (
    GpuHealth, NvidiaSmiGpus, active_flag, clock_mhz, counter_us, na, parse_nvidia_smi_csv, parse_nvidia_smi_q,
    reason_pairs)

__all__ = ["parse_nvidia_smi_xml", "parse_nvidia_smi_any"]

TOOL = "nvidia-smi -q -x"


def parse_nvidia_smi_xml(text):
    """``nvidia-smi -q -x`` output -> ``NvidiaSmiGpus`` (raises ``ParseError``)."""
    require_text(text, TOOL, "nvidia-smi XML")
    start = text.find("<?xml")
    start = text.find("<nvidia_smi_log") if start < 0 else start
    if start < 0:
        raise ParseError(TOOL, "an <nvidia_smi_log> document", 1, text.split("\n")[0])
    try:
        root = ElementTree.fromstring(text[start:].encode("utf-8"))
    except ElementTree.ParseError as exc:
        line = exc.position[0] + text[:start].count("\n") if hasattr(exc, "position") else None
        raise ParseError(TOOL, "well-formed XML", line, why=str(exc))
    if root.tag != "nvidia_smi_log":
        raise ParseError(TOOL, "the root element <nvidia_smi_log>", why="found <%s>" % root.tag)
    gpus = tuple(_gpu(index, node) for index, node in enumerate(root.findall("gpu")))
    attached = _int(root, "attached_gpus", "the attached GPU count")
    if attached is None or attached != len(gpus):
        raise ParseError(TOOL, "one <gpu> element per attached GPU",
                         why="attached_gpus is %s but %d <gpu> elements were found" % (attached, len(gpus)))
    return NvidiaSmiGpus(driver_version=_text(root, "driver_version"), gpus=gpus)


def _text(node, path):
    found = node.find(path)
    if found is None or found.text is None or na(found.text):
        return None
    return found.text.strip()


def _int(node, path, what):
    value = _text(node, path)
    if value is None:
        return None
    try:
        return int(value.split()[0])
    except ValueError:
        raise ParseError(TOOL, "%s as a whole number in <%s>" % (what, path), why="found %r" % value)


def _flag(node, *paths):
    for path in paths:
        value = _text(node, path)
        if value is not None:
            if value.lower() not in ("yes", "no"):
                raise ParseError(TOOL, "Yes or No in <%s>" % path, why="found %r" % value)
            return value.lower() == "yes"
    return None


def _volatile_uncorrected(gpu):
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    legacy = _int(volatile, "double_bit/total", "a volatile double-bit count")
    if volatile.find("double_bit") is not None:
        return legacy
    counts = [_int(volatile, child.tag, "a volatile ECC count") for child in volatile
              if "uncorrectable" in child.tag]
    counts = [c for c in counts if c is not None]
    return sum(counts) if counts else None


# Element names -> CLOCK_REASONS names where they differ (XML says "clocks", "therm", "power_brake").
_XML_REASONS = {"display_clocks_setting": "display_clock_setting"}
_XML_COUNTERS = {"sw_therm_slowdown": "sw_thermal_slowdown", "hw_therm_slowdown": "hw_thermal_slowdown",
                 "hw_power_brake": "hw_power_brake_slowdown"}


def _children(gpu, section, prefix, names, convert):
    """{reason: value} of ``<section><prefix><name>`` children; None when the section is absent."""
    node = gpu.find(section)
    if node is None:
        return None
    found = {}
    for child in node:
        if child.tag.startswith(prefix) and child.text is not None:
            name = child.tag[len(prefix):]
            found[names.get(name, name)] = convert(child.text, None, "<%s>%s</%s>" % (child.tag, child.text, child.tag))
    return found


def _clock_fields(gpu):
    reasons = _children(gpu, "clocks_event_reasons", "clocks_event_reason_", _XML_REASONS, active_flag)
    if reasons is None:
        reasons = _children(gpu, "clocks_throttle_reasons", "clocks_throttle_reason_", _XML_REASONS, active_flag)
    counters = _children(gpu, "clocks_event_reasons_counters", "clocks_event_reasons_counters_", _XML_COUNTERS,
                         counter_us)
    return {"clock_reasons": reason_pairs(reasons) if reasons else None,
            "clock_counters": reason_pairs(counters, skip_none=True) if counters else None,
            "sm_clock_mhz": _mhz_at(gpu, "clocks/sm_clock"), "sm_clock_max_mhz": _mhz_at(gpu, "max_clocks/sm_clock"),
            "fabric_state": _text(gpu, "fabric/state"), "fabric_status": _text(gpu, "fabric/status")}


def _mhz_at(gpu, path):
    value = _text(gpu, path)
    return None if value is None else clock_mhz(value, None, "<%s>%s" % (path, value))


def _volatile_corrected(gpu):
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    if volatile.find("single_bit") is not None:
        return _int(volatile, "single_bit/total", "a volatile single-bit count")
    counts = [_int(volatile, child.tag, "a volatile ECC count") for child in volatile
              if child.tag.endswith("_correctable")]
    counts = [c for c in counts if c is not None]
    return sum(counts) if counts else None


def parse_nvidia_smi_any(text):
    """nvidia-smi output in whichever form was saved: ``-q -x`` XML, ``-q`` text or ``--query-gpu`` CSV.

    The gate runs the CSV query and ``-q`` text; offline re-judging (``gpufleet gate evaluate``)
    also reads the XML and text reports sites capture for their records.
    """
    head = text.lstrip()[:4096] if isinstance(text, str) else ""
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        return parse_nvidia_smi_xml(text)
    if "NVSMI LOG" in head or re.search(r"(?m)^\s*Attached GPUs\s*:", head):
        return parse_nvidia_smi_q(text)
    return parse_nvidia_smi_csv(text)


def _gpu(index, gpu):
    return GpuHealth(
        index=index, name=_text(gpu, "product_name"), bus_id=gpu.get("id"),
        ecc_uncorrected_volatile=_volatile_uncorrected(gpu),
        retired_sbe=_int(gpu, "retired_pages/multiple_single_bit_retirement/retired_count", "a retired page count"),
        retired_dbe=_int(gpu, "retired_pages/double_bit_retirement/retired_count", "a retired page count"),
        retired_pending=_flag(gpu, "retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
        remap_correctable=_int(gpu, "remapped_rows/remapped_row_corr", "a remapped row count"),
        remap_uncorrectable=_int(gpu, "remapped_rows/remapped_row_unc", "a remapped row count"),
        remap_pending=_flag(gpu, "remapped_rows/remapped_row_pending"),
        remap_failure=_flag(gpu, "remapped_rows/remapped_row_failure"),
        ecc_corrected_volatile=_volatile_corrected(gpu), **_clock_fields(gpu))
