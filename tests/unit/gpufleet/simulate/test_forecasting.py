"""The simulator's forecasters: scores, the split, and the learned model handed to every pass."""
import math

import pytest

from gpufleet.capacity.learned import LearnedForecaster
from gpufleet.simulate import compare, forecasting
from gpufleet.simulate.policies import PolicyRun

from .conftest import policy, trace

LEARNED = "    forecast: {enabled: true, method: learned, bucket_minutes: 60, lead_time: 1h}\n"


def test_scores():
    assert forecasting.rmse([1, 3], [1, 1]) == pytest.approx(math.sqrt(2))
    assert forecasting.smape([0, 10], [0, 30]) == pytest.approx(100 * (0 + 2 * 20 / 40) / 2)
    assert forecasting.default_split([0.0, 3000.0 * 60]) == 2000.0 * 60


def test_fit_pool_only_for_an_enabled_learned_forecast():
    seasonal = policy("    forecast: {enabled: true}\n").pools["gpu"]
    off = policy("    forecast: {enabled: false, method: learned}\n").pools["gpu"]
    assert forecasting.fit_pool(seasonal, "gpu", [], 0.0) is None
    assert forecasting.fit_pool(off, "gpu", [], 0.0) is None


def test_a_learned_policy_hands_its_fitted_model_to_every_pass(fixed):
    pytest.importorskip("sklearn")
    prior = [(t * 900.0, 8 * (2 + (t % 96) // 24)) for t in range(4 * 96)]     # four days before the window
    window = trace([16] * 5, start=4 * 86400.0)
    seen = []

    def spy(demand, supply, pol, now, history=None, forecasters=None):
        seen.append(forecasters)
        from gpufleet.capacity.planner import plan
        return plan(demand, supply, pol, now, history=history, forecasters=forecasters)

    run = PolicyRun(name="learned", source="test", policy=policy(LEARNED), overrides=[])
    compare.run_policy(window, run, fixed, 4, plan=spy, prior=prior)
    assert seen and all(isinstance(f["gpu"], LearnedForecaster) for f in seen)
    assert seen[0]["gpu"].trained_until == window.times[0]
