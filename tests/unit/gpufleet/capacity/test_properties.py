"""Properties of plan() on generated fleets: never part of a gang, never over a concurrency
limit, never a busy node parked or held, never under the hot floor by scale-down, never
another pool's node, never two actions for one node."""
from collections import Counter

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.model import (BOUNDED_KINDS, BRINGUP_KINDS, BUSY, COLD, HOT, IDLE,
                                     PROVISIONING, UNAVAILABLE, WARM, Demand, Supply)
from gpufleet.capacity.planner import plan

from tests.unit.gpufleet.capacity.fleet_factory import NOW, flight, gang, job, make_policy, node

TIERS = [BUSY, IDLE, HOT, WARM, COLD, PROVISIONING, UNAVAILABLE]
POOLS = ("a", "b")


@st.composite
def pool_settings(draw):
    hot_floor = draw(st.integers(0, 4))
    hot_ceiling = draw(st.one_of(st.none(), st.integers(hot_floor, 8)))
    return {"floors": {"hot": hot_floor, "warm": draw(st.integers(0, 4))},
            "ceilings": {"hot": hot_ceiling},
            "max_concurrent_bringups": draw(st.integers(1, 5)),
            "park_to": draw(st.sampled_from(["auto", "hot", "warm"])),
            "idle_time": draw(st.sampled_from(["1m", "10m"])),
            "gang_deadline": draw(st.sampled_from(["5m", "1h"])),
            "estimates": {"warm": "4m", "cold": draw(st.sampled_from(["3m", "30m"]))}}


@st.composite
def scenarios(draw):
    policy = make_policy(pools={p: draw(pool_settings()) for p in POOLS},
                         limit=draw(st.integers(1, 8)))
    node_list = []
    for pool in POOLS:
        for i in range(draw(st.integers(0, 14))):
            tier = draw(st.sampled_from(TIERS))
            node_list.append(node(f"{pool}-{i:02d}", tier, pool,
                                  since=NOW - draw(st.integers(0, 3600)),
                                  idle_since=NOW - draw(st.integers(0, 3600)),
                                  consecutive_failures=draw(st.integers(0, 3)),
                                  jobs=("r",) if tier == BUSY or draw(st.booleans()) and
                                  tier == IDLE else ()))
    jobs = [job(f"{pool}{i}", size=draw(st.sampled_from([1, 1, 2, 3, 4])), pool=pool,
                submit_time=NOW - draw(st.integers(0, 600)))
            for pool in POOLS for i in range(draw(st.integers(0, 6)))]
    gangs = _gangs(draw, node_list, jobs)
    in_flight = [flight(draw(st.sampled_from(["bringup", "wake", "park", "resume"])), n.node,
                        n.pool)
                 for n in node_list if n.tier in (COLD, WARM) and draw(st.integers(0, 5)) == 0]
    return policy, tuple(node_list), jobs, tuple(in_flight), gangs


def _gangs(draw, node_list, jobs):
    """Some pending gang jobs already have a gang on free nodes of their pool."""
    gangs, used = [], set()
    for candidate in jobs:
        if candidate.nodes < 2 or not draw(st.booleans()):
            continue
        free = [n.node for n in node_list if n.pool == candidate.partition and n.node not in used
                and n.tier in (HOT, WARM, COLD, PROVISIONING, UNAVAILABLE)]
        if len(free) < candidate.nodes:
            continue
        members = free[:candidate.nodes]
        used.update(members)
        gangs.append(gang(f"g{candidate.job_id}", candidate.job_id, members,
                          pool=candidate.partition,
                          deadline_at=NOW + draw(st.integers(-60, 3600)),
                          member_deadline=NOW + draw(st.integers(-60, 600))))
    return tuple(gangs)


def _check_gangs(result, by_name, jobs, gangs):
    sizes = {j.job_id: j.nodes for j in jobs}
    members = {g.gang_id: tuple(m.node for m in g.members) for g in gangs}
    taken = {n for nodes in members.values() for n in nodes}
    for action in result.actions:
        if action.kind == "reserve":
            assert not taken & set(action.nodes), "a node in two gangs"
            taken |= set(action.nodes)
            members[action.gang_id] = action.nodes
            assert len(action.nodes) == sizes[action.job_id]
    ended = Counter(a.gang_id for a in result.actions if a.kind in ("admit", "rollback"))
    assert all(count == 1 for count in ended.values()), "a gang ends once: admit or rollback"
    for action in result.actions:
        if action.kind != "admit":
            continue
        assert action.nodes == members[action.gang_id], "admit on exactly the members"
        assert len(action.nodes) == sizes[action.job_id], "never part of a gang"
        assert all(by_name[n].tier == HOT for n in action.nodes), "admit only hot nodes"


def _check_limits(result, policy, by_name, in_flight):
    for pool in POOLS:
        before = {n for n, v in by_name.items() if v.pool == pool and v.tier == PROVISIONING}
        before |= {a.nodes[0] for a in in_flight if a.pool == pool and a.kind in BRINGUP_KINDS}
        new = sum(1 for a in result.actions if a.pool == pool and a.kind in BRINGUP_KINDS)
        limit = policy.pools[pool].max_concurrent_bringups
        assert new == 0 or len(before) + new <= limit
    fleet_before = {n for n, v in by_name.items() if v.tier == PROVISIONING}
    fleet_before |= {a.nodes[0] for a in in_flight if a.kind in BOUNDED_KINDS}
    new = sum(1 for a in result.actions if a.kind in BOUNDED_KINDS)
    assert new == 0 or len(fleet_before) + new <= policy.fleet.concurrency_limit


def _check_scale_down(result, by_name, gangs, in_flight):
    reserved = {m.node for g in gangs for m in g.members}
    for action in result.actions:
        if action.kind in ("park", "hold"):
            target = by_name[action.nodes[0]]
            assert target.tier in (IDLE, HOT) and not target.jobs, "never a busy node"
    for pool in POOLS:
        hot = [n for n, v in by_name.items() if v.pool == pool and v.tier == HOT
               and n not in reserved]
        gone = {n for a in result.actions if a.pool == pool and a.kind in
                ("resume", "reserve", "park") for n in a.nodes}
        parked_hot = [a for a in result.actions if a.kind == "park" and a.pool == pool
                      and by_name[a.nodes[0]].tier == HOT]
        if not parked_hot:
            continue
        coming = sum(1 for v in by_name.values() if v.pool == pool and v.tier == PROVISIONING
                     and v.node not in reserved)
        coming += sum(1 for a in result.actions if a.pool == pool and a.kind in BRINGUP_KINDS
                      and a.gang_id is None and a.target_tier == HOT)
        coming += sum(1 for a in result.actions if a.pool == pool and a.kind == "hold")
        coming += len({a.nodes[0] for a in in_flight if a.pool == pool
                       and a.kind in BRINGUP_KINDS and a.target_tier != WARM
                       and by_name[a.nodes[0]].tier != PROVISIONING})
        floor = result.notes[pool]["floors"]["floors"]["hot"]
        assert len([n for n in hot if n not in gone]) + coming >= floor


def _check_one_action_per_node(result, by_name):
    plain = Counter(n for a in result.actions
                    if a.kind not in ("reserve", "admit", "substitute") for n in a.nodes)
    assert all(count == 1 for count in plain.values()), plain
    for action in result.actions:
        assert all(by_name[n].pool == action.pool for n in action.nodes), "own pool only"
        assert action.reason


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_plan_properties(scenario):
    policy, node_list, jobs, in_flight, gangs = scenario
    result = plan(Demand(tuple(jobs)), Supply(node_list, in_flight, gangs), policy, NOW)
    by_name = {n.node: n for n in node_list}
    for kind in sorted({a.kind for a in result.actions}):
        event(kind)   # --hypothesis-show-statistics: how often each kind was exercised
    _check_gangs(result, by_name, jobs, gangs)
    _check_limits(result, policy, by_name, in_flight)
    _check_scale_down(result, by_name, gangs, in_flight)
    _check_one_action_per_node(result, by_name)
