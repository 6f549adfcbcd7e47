import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import IllegalTransition


@pytest.mark.parametrize("current,target", [
    ("enrolled", "inspected"), ("inspected", "imaging"), ("imaging", "configuring"),
    ("configuring", "validating"), ("validating", "ready"), ("ready", "joined"),
    ("joined", "draining"), ("draining", "recycling"), ("recycling", "imaging"),
    ("imaging", "failed"), ("configuring", "failed"), ("validating", "failed"),
    ("failed", "recycling"), ("failed", "break_fix"), ("break_fix", "enrolled"),
    ("joined", "decommissioned"), ("failed", "decommissioned"), (None, "enrolled"),
    # warmth tiers
    ("ready", "hot"), ("ready", "parked"), ("hot", "joined"), ("hot", "parked"),
    ("hot", "draining"), ("hot", "recycling"), ("draining", "hot"), ("draining", "parked"),
    ("parked", "waking"), ("parked", "recycling"), ("waking", "validating"), ("waking", "ready"),
    ("waking", "hot"), ("waking", "failed"), ("parked", "decommissioned"), ("hot", "decommissioned"),
    ("hot", "waking"),   # a held node whose gate expired: re-gated through the wake playbook
    ("validating", "recycling"),   # its fabric phase could not run: its peers left the run first
])
def test_legal_transitions_pass(current, target):
    states.check_transition("n1", current, target)


@pytest.mark.parametrize("current,target", [
    ("enrolled", "joined"), ("imaging", "ready"), ("validating", "joined"),
    ("failed", "ready"), ("joined", "imaging"), ("decommissioned", "enrolled"),
    ("ready", "imaging"), (None, "imaging"),
    ("parked", "joined"), ("parked", "hot"), ("waking", "joined"), ("joined", "hot"),
    ("joined", "parked"), ("hot", "ready"), ("enrolled", "parked"),
])
def test_illegal_transitions_are_refused_with_the_allowed_list(current, target):
    with pytest.raises(IllegalTransition) as err:
        states.check_transition("r1-n3", current, target)
    assert '"r1-n3"' in err.value.msg
    if current is not None:
        assert err.value.details["allowed"] == states.allowed_targets(current)
        assert "may only move to" in err.value.msg


def test_unknown_state_names_the_valid_ones():
    with pytest.raises(IllegalTransition) as err:
        states.check_transition("n1", "enrolled", "warm")
    assert "Valid states" in err.value.msg and "ready" in err.value.msg


def test_decommissioned_is_terminal():
    assert states.allowed_targets("decommissioned") == []


@pytest.mark.parametrize("current,target,expected", [
    ("configuring", "imaging", True), ("imaging", "imaging", False),
    ("inspected", "imaging", False), ("ready", "validating", True),
    ("failed", "imaging", False), ("joined", "ready", True),
    ("hot", "ready", True), ("hot", "imaging", True), ("hot", "joined", False),
    ("parked", "ready", False), ("joined", "hot", True),
])
def test_is_past_follows_the_bringup_path(current, target, expected):
    assert states.is_past(current, target) is expected


def test_every_target_is_a_state():
    for targets in states.TRANSITIONS.values():
        assert set(targets) <= set(states.TRANSITIONS)


def test_tier_lists():
    assert states.WAKING in states.IN_PROGRESS
    assert set(states.ADMISSIBLE) == {"hot", "ready"} and states.WAKEABLE == ("parked",)
    assert {"hot", "parked", "waking"} <= set(states.STATES)
