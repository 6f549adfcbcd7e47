"""A first end-to-end pass of plan() over the lab example policy."""
from pathlib import Path

from gpufleet.capacity.model import COLD, Demand, Job, NodeView, Supply
from gpufleet.capacity.planner import plan
from gpufleet.capacity.policy import load_policy

LAB = Path(__file__).resolve().parents[4] / "controller/gpufleet/capacity/examples/lab.yml"


def test_cold_pool_fills_its_hot_floor_and_serves_a_pending_job():
    policy = load_policy(LAB)
    nodes = tuple(NodeView(f"n{i}", "lab-gpu", COLD, "enrolled") for i in range(6))
    jobs = (Job("7", 1, partition="gpu", features=("gpu",), reason="Resources"),)
    result = plan(Demand(jobs), Supply(nodes), policy, now=1_000_000.0)
    kinds = [a.kind for a in result.actions]
    assert kinds == ["bringup", "bringup", "bringup"]
    assert [a.nodes for a in result.actions] == [("n0",), ("n1",), ("n2",)]
    assert result.actions[0].job_id == "7"
    assert all(a.reason for a in result.actions)
