"""The learned forecaster: it beats the naive last value on a weekly-seasonal series, never reads
history at or after its split, and asks for scikit-learn by name when it is missing."""
import math
import random
import sys

import pytest

from gpufleet.capacity import learned
from gpufleet.capacity.forecast import forecast_nodes
from gpufleet.capacity.model import DemandSample
from gpufleet.capacity.policy import PolicyError, parse_policy

pytest.importorskip("sklearn")

HOUR = 3600.0
WEEK = 7 * 86400.0
POLICY = """
version: 1
pools:
  gpu:
    sku: h100
    gpus_per_node: 8
    members: {patterns: ["gpu-*"]}
    forecast: {enabled: true, method: %s, bucket_minutes: 60, lead_time: 1h}
"""


def pool(method="learned"):
    return parse_policy(POLICY % method, source="test").pools["gpu"]


def series(weeks=4, step=900.0, seed=7):
    """Demand every 15 minutes: a workday double hump, quiet weekends, noise."""
    rng = random.Random(seed)
    out = []
    for i in range(int(weeks * WEEK / step)):
        t = i * step
        hour = (t % 86400) / HOUR
        weekday = ((t // 86400) + 3) % 7 < 5         # epoch day 0 was a Thursday
        level = 40 + (160 if weekday else 30) * max(0.0, math.sin(math.pi * (hour - 7) / 12))
        out.append(DemandSample("gpu", t, gpus_running=max(0, round(level + rng.gauss(0, 6)))))
    return out


@pytest.fixture(scope="module")
def fitted():
    """One model fitted on the first three weeks of ``series()`` (fits take seconds)."""
    samples = series()
    return samples, learned.fit(samples, pool().forecast, 3 * WEEK)


def _scores(model, samples, split, lead):
    times = [t for t in (split + k * HOUR for k in range(int(WEEK / HOUR))) if t + lead <= samples[-1].minute]
    actual = [learned.target(samples, t, lead) for t in times]
    predicted = model.predict_many(samples, times)
    naive = [learned.last_value(samples, t) for t in times]
    rmse = lambda got: math.sqrt(sum((g - a) ** 2 for g, a in zip(got, actual)) / len(actual))  # noqa: E731
    return rmse(predicted), rmse(naive)


def test_beats_last_value_on_weekly_seasonal_series(fitted):
    samples, model = fitted
    ours, naive = _scores(model, samples, 3 * WEEK, HOUR)
    assert ours < 0.8 * naive, (ours, naive)


def test_broken_features_do_not_beat_last_value(monkeypatch):
    # the same test with the features replaced by a constant must fail: it measures the features
    monkeypatch.setattr(learned, "features", lambda samples, at, bucket, lead: [0.0, float(int(at // 3600) % 2)])
    samples = series()
    model = learned.fit(samples, pool().forecast, 3 * WEEK)
    ours, naive = _scores(model, samples, 3 * WEEK, HOUR)
    assert ours >= 0.8 * naive


def test_training_reads_nothing_at_or_after_the_split(fitted):
    samples, clean = fitted
    split = 3 * WEEK
    # everything from the split on replaced by an absurd level: the fitted model must not change
    poisoned = [s if s.minute < split else DemandSample("gpu", s.minute, gpus_running=10 ** 6) for s in samples]
    dirty = learned.fit(poisoned, pool().forecast, split)
    probe = [split - k * 5400.0 for k in range(1, 40)]
    before = [s for s in samples if s.minute < split]
    assert clean.predict_many(before, probe) == dirty.predict_many(before, probe)
    assert clean.trained_until == split


def test_prediction_reads_only_samples_before_now(fitted):
    samples, model = fitted
    now = 3 * WEEK + 5 * HOUR
    future = [s if s.minute < now else DemandSample("gpu", s.minute, gpus_running=0) for s in samples]
    assert model.predict_gpus(samples, now)[0] == model.predict_gpus(future, now)[0]


def test_forecast_nodes_reads_the_model_and_says_when_there_is_none(fitted):
    samples, model = fitted
    now = 3 * WEEK + 2 * HOUR
    nodes, why = forecast_nodes(pool(), samples, now, model=model)
    gpus, _ = model.predict_gpus(samples, now)
    assert nodes == math.ceil(gpus / 8 - 1e-9) and why["method"] == "learned"


def _with(extra):
    return parse_policy(POLICY.replace("lead_time: 1h}", "lead_time: 1h, %s}" % extra) % "learned",
                        source="test").pools["gpu"]


def test_without_a_model_fallback_none_gives_no_forecast_floor_and_says_why():
    assert forecast_nodes(_with("fallback: none"), series(weeks=1), WEEK, model=learned.Unfitted("too little")) == (
        None, {"enabled": True, "method": "learned", "why": "too little: no forecast floor (forecast.fallback: none)"})


def test_without_a_model_the_default_fallback_is_the_seasonal_forecast_named_in_the_notes():
    samples = series(weeks=3, step=60.0)       # the seasonal forecast skips gaps over 3 minutes
    now = 2 * WEEK + 12 * HOUR
    nodes, why = forecast_nodes(pool(), samples, now, model=learned.Unfitted("learned model being fitted"))
    seasonal, seasonal_why = forecast_nodes(pool("seasonal"), samples, now)
    assert nodes == seasonal is not None and nodes > 0
    assert why["method"] == "seasonal" and why["fallback_from"] == "learned"
    assert why["fallback"].startswith("learned model being fitted: the seasonal forecast is used")
    assert why["weekly_peaks_gpus"] == seasonal_why["weekly_peaks_gpus"]
    # no model object at all reads the same as Unfitted, with a generic reason
    assert forecast_nodes(pool(), samples, now)[1]["fallback"].startswith("no fitted learned model")


@pytest.mark.parametrize("value, ok", [("24h", 86400.0), ("10m", 600.0), ("5m", None), ("31d", None)])
def test_refit_interval_is_validated_naming_the_field_and_the_fix(value, ok):
    if ok is not None:
        assert _with("refit_interval: %s" % value).forecast.refit_interval == ok
        return
    with pytest.raises(PolicyError) as err:
        _with("refit_interval: %s" % value)
    assert "pools.gpu.forecast.refit_interval" in str(err.value) and "fix: write a duration" in str(err.value)


def test_fallback_is_validated():
    assert pool().forecast.fallback == "seasonal" and pool().forecast.refit_interval == 86400.0
    with pytest.raises(PolicyError) as err:
        _with("fallback: last_value")
    assert "pools.gpu.forecast.fallback" in str(err.value)


def test_too_little_history_is_refused_with_the_fix():
    with pytest.raises(learned.LearnError, match="forecast.method: .*training points"):
        learned.fit(series(weeks=0.5), pool().forecast, 86400.0)


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.ensemble", None)
    with pytest.raises(learned.LearnError, match=r"pip install 'gpufleet\[learn\]'"):
        learned.fit(series(weeks=1), pool().forecast, WEEK)


def test_policy_method_is_validated():
    assert pool("seasonal").forecast.method == "seasonal"
    assert parse_policy(POLICY.replace("method: %s, ", ""), source="t").pools["gpu"].forecast.method == "seasonal"
    with pytest.raises(PolicyError) as err:
        parse_policy(POLICY % "neural", source="test")
    assert "pools.gpu.forecast.method" in str(err.value) and "'seasonal' or 'learned'" in str(err.value)
