"""A demand trace's data and its checks: the Trace, the simulator's bounds, times, ``build``.

The format readers (trace_csv, trace_ledger) and ``trace`` (which picks the reader, and
selects and scales samples) all build on this file; it imports none of them.
"""
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional, Tuple

from gpufleet.simulate.errors import TraceError

__all__ = ["Trace", "MAX_GPUS", "MAX_SPAN_DAYS", "MAX_TIME", "TIME_RANGE", "parse_time", "check_time", "build",
           "iso"]

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
                             % (where, iso(when), MAX_SPAN_DAYS, iso(times[0])))
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


def iso(when):
    """``when`` (epoch seconds) as UTC text for messages."""
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
