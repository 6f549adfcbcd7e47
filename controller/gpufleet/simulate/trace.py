"""A demand trace: per-sample GPU demand split into gang and single-node demand.

Four formats (docs/capacity.md, "Trace formats"): ``helios`` (the Helios per-minute cluster
sequence CSV), ``nodes`` (``time,active,total``), ``gpus`` (``time,gpus``) and ``ledger``
(the controller's ``demand_history`` table). ``read_trace`` detects the format from the
file's first bytes or header unless one is named. Demand at a sample is what users wanted
then: running plus pending GPUs; it holds until the next sample.
"""
import math

from gpufleet.simulate import trace_csv, trace_ledger
from gpufleet.simulate.errors import SimulateError, TraceError
from gpufleet.simulate.trace_model import MAX_GPUS, MAX_SPAN_DAYS, MAX_TIME, Trace, iso, parse_time

__all__ = ["Trace", "FORMATS", "MAX_GPUS", "MAX_SPAN_DAYS", "MAX_TIME", "parse_time", "read_trace", "select"]

FORMATS = ("helios", "nodes", "gpus", "ledger")
SQLITE_MAGIC = b"SQLite format 3\x00"


def check_scale(scale):
    """``scale`` if it is a finite number above 0 (``--scale``); a SimulateError otherwise."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
        raise SimulateError("--scale %r: give a demand multiplier above 0 (e.g. 0.5 or 4)." % (scale,))
    return scale


def select(trace, start=None, end=None, scale=1.0):
    """The samples with start <= time < end, demand multiplied by ``scale`` (rounded up)."""
    check_scale(scale)
    keep = [i for i, when in enumerate(trace.times)
            if (start is None or when >= start) and (end is None or when < end)]
    if not keep:
        raise TraceError("%s: no samples between --from and --to (the trace covers %s to %s). Widen the window."
                         % (trace.source, iso(trace.times[0]), iso(trace.times[-1])))

    def scaled(values):
        return tuple(int(math.ceil(values[i] * scale)) if scale != 1.0 else values[i] for i in keep)

    for i in keep:
        demand = (trace.gang_gpus[i] + trace.small_gpus[i]) * scale    # a float: checked before ceil()
        if demand > MAX_GPUS:
            raise SimulateError("--scale %g: demand at %s becomes %.4g GPUs, above the simulator's bound of %d GPUs "
                                "per sample. Lower --scale." % (scale, iso(trace.times[i]), demand, MAX_GPUS))
    gang, small = scaled(trace.gang_gpus), scaled(trace.small_gpus)
    return Trace(trace.source, trace.fmt, tuple(trace.times[i] for i in keep), gang, small, trace.step,
                 trace.capacity_gpus)


def detect(path):
    """The format of ``path`` from its first bytes (SQLite) or its CSV header."""
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return "ledger"
    header = head.decode("utf-8", "replace").splitlines()[0] if head else ""
    return trace_csv.detect_header(path, header)


def read_trace(path, fmt=None, gpus_per_node=8, pool=None):
    """Read ``path`` in ``fmt`` (detected when None)."""
    try:
        chosen = fmt or detect(path)
    except OSError as exc:
        raise TraceError("Cannot read trace %s: %s. Check the path." % (path, exc.strerror)) from None
    if chosen not in FORMATS:
        raise TraceError("Unknown trace format %r. Use one of: %s." % (chosen, ", ".join(FORMATS)))
    if chosen == "ledger":
        return trace_ledger.read(path, pool)
    return trace_csv.read(path, chosen, gpus_per_node)
