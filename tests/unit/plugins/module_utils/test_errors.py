import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError


@pytest.mark.parametrize("details", [{}, {"node": "r1-n01", "status": 503}])
def test_fail_kwargs_carry_message_and_details(details):
    err = GpufleetError("Power on failed for r1-n01", **details)
    kwargs = err.to_fail_kwargs()
    assert kwargs.pop("msg") == "Power on failed for r1-n01"
    assert kwargs == details
    assert str(err) == "Power on failed for r1-n01"
