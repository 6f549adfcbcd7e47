# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``fio --output-format=json`` (fio 3.x): per-job read/write bandwidth and IOPS.

Bandwidth comes from ``bw_bytes`` (bytes/s; older 3.x builds only have ``bw`` in KiB/s)
and is reported in MB/s (10^6 bytes/s); jobs are summed, so ``numjobs`` with or without
``group_reporting`` gives the node's total. A job with a non-zero ``error`` fails closed;
``fio:`` warning lines before the JSON are skipped.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import numbers

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import extract_json, field

__all__ = ["FioDirection", "FioJob", "FioResult", "parse_fio"]

TOOL = "fio"
_NUMBER = (int, float)


@dataclasses.dataclass(frozen=True)
class FioDirection:
    bw_bytes: float
    iops: float
    io_bytes: int


@dataclasses.dataclass(frozen=True)
class FioJob:
    name: str
    rw: object
    read: FioDirection
    write: FioDirection


@dataclasses.dataclass(frozen=True)
class FioResult:
    version: object
    jobs: tuple

    def _total(self, direction, attribute):
        parts = [getattr(job, direction) for job in self.jobs]
        if not any(p.io_bytes for p in parts):
            raise ParseError(TOOL, "%s I/O in the job(s)" % direction,
                             why="no job did any %ss (rw=%s)" % (direction, ", ".join(str(j.rw) for j in self.jobs)))
        return sum(getattr(p, attribute) for p in parts)

    def bandwidth_mbs(self, direction):
        """Total bandwidth in MB/s (10^6 bytes/s) for ``read`` or ``write``."""
        return self._total(direction, "bw_bytes") / 1e6

    def iops(self, direction):
        return self._total(direction, "iops")


def parse_fio(text):
    """fio JSON output -> ``FioResult`` (raises ``ParseError``)."""
    doc = extract_json(text, TOOL, "fio --output-format=json")
    jobs = field(doc, "jobs", TOOL, list, "")
    if not jobs:
        raise ParseError(TOOL, "at least one job", why="the jobs list is empty")
    return FioResult(version=doc.get("fio version"), jobs=tuple(_job(job, i) for i, job in enumerate(jobs)))


def _job(job, index):
    where = "jobs/%d" % index
    name = field(job, "jobname", TOOL, str, where)
    error = field(job, "error", TOOL, int, where)
    if error:
        raise ParseError(TOOL, 'job "%s" to finish without error' % name,
                         why="fio reported error %d (an errno: 28 is no space left, 5 an I/O error)" % error)
    options = job.get("job options") if isinstance(job.get("job options"), dict) else {}
    return FioJob(name=name, rw=options.get("rw"), read=_direction(job, "read", where),
                  write=_direction(job, "write", where))


def _direction(job, key, where):
    stats = field(job, key, TOOL, dict, where)
    here = "%s/%s" % (where, key)
    if "bw_bytes" in stats:
        bw_bytes = field(stats, "bw_bytes", TOOL, _NUMBER, here)
    else:
        bw_bytes = field(stats, "bw", TOOL, _NUMBER, here) * 1024.0  # KiB/s before fio 3.x added bw_bytes
    iops = field(stats, "iops", TOOL, _NUMBER, here)
    io_bytes = field(stats, "io_bytes", TOOL, numbers.Integral, here)
    return FioDirection(bw_bytes=float(bw_bytes), iops=float(iops), io_bytes=int(io_bytes))
