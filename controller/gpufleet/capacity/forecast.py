"""Forecast floors from the recorded per-minute demand history of a pool.

For each of the last ``lookback_weeks`` weeks, the peak demand (GPUs running + pending) in the
window that starts at the same time of week and lasts the lead time (at least one bucket);
the ``quantile`` of those peaks, plus ``trend_weight`` x the recent trend (the last bucket now
against the same bucket in those weeks), is the demand to be ready for. In nodes, minus the
nodes already joined, it is the floor the forecast asks for. The explanation carries every
input so the decision log can show why.

Gaps: the controller records one sample a minute while it runs; a stretch of more than
``GAP_S`` with no sample (the controller was down, its Slurm read failed) is a gap, never zero
demand. A past week whose window holds a gap is skipped, and with a gap in the last bucket the
trend term is left out; the explanation lists the gaps and what was skipped.
"""
import math
from bisect import bisect_left

from gpufleet.capacity.emit import ago
from gpufleet.capacity.model import DemandSample

__all__ = ["forecast_nodes", "held_forecast", "gaps_in", "history_from_rows", "quantile", "window",
           "WEEK", "GAP_S"]

WEEK = 7 * 86400.0
# More than 3 recording intervals (one a minute) without a sample: telemetry missing, not demand
# at zero. Three tolerates a slow pass or two; a controller restart leaves a longer hole.
GAP_S = 3 * 60.0


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


def window(samples, start, end):
    """Samples with start <= minute < end; ``samples`` sorted by minute."""
    first = bisect_left(samples, start, key=lambda s: s.minute)
    last = bisect_left(samples, end, key=lambda s: s.minute)
    return samples[first:last]


def _mean(samples):
    return sum(s.gpus for s in samples) / len(samples) if samples else None


def gaps_in(samples, start, end):
    """Gaps in [start, end): (from, to) spans longer than GAP_S with no sample (the edges of the
    window count: a window whose first sample comes late starts with a gap)."""
    gaps, last = [], start - 60.0     # a sample at ``start - 1 minute`` would cover the start
    for sample in window(samples, start, end):
        if sample.minute - last > GAP_S:
            gaps.append((max(start, last), sample.minute))
        last = sample.minute
    if end - last > GAP_S:
        gaps.append((max(start, last), end))
    return gaps


def _weekly(samples, settings, now, ahead, gaps):
    """Per past week: (peak ahead over ``ahead``, mean over the bucket before); windows with a
    gap are skipped and their gaps appended to ``gaps``."""
    bucket = settings.bucket_minutes * 60.0
    peaks, befores = [], []
    for week in range(1, settings.lookback_weeks + 1):
        then = now - week * WEEK
        ahead_window = window(samples, then, then + ahead)
        holes = gaps_in(samples, then, then + ahead) if ahead_window else []
        if ahead_window and not holes:
            peaks.append(max(s.gpus for s in ahead_window))
        gaps.extend(holes)
        before = window(samples, then - bucket, then)
        holes = gaps_in(samples, then - bucket, then) if before else []
        if before and not holes:
            befores.append(_mean(before))
        gaps.extend(holes)
    return peaks, befores


def forecast_nodes(pool, samples, now, ahead=None, model=None):
    """-> (nodes the forecast wants ready over ``ahead`` seconds (default: the lead time, at
    least one bucket), explanation dict); (None, why) when there is no forecast. ``model``: the
    pool's fitted LearnedForecaster, read when ``forecast.method`` is ``learned``."""
    settings = pool.forecast
    if not settings.enabled:
        return None, {"enabled": False}
    samples = samples or ()
    if settings.method == "learned":
        return _learned(pool, samples, now, model, ahead)
    bucket = settings.bucket_minutes * 60.0
    ahead = max(settings.lead_time if ahead is None else ahead, bucket)
    gaps = []
    peaks, befores = _weekly(samples, settings, now, ahead, gaps)
    if not peaks:
        why = {"enabled": True, "weeks_with_data": 0,
               "why": "no demand history at this time of week: no forecast floor"}
        if gaps:
            why.update(gaps=_spans(gaps), why="no gap-free demand history at this time of week "
                       f"({len(gaps)} gap(s) of telemetry skipped): no forecast floor")
        return None, why
    level = quantile(peaks, settings.quantile)
    recent_window = window(samples, now - bucket, now)
    recent_gaps = gaps_in(samples, now - bucket, now)
    recent = _mean(recent_window) if not recent_gaps else None
    trend = recent - sum(befores) / len(befores) if recent is not None and befores else 0.0
    gpus = max(0.0, level + settings.trend_weight * trend)
    nodes = math.ceil(gpus / pool.gpus_per_node - 1e-9)
    why = {
        "enabled": True, "weeks_with_data": len(peaks), "weekly_peaks_gpus": peaks,
        "quantile": settings.quantile, "quantile_gpus": round(level, 3),
        "trend_gpus": round(trend, 3), "trend_weight": settings.trend_weight,
        "forecast_gpus": round(gpus, 3), "forecast_nodes": nodes,
        "tier": settings.tier, "lead_time_s": settings.lead_time,
    }
    if gaps or recent_gaps:
        why["gaps"] = _spans(gaps + recent_gaps)
        why["gap_note"] = (f"telemetry gaps (no sample for more than {GAP_S:.0f}s) skipped: "
                           f"{settings.lookback_weeks - len(peaks)} week(s) left out of the peaks"
                           + ("; no trend term (gap in the last bucket)" if recent_gaps else ""))
    return nodes, why


def _learned(pool, samples, now, model, ahead):
    """The learned model's peak over its lead time (a longer ``ahead`` reads the same value).
    Without a fitted model (None, or a learned.Unfitted naming why) the pool forecasts as
    ``forecast.fallback`` says, and the explanation says so."""
    if model is None or not hasattr(model, "predict_gpus"):
        reason = getattr(model, "why", None) or "no fitted learned model for this pool"
        if pool.forecast.fallback == "seasonal":
            nodes, why = forecast_nodes(pool.model_copy(update={"forecast": pool.forecast.model_copy(
                update={"method": "seasonal"})}), samples, now, ahead)
            return nodes, dict(why, method="seasonal", fallback_from="learned",
                               fallback=f"{reason}: the seasonal forecast is used (forecast.fallback: seasonal)")
        return None, {"enabled": True, "method": "learned",
                      "why": f"{reason}: no forecast floor (forecast.fallback: none)"}
    gpus, why = model.predict_gpus(samples, now)
    nodes = math.ceil(gpus / pool.gpus_per_node - 1e-9)
    return nodes, dict(why, enabled=True, forecast_gpus=round(gpus, 3), forecast_nodes=nodes,
                       tier=pool.forecast.tier)


def _spans(gaps):
    return [{"from": start, "to": end, "minutes": round((end - start) / 60.0, 1)}
            for start, end in sorted(set(gaps))]


def held_forecast(pool, samples, now, ahead=None, model=None):
    """The forecast in nodes held for ``forecast.min_on_time``: the highest of the forecasts at
    ``now`` and at each bucket back over the minimum on-time, so a raised floor stays up that
    long and falls only when the forecast itself has fallen. -> (nodes or None, explanation)."""
    nodes, why = forecast_nodes(pool, samples, now, ahead, model)
    settings = pool.forecast
    if nodes is None or settings.min_on_time <= 0:
        return nodes, why
    bucket = settings.bucket_minutes * 60.0
    steps = int(settings.min_on_time // bucket)
    best, at = nodes, now
    for step in range(1, steps + 1):
        earlier, _ = forecast_nodes(pool, samples, now - step * bucket, ahead, model)
        if earlier is not None and earlier > best:
            best, at = earlier, now - step * bucket
    if best > nodes:
        why = dict(why, forecast_nodes=best, held={
            "nodes_now": nodes, "from": at, "min_on_time_s": settings.min_on_time,
            "why": f"the forecast of {ago(now - at)} ago ({best} nodes) holds for the minimum on-time "
                   f"{ago(settings.min_on_time)}"})
    return best, why
