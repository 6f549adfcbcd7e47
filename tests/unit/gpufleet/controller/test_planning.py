"""The controller's loaded policy (gpufleet.controller.planning.Planning)."""
import os

import pytest
import yaml

from gpufleet.capacity.policy import parse_policy
from gpufleet.controller.planning import Planning

LAB_POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "controller", "gpufleet", "capacity",
                          "examples", "lab.yml")


def _lab_policy(forecast):
    with open(LAB_POLICY) as handle:
        data = yaml.safe_load(handle)
    data["pools"]["lab-gpu"]["forecast"] = forecast
    return parse_policy(yaml.safe_dump(data), source="lab.yml")


def test_an_enabled_learned_forecast_is_taken_and_its_model_is_an_input_to_plan():
    from gpufleet.capacity import learned
    planning = Planning(policy_path="lab.yml", policy=_lab_policy({"enabled": True, "method": "learned",
                                                                    "fallback": "none"}))
    unfitted = planning.plan([], [], [], [], 1000.0, {}, {"lab-gpu": learned.Unfitted("fitting")})
    why = unfitted.notes["lab-gpu"]["floors"]["forecast"]["why"]
    assert why == "fitting: no forecast floor (forecast.fallback: none)"

    class Model:
        def predict_gpus(self, samples, now):
            return 17.0, {"method": "learned"}

    fitted = planning.plan([], [], [], [], 1000.0, {}, {"lab-gpu": Model()})
    assert fitted.notes["lab-gpu"]["floors"]["forecast"]["forecast_gpus"] == 17.0


@pytest.mark.parametrize("forecast", [{"enabled": True, "method": "seasonal"}, {"enabled": False, "method": "learned"}])
def test_a_seasonal_or_disabled_forecast_is_taken(forecast):
    planning = Planning(policy_path="lab.yml", policy=_lab_policy(forecast))
    assert planning.policy.pools["lab-gpu"].forecast.method == forecast["method"]
