"""Forecasters in the simulator: fit the learned one on the history before the replay, and
score every forecaster out of sample (``gpufleet simulate --evaluate``).

The evaluation: the trace's demand (running + pending GPUs, after --scale) is split at
``split`` (``--from``; without it, the start of the trace's last third). The learned model is
fitted on the samples before the split only. At every bucket boundary ``t`` from the split
until a lead time before the trace's end, each forecaster predicts the peak demand over
[t, t + lead_time) from the samples before ``t``; RMSE and SMAPE compare the predictions with
the actual peaks. The forecasters: ``seasonal`` (the policy's settings, enabled for the
scoring), ``learned`` and ``last_value`` (the demand of the last sample before ``t``: the naive
baseline a forecaster must beat).
"""
import math

from gpufleet.capacity import learned
from gpufleet.capacity.forecast import forecast_nodes, window
from gpufleet.capacity.model import DemandSample

__all__ = ["samples_of", "fit_pool", "evaluate", "default_split", "rmse", "smape", "table"]


def samples_of(pool, points):
    """[(time, gpus), ...] -> [DemandSample] at minute resolution (a minute's last sample wins)."""
    by_minute = {}
    for when, gpus in points:
        by_minute[float(int(when) // 60 * 60)] = gpus
    return [DemandSample(pool, minute, gpus_running=gpus) for minute, gpus in sorted(by_minute.items())]


def fit_pool(pool_cfg, name, prior, split):
    """{name: LearnedForecaster} when the pool's forecast is enabled and learned, else None."""
    forecast = pool_cfg.forecast
    if not (forecast.enabled and forecast.method == "learned"):
        return None
    return {name: learned.fit(samples_of(name, prior), forecast, split)}


def default_split(times):
    """The start of the last third of the trace's span, on a whole minute."""
    return float(int(times[0] + (times[-1] - times[0]) * 2 / 3) // 60 * 60)


def rmse(predicted, actual):
    return math.sqrt(sum((p - a) ** 2 for p, a in zip(predicted, actual)) / len(actual))


def smape(predicted, actual):
    """Symmetric MAPE in percent, 0 .. 200; a point where both are 0 counts as exact."""
    terms = [0.0 if p == a == 0 else 2 * abs(p - a) / (abs(p) + abs(a)) for p, a in zip(predicted, actual)]
    return 100.0 * sum(terms) / len(terms)


def evaluate(pool_name, pool_cfg, points, split):
    """Score the forecasters on the points at or after ``split``; ``points``: [(time, gpus)]."""
    from gpufleet.simulate.errors import SimulateError

    samples = samples_of(pool_name, points)
    forecast = pool_cfg.forecast.model_copy(update={"enabled": True, "method": "seasonal"})
    seasonal_pool = pool_cfg.model_copy(update={"forecast": forecast})
    bucket = forecast.bucket_minutes * 60.0
    lead = max(forecast.lead_time, bucket)
    model = learned.fit(samples, forecast, split)
    times, actual = [], []
    at = learned.boundary(split, bucket)
    at = at if at >= split else at + bucket
    end = samples[-1].minute + 60.0
    while at + lead <= end:
        value = learned.target(samples, at, lead)
        if not math.isnan(value):
            times.append(at)
            actual.append(value)
        at += bucket
    if not times:
        raise SimulateError("--evaluate: no test points after the split %.0f (the trace ends within one lead time "
                            "of it); fix: give an earlier --from." % split)
    predictions = {"learned": model.predict_many(samples, times), "seasonal": [], "last_value": []}
    for t in times:
        _, why = forecast_nodes(seasonal_pool, samples, t)
        predictions["seasonal"].append(float(why.get("forecast_gpus", 0.0)))
        before = window(samples, -math.inf, t)
        predictions["last_value"].append(float(before[-1].gpus) if before else 0.0)
    scores = {name: {"rmse_gpus": round(rmse(values, actual), 2), "smape_pct": round(smape(values, actual), 2)}
              for name, values in predictions.items()}
    return {"split": split, "test_points": len(times), "test_from": times[0], "test_to": times[-1] + lead,
            "target": "peak GPUs over the next %.0f s from each %.0f s boundary" % (lead, bucket),
            "training_points": model.points, "forecasters": scores}


def table(result):
    lines = ["| forecaster | RMSE GPUs | SMAPE % |", "|---|---|---|"]
    for name, score in result["forecasters"].items():
        lines.append("| %s | %.2f | %.2f |" % (name, score["rmse_gpus"], score["smape_pct"]))
    lines.append("(%d test points after the split; %d training points before it; target: %s)"
                 % (result["test_points"], result["training_points"], result["target"]))
    return "\n".join(lines)
