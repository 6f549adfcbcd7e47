"""Several passes against a tiny world that does what each action asks at once: the planner
converges (floors met, the gang admitted once, nothing provisioned twice) and then stays quiet."""
from collections import Counter
from dataclasses import replace

from gpufleet.capacity.gangbook import fold
from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, UNAVAILABLE, WARM

from tests.unit.gpufleet.capacity.fleet_factory import NOW, job, make_policy, nodes, run

# action -> (tier, ledger state) the node lands in
LANDS = {"bringup": (HOT, "hot"), "wake": (HOT, "hot"), "resume": (IDLE, "joined"),
         "admit": (BUSY, "joined"), "hold": (HOT, "hot"), "park": (WARM, "parked"),
         "rollback": (WARM, "parked"), "break_fix": (UNAVAILABLE, "break_fix")}


def _apply(world, actions, now):
    for action in actions:
        if action.kind not in LANDS:
            continue
        tier, state = LANDS[action.kind]
        if action.kind == "bringup" and action.target_tier == WARM:
            tier, state = WARM, "parked"
        for name in action.nodes:
            world[name] = replace(world[name], tier=tier, state=state, since=now,
                                  idle_since=now if tier == IDLE else None,
                                  jobs=(action.job_id,) if tier == BUSY else ())


def _loop(policy, world, jobs, passes, step=10.0):
    gangs, history = (), []
    for i in range(passes):
        now = NOW + i * step
        result = run(policy, tuple(world.values()), jobs, gangs=gangs, now=now)
        history.append(result.actions)
        gangs = fold(gangs, result.actions)
        _apply(world, result.actions, now)
        admitted = {a.job_id for a in result.actions if a.kind == "admit"}
        jobs = [j for j in jobs if j.job_id not in admitted]
    return history, world, gangs


def test_converges_and_goes_quiet():
    policy = make_policy(floors={"hot": 2, "warm": 2}, max_concurrent_bringups=3,
                         gang_deadline="1h", estimates={"cold": "30m"})
    world = {n.node: n for n in nodes(COLD, 10)}
    history, world, gangs = _loop(policy, world, [job("g1", size=3)], passes=8)
    tiers = Counter(n.tier for n in world.values())
    assert tiers[BUSY] == 3 and tiers[HOT] == 2 and tiers[WARM] == 2
    assert gangs == ()
    admits = [a for actions in history for a in actions if a.kind == "admit"]
    assert len(admits) == 1 and len(admits[0].nodes) == 3
    started = Counter(n for actions in history for a in actions
                      if a.kind in ("bringup", "wake") for n in a.nodes)
    assert max(started.values()) == 1, "nothing provisioned twice"
    assert history[-1] == () and history[-2] == ()
