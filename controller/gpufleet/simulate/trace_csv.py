"""CSV demand traces: Helios cluster sequence, node series, plain GPU series.

- ``helios``: Helios (SC'21) per-minute ``cluster_sequence`` CSV. Gang demand =
  ``running_gpu_num_noless_8 + pending_gpu_num_noless_8`` (jobs of 8 GPUs or more);
  single-node demand = the ``_less_8`` pair. Other columns are ignored.
- ``nodes``: ``time,active,total``: ``active`` nodes in use become ``active * gpus_per_node``
  GPUs of single-node demand (the series says nothing about gangs); ``total`` is checked.
- ``gpus``: ``time,gpus``: single-node demand.
Every error names the file, line and column.
"""
import csv
import dataclasses
import math

from gpufleet.simulate.errors import TraceError
from gpufleet.simulate.trace_model import MAX_GPUS, build, parse_time

__all__ = ["COLUMNS", "detect_header", "read"]

HELIOS = ("time", "running_gpu_num_noless_8", "pending_gpu_num_noless_8",
          "running_gpu_num_less_8", "pending_gpu_num_less_8")
COLUMNS = {
    "helios": HELIOS,
    "nodes": ("time", "active", "total"),
    "gpus": ("time", "gpus"),
}


def detect_header(path, header):
    names = {name.strip() for name in header.split(",")}
    if "running_gpu_num" in names and "pending_gpu_num" in names:
        return "helios"
    for fmt in ("nodes", "gpus"):
        if set(COLUMNS[fmt]) <= names:
            return fmt
    raise TraceError("%s line 1: header %r matches no trace format. Expected Helios columns (time, running_gpu_num, "
                     "pending_gpu_num and their _noless_8/_less_8 splits), time,active,total or time,gpus; or name "
                     "one with --format." % (path, header[:200]))


def _count(row, column, where):
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError("%s column %s: %r is not a number. Fix the value or drop the row." % (where, column, text)) from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise TraceError("%s column %s: %r is not a whole number >= 0. Fix the value." % (where, column, text))
    if value > MAX_GPUS:
        raise TraceError("%s column %s: %r is above the simulator's bound of %d per sample. Fix the value (or its "
                         "units)." % (where, column, text, MAX_GPUS))
    return int(value)


def _row_demand(fmt, row, where, gpus_per_node):
    if fmt == "helios":
        gang = _count(row, "running_gpu_num_noless_8", where) + _count(row, "pending_gpu_num_noless_8", where)
        small = _count(row, "running_gpu_num_less_8", where) + _count(row, "pending_gpu_num_less_8", where)
        return gang, small
    if fmt == "nodes":
        active, total = _count(row, "active", where), _count(row, "total", where)
        if active > total:
            raise TraceError("%s: active (%d) exceeds total (%d). Fix the row: nodes in use cannot exceed nodes "
                             "owned." % (where, active, total))
        return 0, active * gpus_per_node
    return 0, _count(row, "gpus", where)


def _capacity(fmt, row, where, gpus_per_node):
    """GPUs the pool owned at this row: Helios ``total_gpu_num``, ``total`` nodes; None: unknown."""
    if fmt == "helios" and "total_gpu_num" in row:
        return _count(row, "total_gpu_num", where)
    if fmt == "nodes":
        return _count(row, "total", where) * gpus_per_node
    return None


def read(path, fmt, gpus_per_node):
    rows, capacity = [], None
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = [name.strip() for name in (reader.fieldnames or [])]
            missing = [name for name in COLUMNS[fmt] if name not in header]
            if missing:
                raise TraceError("%s line 1: the %s format needs column(s) %s, the header has %s. Fix the header or "
                                 "pick another --format." % (path, fmt, ", ".join(missing), ", ".join(header) or "nothing"))
            reader.fieldnames = header
            for line, row in enumerate(reader, start=2):
                where = "%s line %d" % (path, line)
                if None in row or any(value is None for value in row.values()):
                    raise TraceError("%s: the row's field count differs from the header's %d fields. Fix the row."
                                     % (where, len(header)))
                rows.append((parse_time(row["time"], where + " column time"),) + _row_demand(fmt, row, where, gpus_per_node) + (where,))
                owned = _capacity(fmt, row, where, gpus_per_node)
                if owned is not None:
                    capacity = max(capacity or 0, owned)
    except OSError as exc:
        raise TraceError("Cannot read trace %s: %s. Check the path." % (path, exc.strerror)) from None
    except UnicodeDecodeError:
        raise TraceError("%s is not UTF-8 text. Give a CSV file, or a ledger with --format ledger." % path) from None
    except csv.Error as exc:    # a NUL byte, a field over the csv module's size limit
        raise TraceError("%s line %d: not readable as CSV (%s). Fix the row."
                         % (path, reader.reader.line_num, exc)) from None
    return dataclasses.replace(build(path, fmt, rows), capacity_gpus=capacity)
