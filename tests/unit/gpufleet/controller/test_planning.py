"""The controller's loaded policy (gpufleet.controller.planning.Planning)."""
import os

import pytest
import yaml

from gpufleet.capacity.policy import parse_policy
from gpufleet.controller.errors import ControllerError
from gpufleet.controller.planning import Planning

LAB_POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "controller", "gpufleet", "capacity",
                          "examples", "lab.yml")


def _lab_policy(forecast):
    with open(LAB_POLICY) as handle:
        data = yaml.safe_load(handle)
    data["pools"]["lab-gpu"]["forecast"] = forecast
    return parse_policy(yaml.safe_dump(data), source="lab.yml")


def test_a_learned_forecast_is_refused_by_the_controller_naming_the_field_and_the_fix():
    policy = _lab_policy({"enabled": True, "method": "learned"})
    with pytest.raises(ControllerError) as caught:
        Planning(policy_path="lab.yml", policy=policy)
    assert "pools.lab-gpu.forecast.method" in str(caught.value)
    assert "forecast.method: seasonal" in str(caught.value)


@pytest.mark.parametrize("forecast", [{"enabled": True, "method": "seasonal"}, {"enabled": False, "method": "learned"}])
def test_a_seasonal_or_disabled_forecast_is_taken(forecast):
    planning = Planning(policy_path="lab.yml", policy=_lab_policy(forecast))
    assert planning.policy.pools["lab-gpu"].forecast.method == forecast["method"]
