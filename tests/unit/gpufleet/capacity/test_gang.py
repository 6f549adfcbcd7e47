"""Gangs: all or nothing, exactly the reserved nodes, substitution, rollback, bookkeeping."""
from dataclasses import replace

import pytest

from gpufleet.capacity.gangbook import fold
from gpufleet.capacity.model import Action
from gpufleet.capacity.model import (COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM,
                                     GangMember)

from tests.unit.gpufleet.capacity.fleet_factory import (NOW, by_kind, flight, gang, job, kinds,
                                                        make_policy, node, nodes, run)

POLICY = make_policy(gang_deadline="30m", estimates={"warm": "5m", "cold": "20m"})


def test_all_hot_reserves_and_admits_exactly_those_nodes():
    result = run(POLICY, nodes(HOT, 5), [job(1, size=4)])
    assert kinds(result) == ["reserve", "admit"]
    reserve, admit = result.actions
    assert reserve.nodes == admit.nodes == tuple(f"p-hot-{i:02d}" for i in range(4))
    assert reserve.gang_id == admit.gang_id == f"1@{int(NOW)}"
    assert reserve.deadline_at == NOW + 1800


def test_fastest_tiers_first_and_members_get_their_own_deadlines():
    result = run(POLICY, nodes(HOT, 1) + nodes(WARM, 1) + nodes(COLD, 3), [job(1, size=3)])
    assert kinds(result) == ["reserve", "wake", "bringup"]
    reserve, wake, bringup = result.actions
    assert reserve.nodes == ("p-hot-00", "p-warm-00", "p-cold-00")
    assert (wake.deadline_at, bringup.deadline_at) == (NOW + 300, NOW + 1200)
    assert {wake.gang_id, bringup.gang_id} == {reserve.gang_id}


def test_tiers_that_cannot_make_the_deadline_are_not_used():
    policy = make_policy(gang_deadline="10m", estimates={"warm": "5m", "cold": "20m"})
    result = run(policy, nodes(HOT, 1) + nodes(COLD, 5), [job(1, size=2)])
    assert result.actions == ()
    assert "within the gang deadline" in result.notes["p"]["gang_waiting"][0]


def test_not_enough_free_nodes_reserves_nothing():
    result = run(POLICY, nodes(HOT, 1) + nodes("busy", 5), [job(1, size=4)])
    assert result.actions == ()
    assert result.notes["p"]["gang_waiting"]


def test_enough_idle_nodes_left_to_slurm():
    result = run(POLICY, nodes(IDLE, 4) + nodes(HOT, 4), [job(1, size=4)])
    assert "reserve" not in kinds(result)


def test_reserved_nodes_are_not_given_to_other_demand():
    members = tuple(f"p-hot-{i:02d}" for i in range(2))
    hot = nodes(HOT, 2) + nodes(WARM, 2)
    result = run(POLICY, hot + nodes(PROVISIONING, 1), [job(1, size=3), job(2)],
                 gangs=[gang("g", 1, members + ("p-provisioning-00",))])
    assert by_kind(result, "resume") == []
    assert [a.nodes for a in by_kind(result, "wake")] == [("p-warm-00",)]


def _members(count, tier=HOT, **fields):
    return nodes(tier, count, **fields)


def test_admit_when_all_members_hot():
    member_nodes = _members(3)
    result = run(POLICY, member_nodes, [job(1, size=3)],
                 gangs=[gang("g", 1, [n.node for n in member_nodes])])
    assert kinds(result) == ["admit"]
    assert result.actions[0].nodes == tuple(n.node for n in member_nodes)


def test_no_admit_while_a_member_is_on_its_way():
    member_nodes = _members(2) + _members(1, PROVISIONING)
    result = run(POLICY, member_nodes, [job(1, size=3)],
                 gangs=[gang("g", 1, [n.node for n in member_nodes])])
    assert result.actions == ()


# A member in trouble: (name, member node, spares, expected kinds, substitute's spare)
TROUBLE = [
    ("failed member, hot spare", node("m2", UNAVAILABLE, consecutive_failures=1),
     nodes(HOT, 1), ["substitute"], "p-hot-00"),
    ("failed member, warm spare", node("m2", UNAVAILABLE), nodes(WARM, 1),
     ["substitute", "wake"], "p-warm-00"),
    ("late member, cold spare", node("m2", PROVISIONING, state="validating"), nodes(COLD, 1),
     ["substitute", "bringup"], "p-cold-00"),
]


@pytest.mark.parametrize("name,bad,spares,expected,spare", TROUBLE, ids=[t[0] for t in TROUBLE])
def test_substitute_a_member_in_trouble(name, bad, spares, expected, spare):
    members = (node("m0", HOT), node("m1", HOT), bad)
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW + 1500,
                  member_deadline=NOW - 1)]
    result = run(POLICY, members + spares, [job(1, size=3)], gangs=gangs)
    assert kinds(result) == expected
    sub = result.actions[0]
    assert (sub.nodes, sub.replaces, sub.gang_id) == ((spare,), "m2", "g")
    assert "admit" not in kinds(result)


def test_a_member_waking_past_its_gate_is_not_replaced_while_its_wake_runs():
    """The lab's gang benchmark: woken members re-gated, ready, Slurm still saying DOWN (the
    tier reads unavailable) and past their own deadline; a cold spare would take minutes more."""
    members = (node("m0", HOT), node("m1", HOT), node("m2", UNAVAILABLE, state="ready"))
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW + 1500, member_deadline=NOW - 1)]
    waking = [flight("wake", "m2")]
    assert run(POLICY, members + nodes(COLD, 1), [job(1, size=3)], waking, gangs).actions == ()
    # once its wake has ended and it is still unavailable, it is in trouble
    assert "substitute" in kinds(run(POLICY, members + nodes(COLD, 1), [job(1, size=3)], (), gangs))
    # a member still validating when its deadline passes is replaced, in flight or not
    late = (node("m0", HOT), node("m1", HOT), node("m2", PROVISIONING, state="validating"))
    assert "substitute" in kinds(run(POLICY, late + nodes(COLD, 1), [job(1, size=3)], waking, gangs))


@pytest.mark.parametrize("state", ["RUNNING", "PENDING"])
def test_a_gang_whose_admission_is_under_way_is_left_to_it(state):
    # lab run: admit.yml had resumed the members and Slurm ran the job, the ledger still said
    # hot; the next pass rolled the starting gang back ("no longer pending")
    members = _members(3)
    jobs = [job(1, size=3, state=state)]
    admitting = Action(kind="admit", pool="p", nodes=tuple(n.node for n in members), reason="in flight",
                       gang_id="g", job_id="1")
    result = run(POLICY, members, jobs, in_flight=[admitting],
                 gangs=[gang("g", 1, [n.node for n in members], deadline_at=NOW - 1)])
    assert result.actions == ()


def test_substitution_off_rolls_back_although_a_spare_is_hot():
    policy = make_policy(gang_deadline="30m", estimates={"warm": "5m", "cold": "20m"},
                         gang_substitution=False)
    members = (node("m0", HOT), node("m1", HOT), node("m2", UNAVAILABLE, consecutive_failures=1))
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW + 1500)]
    result = run(policy, members + nodes(HOT, 1), [job(1, size=3)], gangs=gangs)
    assert kinds(result) == ["rollback"]
    assert "substitution is off" in result.actions[0].reason
    assert result.actions[0].nodes == ("m0", "m1")


def test_rollback_when_no_spare_can_make_the_deadline():
    members = (node("m0", HOT), node("m1", WARM), node("m2", UNAVAILABLE))
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW + 600)]
    result = run(POLICY, members + nodes(COLD, 2), [job(1, size=3)],
                 in_flight=[flight("wake", "m1", gang_id="g")], gangs=gangs)
    assert kinds(result) == ["rollback"]
    rollback = result.actions[0]
    assert rollback.nodes == ("m0", "m1") and rollback.target_tier == WARM
    assert "not enough spares (needs 1)" in rollback.reason


@pytest.mark.parametrize("name,deadline,jobs,words", [
    ("deadline passed", NOW - 1, [job(1, size=2)], "gang deadline passed with 1 of 2 hot"),
    ("job gone", NOW + 600, [], "no longer pending"),
    ("job running", NOW + 600, [job(1, size=2, state="RUNNING")], "no longer pending"),
])
def test_rollback(name, deadline, jobs, words):
    members = (node("m0", HOT), node("m1", PROVISIONING))
    result = run(POLICY, members, jobs, gangs=[gang("g", 1, ["m0", "m1"], deadline_at=deadline)])
    assert kinds(result) == ["rollback"]
    assert words in result.actions[0].reason
    assert result.actions[0].nodes == ("m0", "m1")


def test_member_held_back_by_the_limit_starts_later():
    members = (node("m0", HOT), node("m1", WARM))
    result = run(POLICY, members, [job(1, size=2)], gangs=[gang("g", 1, ["m0", "m1"])])
    assert [(a.kind, a.nodes, a.gang_id) for a in result.actions] == [("wake", ("m1",), "g")]


@pytest.mark.parametrize("state,words", [("parked", "member waiting to start: waking parked m1, due by"),
                                         ("hot", "member waiting to start: re-gating hot m1 (gate expired), due by")])
def test_a_waiting_member_s_wake_says_what_it_does(state, words):
    # a hot member whose gate expired while it waited reads warm (tiers.classify): its wake re-gates it
    members = (node("m0", HOT), node("m1", WARM, state=state))
    result = run(POLICY, members, [job(1, size=2)], gangs=[gang("g", 1, ["m0", "m1"])])
    assert [(a.kind, a.nodes) for a in result.actions] == [("wake", ("m1",))]
    assert words in result.actions[0].reason, result.actions[0].reason


def test_a_new_gang_s_hot_node_with_an_expired_gate_is_re_gated_not_woken():
    result = run(POLICY, nodes(HOT, 1) + (node("p-stale-00", WARM, state="hot"),), [job(1, size=2)])
    assert kinds(result) == ["reserve", "wake"]
    assert "re-gating hot p-stale-00 (gate expired)" in result.actions[1].reason, result.actions[1].reason


def test_gang_members_wait_for_the_concurrency_limit():
    policy = make_policy(gang_deadline="30m", max_concurrent_bringups=1,
                         estimates={"cold": "20m"})
    result = run(policy, nodes(COLD, 3), [job(1, size=3)])
    assert kinds(result) == ["reserve", "bringup"]
    assert result.notes["p"]["held_back"]


def test_fold_follows_a_gang_from_reserve_to_admit():
    first = run(POLICY, nodes(HOT, 1) + nodes(WARM, 1), [job(1, size=2)])
    gangs = fold((), first.actions)
    (g,), = [gangs]
    assert (g.size, g.job_id, g.pool) == (2, "1", "p")
    assert g.members == (GangMember("p-hot-00", NOW + 1800), GangMember("p-warm-00", NOW + 300))
    # the wake landed: both hot; the next pass admits and the gang ends
    later = NOW + 200
    both_hot = (node("p-hot-00", HOT), node("p-warm-00", HOT))
    second = run(POLICY, both_hot, [job(1, size=2)], gangs=gangs, now=later)
    assert kinds(second) == ["admit"]
    assert fold(gangs, second.actions) == ()


def test_fold_substitution_records_the_replaced_member():
    start = gang("g", 1, ["m0", "m1"])
    members = (node("m0", HOT), node("m1", UNAVAILABLE), node("s", HOT))
    result = run(POLICY, members, [job(1, size=2)], gangs=[start])
    (after,) = fold([start], result.actions)
    assert [m.node for m in after.members] == ["m0", "s"]
    assert after.replaced == ("m1",)


def test_fold_ignores_actions_of_unknown_gangs():
    action = replace(flight("admit", "x"), gang_id="nope")
    assert fold((), [action]) == ()


def test_gang_waits_rather_than_hoard_nodes_it_cannot_start():
    policy = make_policy(gang_deadline="30m", max_concurrent_bringups=3, estimates={"cold": "20m"})
    busy_pool = nodes(PROVISIONING, 2) + nodes(COLD, 4)
    result = run(policy, busy_pool, [job(1, size=2)])
    assert "reserve" not in kinds(result)
    assert "waiting for the concurrency limits" in result.notes["p"]["gang_waiting"][0]


def test_a_held_gang_job_keeps_its_gang():
    member_nodes = _members(2)
    result = run(POLICY, member_nodes, [job(1, size=2, reason="JobHeldAdmin")],
                 gangs=[gang("g", 1, [n.node for n in member_nodes])])
    assert kinds(result) == ["admit"]


def test_a_held_gang_job_gets_no_new_gang():
    result = run(POLICY, nodes(HOT, 2), [job(1, size=2, reason="JobHeldUser")])
    assert result.actions == ()


def test_rollback_releases_members_never_started():
    members = (node("m0", HOT), node("m1", COLD), node("m2", UNAVAILABLE))
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW - 1)]
    result = run(POLICY, members, [job(1, size=3)], gangs=gangs)
    assert kinds(result) == ["rollback"]
    assert result.actions[0].nodes == ("m0",)
    assert "1 member(s) back to warm, 2 released" in result.actions[0].reason


def test_two_members_in_trouble_and_one_spare_rolls_back_without_substituting():
    members = (node("m0", HOT), node("m1", UNAVAILABLE), node("m2", UNAVAILABLE))
    gangs = [gang("g", 1, ["m0", "m1", "m2"])]
    result = run(POLICY, members + nodes(HOT, 1), [job(1, size=3)], gangs=gangs)
    assert kinds(result) == ["rollback"]
    assert "not enough spares (needs 2)" in result.actions[0].reason


def test_two_members_in_trouble_both_substituted():
    members = (node("m0", HOT), node("m1", UNAVAILABLE), node("m2", UNAVAILABLE))
    gangs = [gang("g", 1, ["m0", "m1", "m2"])]
    result = run(POLICY, members + nodes(HOT, 1) + nodes(WARM, 1), [job(1, size=3)], gangs=gangs)
    assert [(a.kind, a.nodes, a.replaces) for a in result.actions] == [
        ("substitute", ("p-hot-00",), "m1"), ("substitute", ("p-warm-00",), "m2"),
        ("wake", ("p-warm-00",), None)]


def test_idle_nodes_are_held_for_a_gang_before_any_bring_up():
    # lab: a -N4 with 2 idle and 2 hot nodes reserved 2 cold ones and waited minutes for them
    result = run(POLICY, nodes(IDLE, 2) + nodes(HOT, 2) + nodes(COLD, 4), [job(1, size=4)])
    reserve = by_kind(result, "reserve")[0]
    holds = by_kind(result, "hold")
    assert set(reserve.nodes) == {"p-idle-00", "p-idle-01", "p-hot-00", "p-hot-01"}
    assert "2 hot, 2 idle" in reserve.reason
    assert sorted(h.nodes[0] for h in holds) == ["p-idle-00", "p-idle-01"]
    assert all(h.gang_id == reserve.gang_id and h.target_tier == HOT for h in holds)
    assert not by_kind(result, "bringup") and not by_kind(result, "admit")


def test_idle_nodes_pending_single_jobs_start_on_are_not_held_for_a_gang():
    singles = [job(10 + i, size=1) for i in range(2)]
    result = run(POLICY, nodes(IDLE, 2) + nodes(HOT, 2) + nodes(COLD, 4), [job(1, size=4)] + singles)
    reserve = by_kind(result, "reserve")[0]
    assert not any(n.startswith("p-idle") for n in reserve.nodes), reserve
    assert not by_kind(result, "hold")


def test_an_idle_node_running_part_of_a_job_is_never_held_for_a_gang():
    mixed = (node("p-idle-00", IDLE, jobs=("99",)),)
    result = run(POLICY, mixed + nodes(HOT, 3), [job(1, size=4)])
    assert not by_kind(result, "hold") and "reserve" not in kinds(result)


def test_a_held_member_gets_its_own_deadline_in_the_gang():
    result = run(POLICY, nodes(IDLE, 1) + nodes(HOT, 1), [job(1, size=2)])
    gangs = fold((), result.actions)
    member = next(m for m in gangs[0].members if m.node == "p-idle-00")
    assert member.deadline_at == NOW + 300    # the warm estimate: 5m


def _late_gang(deadline_at=NOW + 1500):
    """Two hot members and two whose wakes (re-gating) run past their own deadline: the lab's
    gang benchmark of 2026-11-25 (four wakes and a bring-up at once on 2 cores)."""
    members = (node("m0", HOT), node("m1", HOT), node("m2", PROVISIONING, state="validating"),
               node("m3", PROVISIONING, state="validating"))
    gangs = [gang("g", 1, ["m0", "m1", "m2", "m3"], deadline_at=deadline_at, member_deadline=NOW - 21)]
    return members, gangs, [flight("wake", "m2", gang_id="g"), flight("wake", "m3", gang_id="g")]


def test_late_members_still_on_their_way_are_waited_for_when_no_spare_is_left():
    """It rolled the whole gang back ("not enough spares (needs 3)") 21 s after the members'
    own deadline, with 20 minutes of gang deadline left; the wakes ended fine moments later."""
    members, gangs, waking = _late_gang()
    result = run(POLICY, members, [job(1, size=4)], waking, gangs)
    assert kinds(result) == []
    assert "waiting for m2, m3 (past its own deadline, still on its way" in str(result.notes), result.notes


def test_late_members_get_the_spares_there_are_and_the_rest_are_waited_for():
    members, gangs, waking = _late_gang()
    result = run(POLICY, members + nodes(HOT, 1), [job(1, size=4)], waking, gangs)
    assert [(a.kind, a.nodes, a.replaces) for a in result.actions] == [("substitute", ("p-hot-00",), "m2")]
    assert "waiting for m2, m3" not in str(result.notes)


def test_a_failed_member_gets_the_spare_before_a_late_one():
    members = (node("m0", HOT), node("m1", UNAVAILABLE, consecutive_failures=1),
               node("m2", PROVISIONING, state="validating"))
    gangs = [gang("g", 1, ["m0", "m1", "m2"], deadline_at=NOW + 1500, member_deadline=NOW - 1)]
    result = run(POLICY, members + nodes(HOT, 1), [job(1, size=3)], [flight("wake", "m2", gang_id="g")], gangs)
    assert [(a.kind, a.replaces) for a in result.actions] == [("substitute", "m1")]
    # with no spare at all, the failed member rolls the gang back as before
    assert kinds(run(POLICY, members, [job(1, size=3)], [flight("wake", "m2", gang_id="g")], gangs)) == ["rollback"]


def test_late_members_are_not_waited_for_past_the_gang_deadline():
    members, gangs, waking = _late_gang(deadline_at=NOW - 1)
    result = run(POLICY, members, [job(1, size=4)], waking, gangs)
    assert kinds(result) == ["rollback"] and "gang deadline passed with 2 of 4 hot" in result.actions[0].reason
