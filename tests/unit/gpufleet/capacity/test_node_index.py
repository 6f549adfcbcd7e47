"""A NodeIndex kept between passes gives exactly the views and plans of sorting every node again,
whatever sequence of node changes, renames, bad inputs and gangs/in-flight work it sees."""
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.model import (BUSY, COLD, HOT, IDLE, PROVISIONING, TIERS, UNAVAILABLE,
                                     WARM, Demand, PlanInputError, Supply)
from gpufleet.capacity.node_index import NodeIndex
from gpufleet.capacity.planner import plan
from gpufleet.capacity.view import build_views

from tests.unit.gpufleet.capacity.fleet_factory import NOW, flight, gang, job, make_policy, node

POOLS = ("a", "b")
POLICY = make_policy(pools={"a": {"floors": {"hot": 2, "warm": 1}, "idle_time": "1m"},
                            "b": {"floors": {"hot": 1}, "park_to": "warm"}}, limit=6)
STATES = {UNAVAILABLE: ["failed", "decommissioned", "unreachable"], PROVISIONING: ["imaging", "waking"]}


@st.composite
def a_node(draw, name, pool):
    tier = draw(st.sampled_from(TIERS))
    extra = {"state": draw(st.sampled_from(STATES[tier]))} if tier in STATES else {}
    return node(name, tier, pool, **extra,
                since=NOW - draw(st.integers(0, 3600)), idle_since=NOW - draw(st.integers(0, 3600)),
                consecutive_failures=draw(st.integers(0, 3)),
                gang_id=draw(st.sampled_from([None, None, None, "g-ledger"])),
                jobs=("r",) if tier == BUSY else ())


@st.composite
def fleets(draw):
    """Nodes of pools a, b and one the policy does not know (z), in no particular order."""
    size = draw(st.integers(0, 40))
    names = [f"{draw(st.sampled_from(POOLS + ('z',)))}-{i:02d}" for i in range(size)]
    return [draw(a_node(name, name[0])) for name in draw(st.permutations(names))]


@st.composite
def next_fleet(draw, nodes):
    """The next pass's nodes: a few changed, all rebuilt equal, renamed, grown or one bad."""
    kind = draw(st.sampled_from(["few", "few", "few", "same", "many", "copies", "rename",
                                 "grow", "bad"]))
    event(f"change: {kind}")
    nodes = list(nodes)
    if not nodes or kind == "grow":
        return nodes + [draw(a_node(f"b-new{len(nodes)}", "b"))]
    if kind == "same":
        return nodes
    if kind == "copies":
        return [replace(n) for n in nodes]
    positions = range(len(nodes))
    if kind == "rename":
        i = draw(st.sampled_from(positions))
        nodes[i] = replace(nodes[i], node=nodes[i].node + "x")
        return nodes
    if kind == "bad":
        i = draw(st.sampled_from(positions))
        nodes[i] = replace(nodes[i], tier="lukewarm")
        return nodes
    count = draw(st.integers(1, 2 if kind == "few" else len(nodes)))
    for i in draw(st.lists(st.sampled_from(positions), min_size=count, max_size=count)):
        nodes[i] = draw(a_node(nodes[i].node, nodes[i].pool))
    return nodes


@st.composite
def work(draw, nodes):
    """Gangs and in-flight operations over some of the nodes (as a pass would see them)."""
    free = [n for n in nodes if n.pool in POOLS and n.tier in (WARM, COLD, HOT, PROVISIONING)]
    gangs, in_flight = [], []
    for i, n in enumerate(free):
        pick = draw(st.integers(0, 5))
        if pick == 0:
            in_flight.append(flight(draw(st.sampled_from(["bringup", "wake", "park"])), n.node,
                                    n.pool))
        elif pick == 1:
            gangs.append(gang(f"g{i}", f"j{i}", [n.node], pool=n.pool))
    jobs = [job(f"{p}{i}", size=draw(st.sampled_from([1, 1, 2])), pool=p)
            for p in POOLS for i in range(draw(st.integers(0, 3)))]
    return Demand(tuple(jobs)), tuple(in_flight), tuple(gangs)


def _fresh(call):
    """-> ("ok", result) or ("refused", message): a bad input must fail the same both ways."""
    try:
        return "ok", call()
    except PlanInputError as exc:
        return "refused", str(exc)


def _naive_free(views, nodes):
    """Free lists the plain way: per pool and tier, sorted names neither reserved nor under way
    (busy ones always free; failed unavailable ones are retryable instead)."""
    for name, view in views.items():
        taken = view.reserved | view.in_flight
        mine = sorted((n for n in nodes if n.pool == name), key=lambda n: n.node)
        for tier in TIERS:
            want = [n.node for n in mine if n.tier == tier and (tier == BUSY or n.node not in taken)
                    and not (tier == UNAVAILABLE and n.state == "failed")]
            assert view.free.get(tier, []) == want
        assert view.retryable == [n.node for n in mine if n.tier == UNAVAILABLE
                                  and n.state == "failed" and n.node not in taken]
        counts = {t: sum(1 for n in mine if n.tier == t) for t in TIERS}
        assert dict(view.tiers) == (counts if mine else {})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_views_and_plans_with_a_kept_index_equal_a_full_sort(data):
    index = NodeIndex()
    nodes = data.draw(fleets())
    for step in range(data.draw(st.integers(1, 8))):
        if step:
            nodes = data.draw(next_fleet(nodes))
        demand, in_flight, gangs = data.draw(work(nodes))
        supply = Supply(tuple(nodes), in_flight, gangs)
        now = NOW + 60 * step
        kept = _fresh(lambda: build_views(POLICY, supply, index))
        assert kept == _fresh(lambda: build_views(POLICY, supply))
        if kept[0] == "ok":
            _naive_free(kept[1], nodes)
        assert _fresh(lambda: plan(demand, supply, POLICY, now, index=index)) == \
            _fresh(lambda: plan(demand, supply, POLICY, now))


def test_an_unchanged_tuple_is_not_sorted_again_and_a_changed_node_moves():
    index = NodeIndex()
    nodes = (node("a-1", WARM, "a"), node("a-2", WARM, "a"), node("a-3", HOT, "a"))
    first = index.update(nodes)
    assert index.update(nodes) is first
    moved = index.update((nodes[0], node("a-2", IDLE, "a"), nodes[2]))["a"]
    assert moved.buckets[WARM] == ["a-1"] and moved.buckets[IDLE] == ["a-2"]
    assert moved.tiers[IDLE] == 1 and moved.tiers[WARM] == 1


def test_the_views_cannot_write_into_the_index():
    index, nodes = NodeIndex(), (node("a-1", IDLE, "a"),)
    views = build_views(POLICY, Supply(nodes), index)
    with pytest.raises(TypeError):
        views["a"].nodes["a-2"] = node("a-2", IDLE, "a")
    views["a"].free[IDLE].pop()   # the pass's own copy
    assert index.update(nodes)["a"].buckets[IDLE] == ["a-1"]
    assert build_views(POLICY, Supply(nodes), index)["a"].free == {IDLE: ["a-1"]}


def test_a_bad_node_after_good_passes_is_refused_and_the_next_good_pass_plans():
    index = NodeIndex()
    good = tuple(node(f"a-{i}", WARM, "a") for i in range(20))
    index.update(good)
    bad = good[:5] + (replace(good[5], tier="lukewarm"),) + good[6:]
    with pytest.raises(PlanInputError, match="a-5 has tier 'lukewarm'"):
        build_views(POLICY, Supply(bad), index)
    assert build_views(POLICY, Supply(good), index) == build_views(POLICY, Supply(good))
