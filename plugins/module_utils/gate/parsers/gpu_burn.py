# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse gpu-burn output: the ``Tested N GPUs:`` summary with one ``GPU n: OK|FAULTY`` per GPU.

gpu-burn's exit code is not a verdict (many builds exit 0 with a FAULTY GPU), so only the
summary counts; an output without it (killed, crashed, no CUDA device) is a parse failure.
Progress lines (``NN.N%  proc'd: ... errors: ... temps: ...``) are often glued together
without newlines; the last one gives per-GPU error counts and Gflop/s.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text)

__all__ = ["GpuBurn", "parse_gpu_burn"]

TOOL = "gpu-burn"
_TESTED = re.compile(r"^Tested (\d+) GPUs?:\s*$")
_VERDICT = re.compile(r"^GPU (\d+): (\S+)\s*$")
_DEVICE = re.compile(r"^GPU (\d+): (.+?) \(UUID: ")
_PROGRESS = re.compile(r"proc'd: (?P<procd>.+?)\s+errors: (?P<errors>.+?)\s+temps: ")
_GFLOPS = re.compile(r"\((\d+(?:\.\d+)?) Gflop/s\)")
_FATAL = ("No CUDA devices", "Couldn't init a GPU test", "Failure during compute", "CUDA error")


@dataclasses.dataclass(frozen=True)
class GpuBurn:
    """``verdicts``: (GPU index, "OK"|"FAULTY"); ``errors``/``gflops``: last progress, per GPU in order."""

    tested: int
    verdicts: tuple
    devices: tuple = ()
    errors: tuple = ()
    gflops: tuple = ()

    def ok_count(self):
        return sum(1 for _gpu, verdict in self.verdicts if verdict == "OK")

    def faulty(self):
        return tuple(gpu for gpu, verdict in self.verdicts if verdict != "OK")


def parse_gpu_burn(text):
    """gpu-burn output -> ``GpuBurn`` (raises ``ParseError``)."""
    require_text(text, TOOL, "gpu-burn output")
    lines = numbered_lines(text)
    tested_at = None
    for line_no, line in lines:
        if any(marker in line for marker in _FATAL):
            raise ParseError(TOOL, "a completed burn", line_no, line, why="gpu-burn reported a fatal error")
        if _TESTED.match(line.strip()):
            tested_at = line_no
    if tested_at is None:
        raise ParseError(TOOL, 'the "Tested N GPUs:" summary',
                         why="the output has none: gpu-burn was killed or crashed before the end")
    tested = int(_TESTED.match(lines[tested_at - 1][1].strip()).group(1))
    verdicts = _verdicts(lines[tested_at:], tested)
    devices = tuple((int(m.group(1)), m.group(2)) for m in (_DEVICE.match(l) for _n, l in lines[:tested_at]) if m)
    errors, gflops = _last_progress(text)
    return GpuBurn(tested=tested, verdicts=verdicts, devices=devices, errors=errors, gflops=gflops)


def _verdicts(lines, tested):
    verdicts = []
    for line_no, line in lines:
        match = _VERDICT.match(line.strip())
        if not match:
            if line.strip():
                raise ParseError(TOOL, '"GPU n: OK" or "GPU n: FAULTY"', line_no, line)
            continue
        if match.group(2) not in ("OK", "FAULTY"):
            raise ParseError(TOOL, "OK or FAULTY for GPU %s" % match.group(1), line_no, line)
        verdicts.append((int(match.group(1)), match.group(2)))
    if len(verdicts) != tested or tested == 0:
        raise ParseError(TOOL, "one verdict per tested GPU (%d)" % tested,
                         why="found %d verdict line(s): the output is truncated" % len(verdicts))
    return tuple(verdicts)


def _last_progress(text):
    matches = list(_PROGRESS.finditer(text))
    if not matches:
        return (), ()
    last = matches[-1]
    errors = tuple(int(tok) for tok in re.findall(r"\d+", last.group("errors")))
    gflops = tuple(float(g) for g in _GFLOPS.findall(last.group("procd")))
    return errors, gflops
