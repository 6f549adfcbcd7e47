"""The one table of action kinds: every fact about a kind, checked against the collection."""
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.work import kinds
from gpufleet.work.action import CAPACITY, REPAIR, ROLLOUT, STAGES, Action
from tests.helpers import ROOT


def act(kind, *nodes, **kw):
    return Action(kind, "lab", nodes or ("n1",), "why", **kw)


def _playbooks(kind):
    """Every playbook a row may run (its default and its per-tier ones), tuples opened."""
    for playbook in (kind.playbook,) + tuple(kind.by_tier.values()):
        yield from (playbook if isinstance(playbook, tuple) else (playbook,))


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_every_kind_runs_a_playbook_the_collection_has_or_is_a_ledger_step(name):
    for playbook in _playbooks(kinds.KINDS[name]):
        assert playbook in (None, kinds.LEDGER) or os.path.isfile(os.path.join(ROOT, "playbooks", playbook + ".yml")), \
            "%s: no playbooks/%s.yml" % (name, playbook)
    assert any(p not in (None,) for p in _playbooks(kinds.KINDS[name])), "%s runs nothing and records nothing" % name


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_every_row_is_consistent(name):
    kind = kinds.KINDS[name]
    assert kind.stages and set(kind.stages) <= set(STAGES)
    assert kind.bounded in ("", kinds.FLEET, kinds.POOL)
    expected = {kind.expected} | set(kind.expected_by_tier.values())
    assert expected - {None} <= set(states.STATES)   # a state the ledger knows
    machine = [p for p in _playbooks(kind) if p not in (None, kinds.LEDGER)]
    # only machine work ends in a state, powers a peer off or takes a slot of the concurrency limit
    if not machine:
        assert expected == {None} and not kind.disturbs_peers and not kind.bounded


def test_the_planner_kinds_and_their_bounds():
    assert kinds.ACTION_KINDS == ("bringup", "wake", "resume", "admit", "substitute", "rollback", "hold", "park",
                                  "break_fix", "reserve")
    assert kinds.BRINGUP_KINDS == ("bringup", "wake") and kinds.BOUNDED_KINDS == ("bringup", "wake", "park")
    # every bounded kind is the planner's (its budget is the one that holds them back)
    assert set(kinds.BOUNDED_KINDS) <= set(kinds.ACTION_KINDS)
    assert set(kinds.DAY2_KINDS) == {"drain", "requeue", "recycle", "readmit", "break_fix", "resume", "bind"}
    assert set(kinds.kinds_of(ROLLOUT)) == {"drain", "recycle", "revalidate", "readmit"}
    assert kinds.kinds_of(CAPACITY) == kinds.ACTION_KINDS


def test_ledger_steps():
    for action in (act("reserve", "n1", "n2", gang_id="g"), act("substitute", gang_id="g", replaces="n2"),
                   act("break_fix"), act("readmit", target_tier="hot", stage=REPAIR)):
        assert kinds.ledger_only(action) and kinds.playbook_for(action) == (None, {}), action.kind
    # with a technician's record, break_fix reads the BMC's log first: a playbook run
    assert not kinds.ledger_only(act("break_fix", record={"summary": "x"}, stage=REPAIR))
    assert kinds.playbook_for(act("break_fix", record={"summary": "x"}, stage=REPAIR))[0] == "break_fix"
    # no playbook at all (an unknown kind, a readmit without a tier): not a ledger step, so the
    # launcher records it failed instead of pretending it was done
    for action in (act("teleport"), act("readmit", stage=REPAIR)):
        assert not kinds.ledger_only(action) and kinds.playbook_of(action) is None
        assert kinds.playbook_for(action) == (None, {}) and kinds.expected_state(action) is None


def test_the_kinds_that_disturb_fabric_peers():
    assert {k for k in kinds.KINDS if kinds.disturbs_peers(act(k))} == {"bringup", "recycle", "park", "rollback"}
    assert not kinds.disturbs_peers(act("teleport"))


@pytest.mark.parametrize("kind, tier, state", [
    ("bringup", None, states.HOT), ("bringup", "warm", states.PARKED), ("wake", "joined", states.JOINED),
    ("readmit", "hot", states.HOT), ("readmit", "warm", states.PARKED), ("readmit", None, None),
    ("park", None, states.PARKED), ("rollback", None, states.PARKED), ("hold", None, states.HOT),
    ("resume", None, states.JOINED), ("drain", None, states.DRAINING), ("revalidate", None, states.HOT),
    ("requeue", None, None), ("reserve", None, None),
])
def test_expected_state_by_kind_and_tier(kind, tier, state):
    assert kinds.expected_state(act(kind, target_tier=tier)) == state


def test_a_joined_target_comes_up_schedulable_whatever_the_kind():
    for kind in ("bringup", "wake"):
        _playbook, extra = kinds.playbook_for(act(kind, target_tier="joined"))
        assert extra["gpufleet_bringup_hold"] is False and extra["gpufleet_wake_resume"] is True
    assert kinds.playbook_for(act("bringup"))[1]["gpufleet_bringup_hold"] is True
    assert "gpufleet_wake_resume" not in kinds.playbook_for(act("wake"))[1]


def test_park_and_hold_variables():
    assert kinds.playbook_for(act("hold"))[1]["gpufleet_park_power_off"] is False
    assert kinds.playbook_for(act("rollback"))[1]["gpufleet_park_power_off"] is True
    assert kinds.playbook_for(act("rollback"))[0] == "park"
    assert kinds.playbook_for(act("park", target_tier=kinds.SLURM_SUSPENDED))[1]["gpufleet_park_drain"] is False
    # bring up then park: the park's variables are the park playbook's defaults
    assert "gpufleet_park_power_off" not in kinds.playbook_for(act("bringup", target_tier="warm"))[1]
