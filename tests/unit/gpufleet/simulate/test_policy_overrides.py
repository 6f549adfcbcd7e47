"""`gpufleet simulate --set` on the default policy's steady level: a percent of the pool or a
node count, and a bad value refused with its field path."""
import pytest

from gpufleet.commands.simulate import DEFAULT_POLICY
from gpufleet.simulate import policies
from gpufleet.simulate.errors import SimulateError


def _steady(*texts):
    run = policies.load(DEFAULT_POLICY, [policies.parse_override(t) for t in texts])
    return run.policy.pools["gpu"].steady


def test_a_percent_or_a_node_count_can_be_set():
    assert (_steady().headroom, _steady().step) == ("15%", "12.5%")
    steady = _steady("pools.gpu.steady.headroom=10%", "pools.gpu.steady.step=25%")
    assert (steady.headroom, steady.step) == ("10%", "25%")
    steady = _steady("pools.gpu.steady.headroom=6", "pools.gpu.steady.step=8")
    assert (steady.headroom, steady.step) == (6, 8)


def test_a_bad_share_names_the_field_and_the_fix():
    with pytest.raises(SimulateError) as err:
        _steady("pools.gpu.steady.step=0%")
    assert ("pools.gpu.steady.step: a step of 0% of the pool is not above 0 and at most 100 percent; "
            "fix:") in str(err.value)
