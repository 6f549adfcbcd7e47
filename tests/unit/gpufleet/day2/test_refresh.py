"""Refresh rollouts: canaries first, batches in budget, halt + rollback, never mid-job."""
import pytest

from gpufleet.capacity.model import BUSY, IDLE, Job, NodeView
from gpufleet.capacity.policy import Refresh
from gpufleet.day2.refresh import Rollout, mixed_jobs, plan_refresh

OLD, NEW = "img-1", "img-2"


def _pool(versions, busy=()):
    return [NodeView(name, "p", BUSY if name in busy else IDLE, "joined", image_version=v,
                     jobs=("j",) if name in busy else ())
            for name, v in sorted(versions.items())]


def _apply(versions, step):
    if step.kind in ("refresh", "rollback"):
        for node in step.nodes:
            versions[node] = step.version


def test_canaries_first_then_batches_within_budget_until_done():
    versions = {f"n{i}": OLD for i in range(7)}
    rollout, rules = Rollout("p", NEW, OLD), Refresh(canaries=2)
    rollout, step = plan_refresh(rollout, _pool(versions), {}, [], rules, room=3)
    assert (step.kind, step.nodes) == ("refresh", ("n0", "n1"))
    _apply(versions, step)
    rollout, step = plan_refresh(rollout, _pool(versions), {"n0": True}, [], rules, 3)
    assert step.kind == "wait" and step.nodes == ("n1",)
    results = {"n0": True, "n1": True}
    sizes = []
    while True:
        rollout, step = plan_refresh(rollout, _pool(versions), results, [], rules, 3)
        if step.kind == "done":
            break
        assert step.kind == "refresh" and len(step.nodes) <= 3
        sizes.append(len(step.nodes))
        _apply(versions, step)
    assert sizes == [3, 2] and set(versions.values()) == {NEW}


@pytest.mark.parametrize("canaries,threshold,results,halts", [
    (1, 0, {"n0": False}, True),
    (2, 1, {"n0": False, "n1": True}, False),
    (2, 1, {"n0": False, "n1": False}, True),
    (3, 0, {"n0": False}, True),          # one failure halts even with others pending
])
def test_canary_failure_halts_and_leaves_every_other_node_old(canaries, threshold, results,
                                                              halts):
    versions = {f"n{i}": OLD for i in range(6)}
    rules = Refresh(canaries=canaries, max_canary_failures=threshold)
    rollout, step = plan_refresh(Rollout("p", NEW, OLD), _pool(versions), {}, [], rules, 6)
    _apply(versions, step)
    rollout, step = plan_refresh(rollout, _pool(versions), results, [], rules, 6)
    assert rollout.halted is halts
    if not halts:
        return
    assert step.kind == "rollback" and step.version == OLD
    assert set(step.nodes) == set(rollout.canaries)
    _apply(versions, step)
    # halted stays halted whatever comes next, and nothing is on the new version
    rollout, step = plan_refresh(rollout, _pool(versions), {}, [], rules, 6)
    assert step.kind == "halted" and set(versions.values()) == {OLD}


def test_no_job_spans_two_versions():
    versions = {f"n{i}": OLD for i in range(6)}
    running = [Job("gang", 3, state="RUNNING", nodes_assigned=("n1", "n2", "n3"))]
    rules = Refresh(canaries=1)
    rollout = Rollout("p", NEW, OLD)
    results = {}
    for _ in range(10):
        rollout, step = plan_refresh(rollout, _pool(versions), results, running, rules, 6)
        _apply(versions, step)
        results.update({n: True for n in step.nodes if step.kind == "refresh"})
        assert mixed_jobs(running, versions) == ()
    assert [versions[n] for n in ("n1", "n2", "n3")] == [OLD] * 3
    assert step.kind == "wait"
    # the job ends: the rest follows
    rollout, step = plan_refresh(rollout, _pool(versions), results, [], rules, 6)
    assert step.nodes == ("n1", "n2", "n3")


def test_busy_node_is_never_a_canary_and_no_budget_means_wait():
    versions = {"n0": OLD, "n1": OLD}
    rollout, step = plan_refresh(Rollout("p", NEW, OLD), _pool(versions, busy=("n0",)), {},
                                 [], Refresh(), 1)
    assert step.nodes == ("n1",)
    _, step = plan_refresh(Rollout("p", NEW, OLD), _pool(versions), {}, [], Refresh(), 0)
    assert step.kind == "wait"


def test_mixed_jobs_detects_a_split_job():
    jobs = [Job("a", 2, state="RUNNING", nodes_assigned=("x", "y")),
            Job("b", 2, state="RUNNING", nodes_assigned=("x", "z"))]
    assert mixed_jobs(jobs, {"x": OLD, "y": OLD, "z": NEW}) == ("b",)
