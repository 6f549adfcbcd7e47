"""Renewal: stale gate or old join -> re-validate, only idle nodes are marked ready."""
import pytest

from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, NodeView
from gpufleet.capacity.policy import Policy
from gpufleet.day2.renewal import due_for_renewal

NOW = 1_800_000_000.0
DAY = 86400.0


def _policy(**day2):
    return Policy.model_validate({"pools": {"p": {
        "sku": "x", "members": {"patterns": ["p-*"]}, "gate_validity": "7d", "day2": day2}}})


def _n(tier, gate_age, jobs=()):
    return NodeView("p-1", "p", tier, "joined", gate_passed_at=None if gate_age is None
                    else NOW - gate_age, jobs=jobs)


@pytest.mark.parametrize("node,joined_age,day2,expected", [
    (_n(IDLE, 1 * DAY), None, {}, None),
    (_n(IDLE, 8 * DAY), None, {}, ("revalidate", True)),
    (_n(HOT, 8 * DAY), None, {"renewal_reimage": True}, ("reimage_revalidate", True)),
    (_n(BUSY, 8 * DAY, jobs=("j",)), None, {}, ("revalidate", False)),
    (_n(IDLE, None), None, {}, ("revalidate", True)),
    (_n(IDLE, 1 * DAY), 40 * DAY, {"renewal_max_age": "30d"}, ("revalidate", True)),
    (_n(IDLE, 1 * DAY), 40 * DAY, {}, None),             # no max age set
    (_n(IDLE, 1 * DAY), 10 * DAY, {"renewal_max_age": "30d"}, None),
    (_n(COLD, 30 * DAY), None, {}, None),                  # not in service: the gate at bring-up
])
def test_due(node, joined_age, day2, expected):
    joined = {} if joined_age is None else {"p-1": NOW - joined_age}
    due = due_for_renewal([node], _policy(**day2), NOW, joined)
    assert [(d.kind, d.idle) for d in due] == ([expected] if expected else [])


def test_due_since_is_when_it_expired():
    due = due_for_renewal([_n(IDLE, 8 * DAY)], _policy(), NOW)
    assert due[0].since == NOW - DAY
