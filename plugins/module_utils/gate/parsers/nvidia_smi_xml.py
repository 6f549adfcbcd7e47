# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``nvidia-smi -q -x`` XML into the same ``GpuHealth`` records as the CSV parser.

Drivers R525 and later split volatile ECC counts into ``sram_*``/``dram_*`` elements;
older drivers nest ``single_bit``/``double_bit`` with a ``total``. Retired pages live in
``retired_pages`` (``pending_blacklist`` before R470, ``pending_retirement`` after), row
remapping in ``remapped_rows``. ``N/A`` stays ``None``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.etree import ElementTree

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import require_text
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import (
    GpuHealth, NvidiaSmiGpus, na)

__all__ = ["parse_nvidia_smi_xml"]

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
        remap_failure=_flag(gpu, "remapped_rows/remapped_row_failure"))
