"""Applying actions: latencies, tier changes, refusals, partial starts, gate failures, metrics.

The actions here come from a fixed script (time -> actions), not from a policy: these tests
check the simulator's bookkeeping exactly; test_planner_parity.py and test_known_answers.py
run the real planner.
"""
import pytest

from gpufleet.capacity.model import Action, Plan
from gpufleet.simulate.engine import Simulation
from gpufleet.simulate.latency import Latency
from gpufleet.simulate.trace import Trace

FIXED = {"hot": {"dist": "fixed", "seconds": 5}, "warm": {"dist": "fixed", "seconds": 120},
         "cold": {"dist": "fixed", "seconds": 600}, "recycle": {"dist": "fixed", "seconds": 300}}


def _trace(small, gang=None, step=60.0):
    gang = gang or [0] * len(small)
    return Trace("t", "gpus", tuple(step * i for i in range(len(small))), tuple(gang), tuple(small), step)


def _script(table):
    def plan(demand, supply, policy, now, history=None):
        return Plan(tuple(table.get(now, ())))
    return plan


def _sim(trace, script, nodes=2, **latency):
    return Simulation(trace, None, Latency(dict(FIXED, **latency)), "p", nodes, 8, interval=10.0, plan=_script(script))


def test_wake_then_resume_exact_wait_and_costs():
    sim = _sim(_trace([0, 8, 8, 8, 8, 8]), {60.0: [Action("wake", "p", ("p-1",), "t")],
                                            190.0: [Action("resume", "p", ("p-1",), "t")]})
    m = sim.run()
    # Submitted at 60; warm done at 180; the tick at 190 resumes; joined at 195, the job starts.
    assert m["shortfall_gpu_minutes"] == pytest.approx(8 * 135 / 60.0, abs=1e-3)
    assert m["shortfall_episodes"] == 1
    assert m["added_wait_p50_s"] == m["added_wait_p95_s"] == 135.0
    # Provisioning while waking (60-180), hot from 180 until the resume lands at 195.
    assert m["idle_powered_gpu_hours"] == {"idle": 0.0, "hot": round(8 * 15 / 3600.0, 3),
                                           "provisioning": round(8 * 120 / 3600.0, 3)}
    assert m["busy_gpu_hours"] == pytest.approx(8 * (360 - 195) / 3600.0, abs=1e-3)
    # p-2 stays warm all along; p-1 was warm 0-60.
    assert m["powered_off_node_hours"] == pytest.approx((360 + 60) / 3600.0, abs=1e-3)
    assert m["partial_starts"] == 0 and m["refused_actions"] == {}


def test_gang_admit_all_at_once_and_partial_refused():
    trace = _trace([0, 0, 0, 0, 0, 0], gang=[0, 16, 16, 16, 16, 16])
    script = {60.0: [Action("admit", "p", ("p-1",), "t", job_id="gang-1")],        # partial: 1 of 2
              120.0: [Action("admit", "p", ("p-1", "p-2"), "t", job_id="gang-1")]}
    sim = Simulation(trace, None, Latency(FIXED), "p", 2, 8, interval=10.0, initial_tier="hot", plan=_script(script))
    m = sim.run()
    job = sim.workload.find("gang-1")
    assert job.start == 125.0 and sorted(job.assigned) == ["p-1", "p-2"]
    assert m["partial_starts"] == 1
    assert m["refused_actions"] == {"admit: partial start: 1 distinct nodes for a 2-node job": 1}
    assert m["shortfall_gpu_minutes"] == pytest.approx(16 * 65 / 60.0, abs=1e-3)


def test_wrong_tier_is_refused_not_applied():
    sim = _sim(_trace([0, 0]), {0.0: [Action("resume", "p", ("p-1",), "t"), Action("wake", "p", ("nope",), "t")]})
    m = sim.run()
    assert m["refused_actions"] == {"resume: node tier not in hot": 1, "wake: node not in the pool": 1}
    assert sim.fleet.counts["warm"] == 2


def test_failed_bringup_becomes_unavailable_then_cold():
    sim = _sim(_trace([0] * 20), {0.0: [Action("bringup", "p", ("p-1",), "t")]}, gate_failure=0.999999)
    sim.fleet.set_tier(sim.fleet.by_name["p-1"], "cold", 0.0)
    m = sim.run()
    node = sim.fleet.by_name["p-1"]
    # Imaging 0-600, failed 600-900 (recycle), cold again after.
    assert node.tier == "cold" and node.failures == 1
    assert sim.metrics.tier_seconds["unavailable"] == pytest.approx(300.0)
    assert m["actions"] == {"bringup": 1}


def test_bringup_retries_a_failed_node_as_the_planner_asks():
    # The planner retries failed nodes (below the break_fix limit) as cold once no cold node is
    # left (scheduled.yml on a pool of 26 nodes): the simulator must re-image it, not refuse it.
    sim = _sim(_trace([0] * 30), {0.0: [Action("bringup", "p", ("p-1",), "t")],
                                  720.0: [Action("bringup", "p", ("p-1",), "t")]}, gate_failure=0.5)
    sim.fleet.set_tier(sim.fleet.by_name["p-1"], "cold", 0.0)
    sim.latency.gate_fails = iter([True, False]).__next__      # the first gate fails, the retry passes
    m = sim.run()
    node = sim.fleet.by_name["p-1"]
    assert m["refused_actions"] == {} and m["actions"] == {"bringup": 2}
    # failed at 600, retried at 720 (its recycle at 900 cancelled), hot at 1320
    assert node.tier == "hot" and node.failures == 0 and node.since == 1320.0
    assert sim.metrics.tier_seconds["unavailable"] == pytest.approx(120.0)


def test_park_counts_a_power_cycle():
    sim = _sim(_trace([0] * 1440), {0.0: [Action("park", "p", ("p-1",), "t")]}, nodes=2)
    sim.fleet.set_tier(sim.fleet.by_name["p-1"], "hot", 0.0)
    m = sim.run()
    assert m["power_offs"] == 1
    assert m["power_cycles_per_node_day"] == pytest.approx(0.5)      # 1 power-off / 2 nodes / 1 day


def test_rollback_releases_every_member_and_parks_only_the_named():
    from gpufleet.capacity.model import Action as A
    script = {0.0: [A("reserve", "p", ("p-1", "p-2"), "t", gang_id="g1", job_id="x")],
              60.0: [A("rollback", "p", ("p-1",), "t", gang_id="g1", target_tier="warm")]}
    sim = _sim(_trace([0, 0, 0]), script)
    sim.fleet.set_tier(sim.fleet.by_name["p-1"], "hot", 0.0)
    m = sim.run()
    one, two = sim.fleet.by_name["p-1"], sim.fleet.by_name["p-2"]
    assert (one.tier, one.gang_id, two.tier, two.gang_id) == ("warm", None, "warm", None)
    assert m["power_offs"] == 1 and m["refused_actions"] == {}
    # A rollback naming no node only releases; any other kind naming none is refused.
    sim = _sim(_trace([0, 0]), {0.0: [A("reserve", "p", ("p-2",), "t", gang_id="g2", job_id="y"),
                                      A("rollback", "p", (), "t", gang_id="g2"), A("wake", "p", (), "t")]})
    m = sim.run()
    assert sim.fleet.by_name["p-2"].gang_id is None and m["refused_actions"] == {"wake: names no node": 1}
