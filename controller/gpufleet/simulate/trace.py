"""A demand trace: per-sample GPU demand split into gang and single-node demand.

Four formats (docs/capacity.md, "Trace formats"): ``helios`` (the Helios per-minute cluster
sequence CSV), ``nodes`` (``time,active,total``), ``gpus`` (``time,gpus``) and ``ledger``
(the controller's ``demand_history`` table). ``read_trace`` detects the format from the
file's first bytes or header unless one is named. Demand at a sample is what users wanted
then: running plus pending GPUs; it holds until the next sample.
"""
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional, Tuple

from gpufleet.simulate.errors import SimulateError, TraceError

__all__ = ["Trace", "FORMATS", "MAX_GPUS", "MAX_SPAN_DAYS", "MAX_TIME", "parse_time", "read_trace", "select"]

FORMATS = ("helios", "nodes", "gpus", "ledger")
SQLITE_MAGIC = b"SQLite format 3\x00"

# Bounds far beyond any real trace (the Helios month: 44,640 samples, at most a few hundred
# GPUs) that keep a run finite: a time of 1e300 replays for ever, a demand of 1e20 GPUs needs
# 1e19 jobs in memory. docs/capacity.md ("Trace formats") states them.
MAX_TIME = 253402300799.0          # 9999-12-31 23:59:59 UTC; times start at 0 (1970-01-01)
MAX_SPAN_DAYS = 3653               # ten years from the first sample to the last
MAX_GPUS = 1000000                 # demand per sample, after --scale
TIME_RANGE = "between 1970-01-01 and 9999-12-31 UTC (epoch seconds 0 to %d)" % MAX_TIME


@dataclass(frozen=True)
class Trace:
    source: str
    fmt: str
    times: Tuple[float, ...]        # epoch seconds, strictly increasing
    gang_gpus: Tuple[int, ...]      # demand of jobs of >= 8 GPUs: served all at once or not
    small_gpus: Tuple[int, ...]     # demand of smaller jobs
    step: float                     # the most common interval between samples, seconds
    capacity_gpus: Optional[int] = None   # the most GPUs the trace says the pool owned (None: unknown)

    def __len__(self):
        return len(self.times)


def parse_time(text, where, fix="Fix the time column."):
    """Epoch seconds from epoch digits or ISO 8601 (no zone = UTC); TraceError naming ``where``."""
    value = text.strip()
    try:
        when = float(value)
    except ValueError:
        when = _iso_seconds(value, where, fix)
    return check_time(when, value, where, fix)


def _iso_seconds(value, where, fix):
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp()
    except (ValueError, OverflowError):
        raise TraceError("%s: time %r is neither epoch seconds nor ISO 8601 (e.g. 2020-05-01 00:00:00). %s"
                         % (where, value, fix)) from None


def check_time(when, shown, where, fix="Fix the time column."):
    """``when`` if it is a finite time in TIME_RANGE; a TraceError naming ``where`` otherwise."""
    if isinstance(when, bool) or not (isinstance(when, (int, float)) and math.isfinite(when) and 0 <= when <= MAX_TIME):
        raise TraceError("%s: time %r is not a time %s. %s" % (where, shown, TIME_RANGE, fix))
    return when


def build(source, fmt, rows):
    """A Trace from (time, gang_gpus, small_gpus, where) rows; checks order and values."""
    if not rows:
        raise TraceError("%s: the trace has no samples. Give a file with a header and at least one row." % source)
    times, gang, small = [], [], []
    for when, gang_gpus, small_gpus, where in rows:
        check_time(when, when, where, "Fix or drop the row.")
        if times and when <= times[-1]:
            raise TraceError("%s: time goes backwards or repeats (%s after %s). Sort the trace by time and "
                             "drop duplicate rows." % (where, when, times[-1]))
        if times and when - times[0] > MAX_SPAN_DAYS * 86400:
            raise TraceError("%s: time %s is more than %d days (10 years) after the first sample (%s), the longest "
                             "span the simulator replays. Split the trace or drop the row."
                             % (where, _iso(when), MAX_SPAN_DAYS, _iso(times[0])))
        if not 0 <= gang_gpus + small_gpus <= MAX_GPUS:
            raise TraceError("%s: demand of %d GPUs is not between 0 and %d GPUs per sample (the simulator's bound). "
                             "Fix the row." % (where, gang_gpus + small_gpus, MAX_GPUS))
        times.append(when)
        gang.append(gang_gpus)
        small.append(small_gpus)
    return Trace(source, fmt, tuple(times), tuple(gang), tuple(small), _common_step(times))


def _common_step(times):
    if len(times) < 2:
        return 60.0
    counts = {}
    for a, b in zip(times, times[1:]):
        counts[b - a] = counts.get(b - a, 0) + 1
    return max(counts.items(), key=lambda item: (item[1], -item[0]))[0]


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
                         % (trace.source, _iso(trace.times[0]), _iso(trace.times[-1])))

    def scaled(values):
        return tuple(int(math.ceil(values[i] * scale)) if scale != 1.0 else values[i] for i in keep)

    for i in keep:
        demand = (trace.gang_gpus[i] + trace.small_gpus[i]) * scale    # a float: checked before ceil()
        if demand > MAX_GPUS:
            raise SimulateError("--scale %g: demand at %s becomes %.4g GPUs, above the simulator's bound of %d GPUs "
                                "per sample. Lower --scale." % (scale, _iso(trace.times[i]), demand, MAX_GPUS))
    gang, small = scaled(trace.gang_gpus), scaled(trace.small_gpus)
    return Trace(trace.source, trace.fmt, tuple(trace.times[i] for i in keep), gang, small, trace.step,
                 trace.capacity_gpus)


def _iso(when):
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def detect(path):
    """The format of ``path`` from its first bytes (SQLite) or its CSV header."""
    from gpufleet.simulate import trace_csv

    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return "ledger"
    header = head.decode("utf-8", "replace").splitlines()[0] if head else ""
    return trace_csv.detect_header(path, header)


def read_trace(path, fmt=None, gpus_per_node=8, pool=None):
    """Read ``path`` in ``fmt`` (detected when None)."""
    from gpufleet.simulate import trace_csv, trace_ledger

    try:
        chosen = fmt or detect(path)
    except OSError as exc:
        raise TraceError("Cannot read trace %s: %s. Check the path." % (path, exc.strerror)) from None
    if chosen not in FORMATS:
        raise TraceError("Unknown trace format %r. Use one of: %s." % (chosen, ", ".join(FORMATS)))
    if chosen == "ledger":
        return trace_ledger.read(path, pool)
    return trace_csv.read(path, chosen, gpus_per_node)
