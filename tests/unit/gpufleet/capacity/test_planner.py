"""plan(): reactive, proactive, scale-down, bounds, break_fix, pool isolation, determinism."""
import random

import pytest

from gpufleet.capacity.model import (BUSY, COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM,
                                     Action, NodeView, PlanInputError)

from tests.unit.gpufleet.capacity.fleet_factory import (NOW, by_kind, flight, job, kinds,
                                                        make_policy, node, nodes, run)


def _summary(result):
    return [(a.kind, a.nodes) for a in result.actions]


# Reactive: (name, nodes, jobs, in-flight, expected (kind, nodes))
REACTIVE = [
    ("hot first", nodes(HOT, 2) + nodes(WARM, 2) + nodes(COLD, 2), [job(1)], (),
     [("resume", ("p-hot-00",))]),
    ("warm when no hot", nodes(WARM, 2) + nodes(COLD, 2), [job(1)], (),
     [("wake", ("p-warm-00",))]),
    ("cold when no hot or warm", nodes(COLD, 2), [job(1)], (),
     [("bringup", ("p-cold-00",))]),
    ("mixed tiers in order", nodes(HOT, 1) + nodes(WARM, 1) + nodes(COLD, 2),
     [job(1), job(2), job(3)], (),
     [("resume", ("p-hot-00",)), ("wake", ("p-warm-00",)), ("bringup", ("p-cold-00",))]),
    ("idle nodes serve it", nodes(IDLE, 1) + nodes(COLD, 2), [job(1)], (), []),
    ("idle serve some", nodes(IDLE, 1) + nodes(COLD, 2), [job(1), job(2)], (),
     [("bringup", ("p-cold-00",))]),
    ("provisioning counted", nodes(PROVISIONING, 1) + nodes(COLD, 2), [job(1)], (), []),
    ("in-flight wake counted", nodes(WARM, 2), [job(1)],
     (flight("wake", "p-warm-00"),), []),
    ("in-flight resume counted", nodes(HOT, 2), [job(1)],
     (flight("resume", "p-hot-00"),), []),
    # a hot node now beats a bring-up on its way (seconds, not minutes); the bring-up is a spare
    ("hot before a bring-up on its way", nodes(HOT, 1) + nodes(COLD, 2), [job(1)],
     (flight("bringup", "p-cold-00"),), [("resume", ("p-hot-00",))]),
    ("on the way before a new bring-up", nodes(COLD, 3), [job(1)],
     (flight("bringup", "p-cold-00"),), []),
    ("never more than needed", nodes(COLD, 10), [job(1), job(2)], (),
     [("bringup", ("p-cold-00",)), ("bringup", ("p-cold-01",))]),
    ("held jobs do not count", nodes(COLD, 2), [job(1, reason="JobHeldUser")], (), []),
    ("running jobs do not count", nodes(COLD, 2), [job(1, state="RUNNING")], (), []),
    ("no free node: nothing", nodes(BUSY, 2), [job(1)], (), []),
]


@pytest.mark.parametrize("name,node_list,jobs,in_flight,expected", REACTIVE,
                         ids=[r[0] for r in REACTIVE])
def test_reactive(name, node_list, jobs, in_flight, expected):
    result = run(make_policy(), node_list, jobs, in_flight)
    assert _summary(result) == expected
    for action in result.actions:
        assert action.job_id is not None and "pending" in action.reason


def test_shortfall_is_noted():
    result = run(make_policy(), nodes(BUSY, 1), [job(1)])
    assert "no free node" in result.notes["p"]["shortfall"][0]


# Proactive: floors filled from the fastest tier, in-flight work counted.
PROACTIVE = [
    ("hot floor from warm then cold", {"floors": {"hot": 2}}, nodes(WARM, 1) + nodes(COLD, 3), (),
     [("wake", ("p-warm-00",)), ("bringup", ("p-cold-00",))]),
    ("hot floor met", {"floors": {"hot": 2}}, nodes(HOT, 2) + nodes(COLD, 3), (), []),
    ("hot floor counts provisioning", {"floors": {"hot": 2}},
     nodes(HOT, 1) + nodes(PROVISIONING, 1) + nodes(COLD, 3), (), []),
    ("hot floor counts in-flight bring-up", {"floors": {"hot": 1}}, nodes(COLD, 3),
     (flight("bringup", "p-cold-00"),), []),
    ("warm floor from cold", {"floors": {"warm": 2}}, nodes(WARM, 1) + nodes(COLD, 3), (),
     [("bringup", ("p-cold-00",))]),
    ("warm floor counts in-flight park", {"floors": {"warm": 1}}, nodes(COLD, 3),
     (flight("park", "p-cold-00"),), []),
    ("both floors", {"floors": {"hot": 1, "warm": 1}}, nodes(WARM, 1) + nodes(COLD, 3), (),
     [("wake", ("p-warm-00",)), ("bringup", ("p-cold-00",))]),
    ("fewer nodes than floor", {"floors": {"hot": 5}}, nodes(COLD, 2), (),
     [("bringup", ("p-cold-00",)), ("bringup", ("p-cold-01",))]),
]


@pytest.mark.parametrize("name,pool,node_list,in_flight,expected", PROACTIVE,
                         ids=[r[0] for r in PROACTIVE])
def test_proactive(name, pool, node_list, in_flight, expected):
    result = run(make_policy(**pool), node_list, (), in_flight)
    assert _summary(result) == expected
    assert all("floor" in a.reason for a in result.actions)


def test_warm_floor_bringup_targets_warm():
    result = run(make_policy(floors={"warm": 1}), nodes(COLD, 1))
    assert [a.target_tier for a in result.actions] == [WARM]


def test_scheduled_floor_raises_hot_floor():
    window = {"name": "fri", "days": ["fri"], "start": "07:00", "end": "09:00",
              "floors": {"hot": 2}}
    result = run(make_policy(floors={"hot": 0}, schedules=[window]), nodes(COLD, 4))
    assert kinds(result) == ["bringup", "bringup"]
    assert "schedule:fri" in result.actions[0].reason
    assert result.notes["p"]["floors"]["won"]["hot"] == "schedule:fri"


def _idle(name, minutes, **fields):
    return node(name, IDLE, idle_since=NOW - minutes * 60, **fields)


# Scale-down: (name, pool settings, nodes, jobs, expected)
SCALE_DOWN = [
    ("not idle long enough", {"idle_time": "15m"}, (_idle("a", 10),), [], []),
    ("park when floors met", {"idle_time": "15m"}, (_idle("a", 20),), [], [("park", ("a",))]),
    ("hold to fill hot floor", {"idle_time": "15m", "floors": {"hot": 1}},
     (_idle("a", 20), _idle("b", 30)), [], [("hold", ("b",)), ("park", ("a",))]),
    ("park_to hot holds", {"idle_time": "15m", "park_to": "hot"}, (_idle("a", 20),), [],
     [("hold", ("a",))]),
    ("park_to warm parks", {"idle_time": "15m", "park_to": "warm", "floors": {"hot": 1}},
     (_idle("a", 20), node("h", HOT, since=NOW)), [], [("park", ("a",))]),
    ("never a node running a job", {"idle_time": "15m"},
     (_idle("a", 20, jobs=("9",)),), [], []),
    ("busy never parked", {"idle_time": "1m"}, (node("a", BUSY),), [], []),
    ("pending jobs keep idle nodes", {"idle_time": "15m"},
     (_idle("a", 20), _idle("b", 30)), [job(1)], [("park", ("b",))]),
    ("warm ceiling respected", {"idle_time": "15m", "ceilings": {"warm": 1}},
     (_idle("a", 20), _idle("b", 30), node("w", WARM)), [], []),
    ("hot ceiling: hold falls back to nothing", {"idle_time": "15m", "park_to": "hot",
                                                  "ceilings": {"hot": 0}},
     (_idle("a", 20),), [], []),
    ("stale hot above floor parked", {"idle_time": "15m", "floors": {"hot": 1}},
     (node("h1", HOT, since=NOW - 3600), node("h2", HOT, since=NOW - 1800)), [],
     [("park", ("h1",))]),
    ("hot at floor kept", {"idle_time": "15m", "floors": {"hot": 2}},
     (node("h1", HOT, since=NOW - 3600), node("h2", HOT, since=NOW - 1800)), [], []),
    ("hot above ceiling parked", {"idle_time": "1h", "ceilings": {"hot": 1}},
     (node("h1", HOT, since=NOW), node("h2", HOT, since=NOW - 60)), [],
     [("park", ("h2",))]),
]


@pytest.mark.parametrize("name,pool,node_list,jobs,expected", SCALE_DOWN,
                         ids=[r[0] for r in SCALE_DOWN])
def test_scale_down(name, pool, node_list, jobs, expected):
    result = run(make_policy(**pool), node_list, jobs)
    assert _summary(result) == expected
    for action in result.actions:
        assert action.target_tier == (HOT if action.kind == "hold" else WARM)


# Bounds: per-pool bring-ups and the fleet-wide limit, in-flight work spent first.
BOUNDS = [
    ("pool limit", {"max_concurrent_bringups": 2}, 100, (), 5, 2),
    ("pool limit counts in flight", {"max_concurrent_bringups": 2}, 100,
     (flight("bringup", "x-1"),), 5, 1),
    ("pool limit counts provisioning", {"max_concurrent_bringups": 2}, 100,
     nodes(PROVISIONING, 2), 5, 0),
    ("fleet limit", {"max_concurrent_bringups": 50}, 3, (), 5, 3),
    ("fleet limit counts parks", {"max_concurrent_bringups": 50}, 3,
     (flight("park", "x-1"), flight("park", "x-2")), 5, 1),
]


@pytest.mark.parametrize("name,pool,limit,extra,jobs,expected", BOUNDS, ids=[b[0] for b in BOUNDS])
def test_bounds(name, pool, limit, extra, jobs, expected):
    in_flight = tuple(a for a in extra if hasattr(a, "kind"))
    more_nodes = tuple(n for n in extra if hasattr(n, "tier"))
    result = run(make_policy(limit=limit, **pool), nodes(COLD, 10) + more_nodes,
                 [job(i) for i in range(jobs)], in_flight)
    assert len(by_kind(result, "bringup")) == expected
    if expected < jobs:
        assert result.notes["p"]["held_back"]


def test_fleet_limit_shared_across_pools_in_policy_order():
    policy = make_policy(pools={"a": {}, "b": {}}, limit=3)
    result = run(policy, nodes(COLD, 5, "a") + nodes(COLD, 5, "b"),
                 [job(i, pool="a") for i in range(2)] + [job(10 + i, pool="b") for i in range(2)])
    assert [a.pool for a in result.actions] == ["a", "a", "b"]


def test_break_fix_after_consecutive_failures():
    failed = (node("f1", UNAVAILABLE, consecutive_failures=2),
              node("f2", UNAVAILABLE, consecutive_failures=1))
    result = run(make_policy(), failed, [job(1)])
    assert _summary(result) == [("break_fix", ("f1",)), ("bringup", ("f2",))]
    assert "failed 2 times in a row (limit 2)" in result.actions[0].reason


def test_break_fix_limit_from_policy():
    failed = (node("f1", UNAVAILABLE, consecutive_failures=2),)
    result = run(make_policy(failures_before_break_fix=3), failed, [job(1)])
    assert _summary(result) == [("bringup", ("f1",))]


def test_a_pools_demand_never_takes_another_pools_nodes():
    policy = make_policy(pools={"a": {}, "b": {}})
    result = run(policy, nodes(BUSY, 1, "a") + nodes(HOT, 3, "b") + nodes(WARM, 3, "b"),
                 [job(1, pool="a")])
    assert result.actions == ()
    assert result.notes["a"]["shortfall"]


def test_unservable_jobs_reported_and_never_provisioned_for():
    result = run(make_policy(), nodes(COLD, 2), [job(1, size=3), job(2, partition="x")])
    assert result.actions == ()
    assert [u["job_id"] for u in result.notes["unservable"]] == ["1", "2"]


def _scenario(seed):
    rng = random.Random(seed)
    tiers = [BUSY, IDLE, HOT, WARM, COLD, PROVISIONING, UNAVAILABLE]
    node_list = tuple(node(f"p-{i:03d}", rng.choice(tiers), since=NOW - rng.randint(0, 7200),
                           consecutive_failures=rng.randint(0, 3))
                      for i in range(60))
    jobs = [job(i, size=rng.choice([1, 1, 1, 2, 4]), submit_time=NOW - rng.randint(0, 999))
            for i in range(15)]
    return node_list, jobs


@pytest.mark.parametrize("seed", range(5))
def test_deterministic_same_inputs_same_actions(seed):
    policy = make_policy(floors={"hot": 3, "warm": 4}, idle_time="1m", max_concurrent_bringups=5)
    node_list, jobs = _scenario(seed)
    first = run(policy, node_list, jobs)
    shuffled = list(node_list)
    random.Random(seed + 100).shuffle(shuffled)
    second = run(policy, shuffled, list(reversed(jobs)))
    assert first.actions == second.actions
    assert first.notes == second.notes
    assert first.actions, "the scenario should ask for something"


def test_idle_nodes_a_pending_gang_will_use_are_not_parked():
    idle = tuple(_idle(f"i{k}", 30) for k in range(3))
    result = run(make_policy(idle_time="15m"), idle, [job(1, size=2)])
    assert _summary(result) == [("park", ("i0",))]


@pytest.mark.parametrize("kind,floors,expected", [
    ("hold", {"hot": 1}, []),                 # a hold under way fills the hot floor
    ("rollback", {"warm": 1}, []),            # a rollback under way fills the warm floor
    ("park", {"warm": 1}, []),
    ("resume", {"hot": 1}, [("bringup", ("p-cold-00",))]),  # a resumed node leaves the hot tier
])
def test_in_flight_work_counts_toward_floors(kind, floors, expected):
    extra = {"gang_id": "g"} if kind == "rollback" else {}
    result = run(make_policy(floors=floors), nodes(COLD, 2) + (node("x", IDLE),),
                 in_flight=[flight(kind, "x", **extra)])
    assert _summary(result) == expected


# A bring-up whose run has ended but is not collected yet: the ledger already says hot. Under
# load the controller can plan in exactly that window; its nodes must serve the job now (the loop
# starts the admit once the run is collected, seconds later), not trigger cold bring-ups.
@pytest.mark.parametrize("kind", ["bringup", "wake"])
def test_an_ended_bring_up_whose_ledger_says_hot_serves_a_gang_without_cold_bring_ups(kind):
    hot = nodes(HOT, 2)
    in_flight = [flight(kind, n.node) for n in hot]
    result = run(make_policy(), hot + nodes(COLD, 2), [job(1, size=2)], in_flight)
    assert [(a.kind, a.nodes) for a in result.actions] == [
        ("reserve", ("p-hot-00", "p-hot-01")), ("admit", ("p-hot-00", "p-hot-01"))]
    assert "(2 hot)" in result.actions[0].reason


def test_an_ended_bring_up_still_counts_against_the_concurrency_limit():
    hot = nodes(HOT, 1)
    result = run(make_policy(max_concurrent_bringups=1), hot + nodes(COLD, 2), [job(1), job(2)],
                 [flight("bringup", "p-hot-00")])
    # the hot node serves one job; the other waits for the limit instead of a second bring-up
    assert _summary(result) == [("resume", ("p-hot-00",))]


def test_a_bring_up_whose_nodes_are_not_all_hot_yet_is_still_under_way():
    mixed = (node("p-a", HOT), node("p-b", PROVISIONING))
    result = run(make_policy(), mixed + nodes(COLD, 2), [job(1, size=2)],
                 [Action(kind="bringup", pool="p", nodes=("p-a", "p-b"), reason="in flight")])
    # p-a is hot but its run is still bringing up p-b: neither is free for the gang yet
    assert [a.nodes for a in by_kind(result, "reserve")] == [("p-cold-00", "p-cold-01")]


def test_forecast_from_history_raises_the_hot_floor_and_says_why():
    from gpufleet.capacity.forecast import WEEK
    from gpufleet.capacity.model import DemandSample
    forecast = {"enabled": True, "quantile": 1.0, "lookback_weeks": 2, "lead_time": "30m"}
    policy = make_policy(gpus_per_node=8, forecast=forecast)
    history = {"p": [DemandSample("p", NOW - week * WEEK + m * 60, gpus_running=16)
                     for week in (2, 1) for m in range(0, 30)]}
    result = run(policy, nodes(COLD, 4), history=history)
    assert _summary(result) == [("bringup", ("p-cold-00",)), ("bringup", ("p-cold-01",))]
    assert "(forecast)" in result.actions[0].reason
    assert result.notes["p"]["floors"]["forecast"]["forecast_nodes"] == 2


def test_gangs_take_hot_nodes_before_single_jobs():
    result = run(make_policy(), nodes(HOT, 2), [job(1, submit_time=NOW - 500), job(2, size=2)])
    assert kinds(result) == ["reserve", "admit"]
    assert result.notes["p"]["shortfall"]


def test_notes_count_supply_and_demand():
    result = run(make_policy(), nodes(BUSY, 2) + nodes(COLD, 1), [job(1), job(2, size=2)])
    notes = result.notes["p"]
    assert notes["supply"][BUSY] == 2 and notes["supply"][COLD] == 1
    assert notes["demand"] == {"pending_jobs": 2, "pending_gang_jobs": 1, "pending_nodes": 3}


def test_shortfall_says_when_the_limit_held_it_back():
    result = run(make_policy(max_concurrent_bringups=1), nodes(COLD, 3), [job(1), job(2)])
    assert kinds(result) == ["bringup"]
    assert "concurrency limit reached" in result.notes["p"]["shortfall"][0]


@pytest.mark.parametrize("node_list,words", [
    (nodes(COLD, 1) + nodes(COLD, 1), "is in the supply twice"),
    ((NodeView("x", "p", "lukewarm", "enrolled"),), "tier 'lukewarm'"),
])
def test_contradictory_inputs_are_refused(node_list, words):
    with pytest.raises(PlanInputError) as caught:
        run(make_policy(), node_list)
    assert words in str(caught.value) and "fix:" in str(caught.value)


def test_a_job_asking_for_no_nodes_is_unservable():
    result = run(make_policy(), nodes(COLD, 2), [job(1, size=0)])
    assert result.actions == ()
    assert "at least 1" in result.notes["unservable"][0]["reason"]


def test_holding_an_idle_node_spares_a_wake():
    result = run(make_policy(idle_time="15m", floors={"hot": 1}),
                 (_idle("a", 20),) + nodes(WARM, 2))
    assert _summary(result) == [("hold", ("a",))]


def test_parked_idle_node_counts_toward_the_warm_floor():
    result = run(make_policy(idle_time="15m", floors={"warm": 1}),
                 (_idle("a", 20),) + nodes(COLD, 2))
    assert _summary(result) == [("park", ("a",))]
