"""Forecast floors from the recorded per-minute demand history of a pool.

For each of the last ``lookback_weeks`` weeks, the peak demand (GPUs running + pending) in the
window that starts at the same time of week and lasts the lead time (at least one bucket);
the ``quantile`` of those peaks, plus ``trend_weight`` x the recent trend (the last bucket now
against the same bucket in those weeks), is the demand to be ready for. In nodes, minus the
nodes already joined, it is the floor the forecast asks for. The explanation carries every
input so the decision log can show why.
"""
import math
from bisect import bisect_left

from gpufleet.capacity.model import DemandSample

__all__ = ["forecast_floor", "history_from_rows", "quantile", "WEEK"]

WEEK = 7 * 86400.0


def history_from_rows(rows):
    """Ledger demand rows (dicts with pool, minute, gpus_running, gpus_pending,
    gpus_pending_capacity, as ``decisions.demand_history`` returns them) -> the planner's
    ``history``: {pool: [DemandSample, ...] sorted by minute}. Other keys are ignored."""
    history = {}
    for row in rows:
        sample = DemandSample(pool=row["pool"], minute=float(row["minute"]),
                              gpus_running=row.get("gpus_running", 0),
                              gpus_pending=row.get("gpus_pending", 0),
                              gpus_pending_capacity=row.get("gpus_pending_capacity", 0))
        history.setdefault(sample.pool, []).append(sample)
    for samples in history.values():
        samples.sort(key=lambda s: s.minute)
    return history


def quantile(values, q):
    """Linear-interpolated quantile of ``values`` (numpy's default method), q in (0, 1]."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _window(samples, start, end):
    """Samples with start <= minute < end; ``samples`` sorted by minute."""
    first = bisect_left(samples, start, key=lambda s: s.minute)
    last = bisect_left(samples, end, key=lambda s: s.minute)
    return samples[first:last]


def _mean(samples):
    return sum(s.gpus for s in samples) / len(samples) if samples else None


def _weekly(samples, settings, now):
    """Per past week: (peak ahead over the lead time, mean over the bucket before)."""
    bucket = settings.bucket_minutes * 60.0
    ahead = max(settings.lead_time, bucket)
    peaks, befores = [], []
    for week in range(1, settings.lookback_weeks + 1):
        then = now - week * WEEK
        window = _window(samples, then, then + ahead)
        if window:
            peaks.append(max(s.gpus for s in window))
        before = _mean(_window(samples, then - bucket, then))
        if before is not None:
            befores.append(before)
    return peaks, befores


def forecast_floor(pool, samples, now, joined):
    """-> (extra nodes to keep ready in ``pool.forecast.tier``, explanation dict)."""
    settings = pool.forecast
    if not settings.enabled:
        return 0, {"enabled": False}
    peaks, befores = _weekly(samples or (), settings, now)
    if not peaks:
        return 0, {"enabled": True, "weeks_with_data": 0,
                   "why": "no demand history at this time of week: no forecast floor"}
    level = quantile(peaks, settings.quantile)
    recent = _mean(_window(samples, now - settings.bucket_minutes * 60.0, now))
    trend = recent - sum(befores) / len(befores) if recent is not None and befores else 0.0
    gpus = max(0.0, level + settings.trend_weight * trend)
    nodes = math.ceil(gpus / pool.gpus_per_node - 1e-9)
    floor = max(0, nodes - joined)
    return floor, {
        "enabled": True, "weeks_with_data": len(peaks), "weekly_peaks_gpus": peaks,
        "quantile": settings.quantile, "quantile_gpus": round(level, 3),
        "trend_gpus": round(trend, 3), "trend_weight": settings.trend_weight,
        "forecast_gpus": round(gpus, 3), "forecast_nodes": nodes, "joined_nodes": joined,
        "floor": floor, "tier": settings.tier, "lead_time_s": settings.lead_time,
    }
