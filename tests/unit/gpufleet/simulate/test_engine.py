"""One planning function: the simulator hands plan() the inputs the controller would and
applies exactly the actions plan() returns, in order."""
import copy

from gpufleet.capacity.node_index import NodeIndex
from gpufleet.capacity.planner import plan
from gpufleet.capacity.tiers import classify
from gpufleet.simulate import actions as sim_actions
from gpufleet.simulate.engine import Simulation, default_plan
from tests.unit.gpufleet.simulate.conftest import policy, trace

BODY = """    floors: {hot: 1}
    idle_time: 10m
    park_to: auto
    gate_validity: 1h
"""
# Single-node demand and gangs rising and falling over an hour.
SMALL = [0, 8, 8, 24, 24, 8, 0, 0, 16, 16] * 6 + [0] * 30   # then quiet: idle nodes park
GANG = [0, 0, 16, 16, 32, 32, 0, 0, 0, 24] * 6 + [0] * 30
# What Slurm reports for a node of each tier (the controller passes it to tiers.classify).
SLURM = {"busy": "allocated", "idle": "idle", "hot": "idle+drain", "warm": None, "cold": None,
         "provisioning": None, "unavailable": None}


def test_step_returns_and_applies_exactly_what_plan_returns(fixed, monkeypatch):
    pol = policy(BODY)
    applied, calls = [], []

    def recording_plan(demand, supply, policy_, now, history=None):
        calls.append((demand, supply, now, copy.deepcopy(history)))
        return plan(demand, supply, policy_, now, history=history)

    monkeypatch.setattr(sim_actions, "apply", _recorder(applied, sim_actions.apply))
    sim = Simulation(trace(SMALL, GANG), pol, fixed(gate_failure=0.2), "gpu", 12, 8, interval=10.0, plan=recording_plan)
    metrics = sim.run()
    assert len(calls) == metrics["planning_passes"] > len(SMALL)
    # plan() called directly on the very inputs the simulator built gives the same actions, and
    # those are exactly the actions the simulator applied, in order.
    direct = []
    for demand, supply, now, history in calls:
        direct.extend((now, action) for action in plan(demand, supply, pol, now, history=history).actions)
    assert direct == applied and len(applied) > 20
    assert {a.kind for _, a in applied} >= {"wake", "resume", "reserve", "admit", "park"}
    assert metrics["partial_starts"] == 0 and metrics["refused_actions"] == {}


def test_the_default_plan_keeps_a_node_index_and_runs_exactly_as_plain_plan(fixed, monkeypatch):
    pol = policy(BODY)
    runs = []
    for chosen in (None, plan):
        applied = []
        monkeypatch.setattr(sim_actions, "apply", _recorder(applied, sim_actions.apply))
        sim = Simulation(trace(SMALL, GANG), pol, fixed(gate_failure=0.2), "gpu", 12, 8, interval=10.0, plan=chosen)
        runs.append((sim.run(), applied))
        monkeypatch.undo()
    assert isinstance(default_plan().keywords["index"], NodeIndex)
    assert runs[0] == runs[1] and len(runs[0][1]) > 20


def _recorder(applied, real_apply):
    def record_apply(sim, action, now):
        applied.append((now, action))
        return real_apply(sim, action, now)
    return record_apply


def test_node_views_are_what_the_controller_would_classify(fixed):
    pol = policy(BODY)
    seen = []

    def checking_plan(demand, supply, policy_, now, history=None):
        for view in supply.nodes:
            tier, why = classify(view.state, SLURM[view.tier] if view.tier in ("busy", "idle") or view.state == "hot" else None,
                                 gate_passed_at=view.gate_passed_at, gate_validity=3600.0, now=now, jobs=view.jobs)
            seen.append((view.tier, tier, view.node, now, why))
        return plan(demand, supply, policy_, now, history=history)

    Simulation(trace(SMALL, GANG), pol, fixed(), "gpu", 12, 8, interval=10.0, plan=checking_plan).run()
    mismatched = [s for s in seen if s[0] != s[1]]
    assert seen and not mismatched, mismatched[:5]
    assert {"warm", "hot", "busy", "provisioning"} <= {s[0] for s in seen}


def test_history_is_the_controllers_demand_record(fixed):
    sim = Simulation(trace([8, 8, 0]), policy(BODY), fixed(), "gpu", 2, 8, prior=[(-60.0, 5)])
    sim.run()
    samples = sim.history["gpu"]
    assert [(s.minute, s.gpus) for s in samples] == [(-60.0, 5), (0.0, 8), (60.0, 8), (120.0, 0)]
    assert [s.gpus_pending for s in samples[1:]] == [0, 0, 0]   # the first sample's demand runs at once
