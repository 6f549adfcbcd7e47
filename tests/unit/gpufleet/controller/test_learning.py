"""The controller's learned forecasters (gpufleet.controller.learning): fitted outside the pass
from the demand history, refitted after ``forecast.refit_interval``, a fallback with its reason."""
import math
import threading

import pytest

from gpufleet.capacity import learned
from gpufleet.capacity.model import DemandSample
from gpufleet.capacity.policy import parse_policy
from gpufleet.controller import learning, records
from gpufleet.controller.learning import Models

POLICY = """
version: 1
pools:
  gpu:
    sku: h100
    members: {patterns: ["gpu-*"]}
    forecast: {enabled: true, method: learned%s}
  cpu:
    sku: epyc
    members: {patterns: ["cpu-*"]}
    forecast: {enabled: true, method: seasonal}
"""
DAY = 86400.0
T0 = 1_800_000_000.0


def policy(extra=""):
    return parse_policy(POLICY % extra, source="test")


class Fit:
    """learned.fit's stand-in: records each call; ``error`` raises; ``gate`` blocks until set."""

    def __init__(self, error=None):
        self.calls, self.error, self.gate = [], error, threading.Event()
        self.gate.set()

    def __call__(self, samples, forecast, split):
        self.calls.append((samples, forecast.method, split))
        self.gate.wait(10)
        if self.error:
            raise self.error
        return Model(split)


class Model:
    points = 100

    def __init__(self, split):
        self.trained_until = split

    def predict_gpus(self, samples, now):
        return 8.0, {"method": "learned"}


def fit_state(models, pool):
    """A pool's fit as these tests read it (the controller reads only ``notes()``): the last
    fit's error and whether a fit is under way."""
    with models._lock:
        state = models._pools[pool]
        return {"last_error": state.failed, "fitting": state.running is not None}


class Said(list):
    def __call__(self, text, level="info", **fields):
        self.append((text, level, fields))


HISTORY = {"gpu": (DemandSample("gpu", T0 - 60.0, gpus_running=8),), "cpu": ()}


def test_only_pools_with_an_enabled_learned_forecast_are_fitted_on_their_history_before_now():
    fit = Fit()
    got = Models(fit=fit, background=False).forecasters(policy(), HISTORY, T0)
    assert list(got) == ["gpu"] and got["gpu"].trained_until == T0
    assert fit.calls == [(HISTORY["gpu"], "learned", T0)]


def test_the_model_is_refitted_only_once_older_than_the_refit_interval():
    fit = Fit()
    models = Models(fit=fit, background=False)
    first = models.forecasters(policy(), HISTORY, T0)["gpu"]
    assert models.forecasters(policy(), HISTORY, T0 + DAY - 1)["gpu"] is first
    second = models.forecasters(policy(), HISTORY, T0 + DAY)["gpu"]
    assert second is not first and second.trained_until == T0 + DAY
    assert [split for _s, _m, split in fit.calls] == [T0, T0 + DAY]
    models.forecasters(policy(", refit_interval: 1h"), HISTORY, T0 + DAY + 3600)
    assert len(fit.calls) == 3      # the interval is read from the policy each pass


def test_too_little_history_is_an_unfitted_pool_with_the_reason_said_once_and_retried_later():
    said = Said()
    fit = Fit(error=learned.LearnError("3 training points before the split (at least 48 needed)"))
    models = Models(fit=fit, background=False, say=said)
    got = models.forecasters(policy(), HISTORY, T0)["gpu"]
    assert isinstance(got, learned.Unfitted) and "3 training points" in got.why
    models.forecasters(policy(), HISTORY, T0 + 60)
    assert len(fit.calls) == 1 and len(said) == 1
    text, level, fields = said[0]
    assert level == "warning" and fields == {"event": "learned_model", "pool": "gpu"}
    assert "3 training points" in text and "the seasonal forecast is used" in text and "fallback: seasonal" in text
    models.forecasters(policy(), HISTORY, T0 + learning.RETRY_S)
    assert len(fit.calls) == 2


def test_fallback_none_is_said_as_no_forecast_floor():
    said = Said()
    models = Models(fit=Fit(error=learned.LearnError("learned needs scikit-learn")), background=False, say=said)
    models.forecasters(policy(", fallback: none"), HISTORY, T0)
    assert "no forecast floor" in said[0][0] and "scikit-learn" in said[0][0]


def test_a_failed_refit_keeps_the_previous_model_and_says_so():
    said = Said()
    fit = Fit()
    models = Models(fit=fit, background=False, say=said)
    first = models.forecasters(policy(), HISTORY, T0)["gpu"]
    fit.error = RuntimeError("boom")
    assert models.forecasters(policy(), HISTORY, T0 + DAY)["gpu"] is first
    assert "the last refit failed" in said[-1][0] and "RuntimeError: boom" in said[-1][0]
    assert fit_state(models, "gpu")["last_error"].endswith("RuntimeError: boom")


def test_a_fit_in_the_background_never_blocks_a_pass_and_the_previous_model_serves_meanwhile():
    fit = Fit()
    fit.gate.clear()
    models = Models(fit=fit)
    got = models.forecasters(policy(), HISTORY, T0)["gpu"]        # returns while the fit is blocked
    assert isinstance(got, learned.Unfitted) and got.why == "learned model being fitted"
    assert fit_state(models, "gpu")["fitting"] is True
    fit.gate.set()
    models.wait(10)
    first = models.forecasters(policy(), HISTORY, T0 + 60)["gpu"]
    assert isinstance(first, Model)
    fit.gate.clear()
    assert models.forecasters(policy(), HISTORY, T0 + DAY)["gpu"] is first     # refit under way
    assert models.forecasters(policy(), HISTORY, T0 + DAY + 60)["gpu"] is first
    fit.gate.set()
    models.wait(10)
    assert models.forecasters(policy(), HISTORY, T0 + DAY + 120)["gpu"].trained_until == T0 + DAY
    assert len(fit.calls) == 2


def test_a_real_fit_on_two_days_of_per_minute_history():
    pytest.importorskip("sklearn")
    samples = tuple(DemandSample("gpu", T0 - DAY * 2 + 60.0 * i,
                                 gpus_running=int(40 + 30 * math.sin(2 * math.pi * i / 1440)))
                    for i in range(2 * 1440))
    got = Models(background=False).forecasters(policy(), {"gpu": samples}, T0)["gpu"]
    assert isinstance(got, learned.LearnedForecaster) and got.trained_until == T0
    assert got.predict_gpus(samples, T0)[0] > 0


def test_the_reconciler_fits_from_the_ledger_demand_history_and_hands_the_model_to_plan(ledger, make_reconciler):
    from gpufleet.capacity.policy import Forecast, Members, Pool
    for minute in (720.0, 780.0, 840.0):
        records.record_demand(ledger, "lab", minute, 16, 8, 0)
    rec, _runs, planning = make_reconciler()
    planning.pool = Pool(sku="lab", members=Members(groups=("sku_lab",)),
                         forecast=Forecast(enabled=True, method="learned"))
    fit = Fit()
    rec.learning = Models(fit=fit, clock=rec.clock, background=False)
    rec.once(dry_run=True)
    (samples, method, split), = fit.calls
    assert split == 1000.0 and method == "learned"
    assert [(s.minute, s.gpus_running, s.gpus_pending) for s in samples] == [(720.0, 16, 8), (780.0, 16, 8),
                                                                             (840.0, 16, 8)]
    assert planning.forecasters == {"lab": rec.learning.forecasters(planning.policy, {}, 1000.0)["lab"]}
    assert isinstance(planning.forecasters["lab"], Model)
