# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse nccl-tests output (``all_reduce_perf`` and the other ``*_perf`` binaries).

Two table formats exist. Legacy (before nccl-tests 2.10): no ``root`` column and an
``error`` column per placement (``N/A`` with ``-c 0``, else the max error). Current: a
``root`` column and ``#wrong`` (count of wrong elements), often after a
``# nccl-tests version`` header. The footer gives out-of-bounds values and the average
bus bandwidth; the average mixes every message size, so checks read the row at the
profile's message size instead.

``nranks`` counts the ``#  Rank N ... Pid P ... device D`` lines of the run. One rank (one
process, ``-g 1``) is a valid run whose all_reduce busbw is 0 by definition
(busbw = algbw x 2(n-1)/n). A build without MPI launched under ``mpirun`` prints one
single-rank run per process, sequential or interleaved line by line (N copies of the header
and of the table): the parser recognises it from N ``# nThread 1 nGpus 1`` headers or N
rank-0 lines, and returns ``runs`` = N and ``nranks`` = 1 even when the interleaved table
cannot be read (``rows`` is then empty). The judgement names either cause.

Captures from job logs often start at the first result row, without the ``#`` header
lines. The table is then recognised from its rows: 13 columns (current) or 12 (legacy),
sizes and counts as whole numbers, times and bandwidths as numbers, a word for the data
type and the reduction. Only rows that fit neither shape, or tables whose rows disagree,
are refused. Without a header, a table ends at its footer; rows after it belong to
another run (``runs`` counts them), as with a build without MPI under ``mpirun``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import (
    numbered_lines, require_text, to_float, to_int)

__all__ = ["NcclRow", "NcclResult", "parse_nccl"]

TOOL = "nccl-tests"
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(\d+))?")
_NTHREAD = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s+(\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_FAILURE = re.compile(r"(NCCL failure|CUDA failure|Test failure|Segmentation fault)")
_DATA = re.compile(r"^\s*\d+\s+\d+\s+\S+")
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_COMPLETED = "a completed run"


@dataclasses.dataclass(frozen=True)
class NcclRow:
    """One message size. ``*_wrong`` is the #wrong count (current) or max error (legacy); None for N/A."""

    size: int
    count: int
    dtype: str
    redop: str
    root: object
    oop_time_us: float
    oop_algbw: float
    oop_busbw: float
    oop_wrong: object
    ip_time_us: float
    ip_algbw: float
    ip_busbw: float
    ip_wrong: object


@dataclasses.dataclass(frozen=True)
class NcclResult:
    table_format: str
    version: object
    nranks: int
    runs: int
    rows: tuple
    out_of_bounds: int
    out_of_bounds_ok: bool
    avg_busbw: float

    def separate_runs(self):
        """True when several processes each ran alone as rank 0 of 1 (no MPI between them)."""
        return self.runs > 1 and self.nranks == 1

    def row(self, size):
        """The row for ``size`` bytes, or ParseError saying which sizes were measured."""
        if not self.rows:
            raise ParseError(TOOL, "a result row for %d bytes" % size, why="no result row could be read")
        for row in self.rows:
            if row.size == size:
                return row
        raise ParseError(TOOL, "a result row for %d bytes" % size,
                         why="measured sizes run from %d to %d bytes; run with -b/-e covering it" % (
                             self.rows[0].size, self.rows[-1].size))

    def busbw_at(self, size):
        """Out-of-place bus bandwidth (GB/s) at ``size`` bytes: the figure nccl-tests docs compare."""
        return self.row(size).oop_busbw

    def wrong_total(self):
        """Sum of #wrong counts (current format; legacy error columns are not counts)."""
        if self.table_format != "current":
            return 0
        return int(sum((r.oop_wrong or 0) + (r.ip_wrong or 0) for r in self.rows))


def parse_nccl(text):
    """nccl-tests output -> ``NcclResult`` (raises ``ParseError``)."""
    require_text(text, TOOL, "nccl-tests output")
    processes, version = _single_rank_processes(text)
    try:
        result = _parse_table(text)
    except ParseError as exc:
        if processes < 2 or exc.expected == _COMPLETED:  # a failure nccl-tests reported stays the reason
            raise
        # Interleaved copies of one table cannot be read row by row; the cause is still known.
        return NcclResult(table_format="unknown", version=version, nranks=1, runs=processes, rows=(),
                          out_of_bounds=None, out_of_bounds_ok=False, avg_busbw=None)
    if processes > 1:
        result = dataclasses.replace(result, nranks=1, runs=max(result.runs, processes))
    return result


def _single_rank_processes(text):
    """(N, version) when N >= 2 processes each printed a single-rank header, else (0 or 1, version).

    Each nccl-tests process prints one ``# nThread T nGpus G`` line and, for a run of R
    ranks, R ``#  Rank`` lines of which one is rank 0. An MPI run prints them once; N
    processes without MPI print N headers, each with rank 0 only.
    """
    headers, ranks, rank0, version = [], set(), 0, None
    for _line_no, line in numbered_lines(text):
        match = _NTHREAD.match(line) or _RANK.match(line) or _VERSION.match(line)
        if match is None:
            continue
        if match.re is _NTHREAD:
            headers.append(int(match.group(1)) * int(match.group(2)))
        elif match.re is _RANK:
            ranks.add(int(match.group(1)))
            rank0 += match.group(1) == "0"
        else:
            version = version or match.group(1)
    single = ranks == {0} if ranks else bool(headers) and set(headers) == {1}
    return (max(len(headers), rank0) if single else 0), version


def _parse_table(text):
    state = {"format": None, "version": None, "ranks": 0, "runs": 0, "rows": [], "oob": None, "avg": None,
             "headerless": False, "tables": 0}
    for line_no, line in numbered_lines(text):
        _line(state, line_no, line)
    if state["format"] is None:
        raise ParseError(TOOL, "a result table (a column header line, or rows of 12 or 13 columns)",
                         why="no result table was found")
    if not state["rows"]:
        raise ParseError(TOOL, "at least one result row", why="the table is empty")
    if state["avg"] is None or state["oob"] is None:
        raise ParseError(TOOL, 'the footer ("# Out of bounds values" and "# Avg bus bandwidth")',
                         why="the output ends before it: the run was cut short")
    runs = state["runs"] if not state["headerless"] else max(state["runs"], state["tables"])
    return NcclResult(table_format=state["format"], version=state["version"], nranks=state["ranks"],
                      runs=runs, rows=tuple(state["rows"]), out_of_bounds=state["oob"][0],
                      out_of_bounds_ok=state["oob"][1], avg_busbw=state["avg"])


def _first_run(state):
    """Lines still belong to the first run: at most one ``# nThread`` block and one footer."""
    return state["runs"] <= 1 and state["tables"] == 0


def _line(state, line_no, line):
    if _FAILURE.search(line):
        raise ParseError(TOOL, _COMPLETED, line_no, line, why="nccl-tests reported a failure")
    match = _VERSION.match(line)
    if match:
        state["version"] = match.group(1)
    elif line.startswith("# nThread"):
        state["runs"] += 1
    elif _RANK.match(line) and state["runs"] <= 1:
        state["ranks"] += 1
    elif line.lstrip("# ").startswith("size") and "redop" in line:
        _header(state, line_no, line)
    elif _OOB.match(line):
        match = _OOB.match(line)
        if _first_run(state):
            state["oob"] = (int(match.group(1)), match.group(2) == "OK")
    elif _AVG.match(line):
        if _first_run(state):
            state["avg"] = to_float(_AVG.match(line).group(1), TOOL, "an average bus bandwidth", line_no, line)
        state["tables"] += 1
    elif _DATA.match(line):
        _data(state, line_no, line)


def _data(state, line_no, line):
    if not _first_run(state):
        if state["headerless"]:
            _shape(line_no, line)  # a later run's row must still be a result row, never ignored garbage
        return
    if state["format"] is None:
        state["format"], state["headerless"] = _shape(line_no, line), True
    row = _row(state["format"], line_no, line)
    if state["headerless"] and state["rows"] and row.size < state["rows"][-1].size:
        raise ParseError(TOOL, "one table per run, sizes growing", line_no, line,
                         why="the size falls from %d to %d bytes without a footer in between: rows of several "
                             "runs are interleaved, so no row can be trusted to belong to one run" % (
                                 state["rows"][-1].size, row.size))
    state["rows"].append(row)


def _shape(line_no, line):
    """The table format of a header-less row: 13 columns = current, 12 = legacy; else refuse."""
    fields = line.split()
    fmt = {13: "current", 12: "legacy"}.get(len(fields))
    if fmt is None:
        raise ParseError(TOOL, "a result row of 13 columns (current format) or 12 (legacy, before nccl-tests 2.10)",
                         line_no, line, why="found %d columns and no header line says which table this is" % (
                             len(fields)))
    if not (_WORD.match(fields[2]) and _WORD.match(fields[3])):
        raise ParseError(TOOL, "a data type and a reduction name in columns 3 and 4", line_no, line,
                         why="found %r and %r" % (fields[2], fields[3]))
    return fmt


def _header(state, line_no, line):
    columns = line.lstrip("# ").split()
    if "#wrong" in columns and "root" in columns:
        fmt = "current"
    elif "error" in columns and "root" not in columns:
        fmt = "legacy"
    else:
        raise ParseError(TOOL, 'a header with "root" and "#wrong" (current) or "error" (legacy)', line_no, line)
    if state["format"] not in (None, fmt):
        raise ParseError(TOOL, "one table format per output", line_no, line, why="the format changed mid-output")
    state["format"] = fmt


def _row(fmt, line_no, line):
    fields = line.split()
    want = 13 if fmt == "current" else 12
    if len(fields) != want:
        raise ParseError(TOOL, "%d columns in a %s-format row" % (want, fmt), line_no, line,
                         why="found %d" % len(fields))
    root = None
    if fmt == "current":
        root = to_int(fields.pop(4), TOOL, "a root rank", line_no, line)
    num = [to_float(f, TOOL, "a number", line_no, line) for f in (fields[4:7] + fields[8:11])]
    return NcclRow(size=to_int(fields[0], TOOL, "a size in bytes", line_no, line),
                   count=to_int(fields[1], TOOL, "an element count", line_no, line),
                   dtype=fields[2], redop=fields[3], root=root,
                   oop_time_us=num[0], oop_algbw=num[1], oop_busbw=num[2],
                   oop_wrong=_wrong(fmt, fields[7], line_no, line),
                   ip_time_us=num[3], ip_algbw=num[4], ip_busbw=num[5],
                   ip_wrong=_wrong(fmt, fields[11], line_no, line))


def _wrong(fmt, token, line_no, line):
    if token == "N/A":
        return None
    if fmt == "current":
        return to_int(token, TOOL, "a #wrong count", line_no, line)
    return to_float(token, TOOL, "an error value", line_no, line)
