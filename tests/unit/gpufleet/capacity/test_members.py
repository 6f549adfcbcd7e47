"""Node -> pool from the policy's member rules."""
import pytest

from gpufleet.capacity.members import pool_of

from tests.unit.gpufleet.capacity.fleet_factory import make_policy

POLICY = make_policy(pools={
    "h100": {"members": {"groups": ["rack42"], "labels": {"gpu": "h100", "fabric": "ndr"}}},
    "a100": {"members": {"patterns": ["gpu-a-*", "spare-a?"]}},
})


@pytest.mark.parametrize("node,groups,labels,expected", [
    ("n1", ["rack42"], {}, "h100"),
    ("n1", ["rack7"], {"gpu": "h100", "fabric": "ndr"}, "h100"),
    ("n1", ["rack7"], {"gpu": "h100"}, None),           # every listed label must match
    ("gpu-a-01", [], {}, "a100"),
    ("spare-a1", [], {}, "a100"),
    ("spare-a10", [], {}, None),
    ("GPU-A-01", [], {}, None),                        # patterns are case-sensitive
    ("gpu-a-01", ["rack42"], {}, "h100"),              # first pool in policy order wins
    ("other", [], {}, None),
])
def test_pool_of(node, groups, labels, expected):
    assert pool_of(POLICY, node, groups, labels) == expected
