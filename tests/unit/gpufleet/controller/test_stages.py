"""The pass's stages: one signature, a frozen World, what earlier stages claim held off later ones."""
import dataclasses
import inspect

import pytest

from gpufleet.capacity.model import Job, NodeView
from gpufleet.controller import stages
from gpufleet.controller.stages import World
from gpufleet.day2.stage import Day2Pass
from gpufleet.work.action import Action


@pytest.mark.parametrize("kind", [stages.Repair, stages.Rollout, stages.Capacity])
def test_every_stage_decides_on_the_world_and_what_earlier_stages_claimed(kind):
    assert list(inspect.signature(kind.decide).parameters) == ["self", "world", "claimed"]
    assert list(inspect.signature(kind.claims).parameters) == ["self", "world", "passed"]


def test_the_world_is_frozen():
    world = World((), (), (), ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        world.nodes = ("n1",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        world.cases = {}


def test_claims_add_up_nodes_jobs_and_nodes_out_per_pool():
    got = stages.Claimed(frozenset({"n1"}), frozenset({"7"}), {"lab": 1}) | stages.Claimed(
        frozenset({"n2"}), frozenset(), {"lab": 2, "gpu": 1})
    assert (got.nodes, got.jobs, dict(got.out)) == ({"n1", "n2"}, {"7"}, {"lab": 3, "gpu": 1})


def test_the_repair_stage_claims_its_nodes_jobs_and_per_pool_its_cases_and_drains():
    world = World((), (), (), (NodeView("n1", "lab", "hot", "hot"), NodeView("n2", "lab", "hot", "hot"),
                               NodeView("n3", "gpu", "hot", "hot")), cases={"n3": object()})
    passed = Day2Pass(actions=(Action("drain", "lab", ("n1",), "NHC"),), claimed=frozenset({"n1", "n2", "n3"}),
                      awaiting_bind=frozenset({"7"}))
    got = stages.Repair().claims(world, passed)
    assert (got.nodes, got.jobs, dict(got.out)) == ({"n1", "n2", "n3"}, {"7"}, {"lab": 1, "gpu": 1})


class _Stage:
    def __init__(self, name, holds, seen):
        self.name, self.holds, self.seen = name, holds, seen

    def decide(self, world, claimed):
        self.seen.append((self.name, claimed.nodes))
        return self.name

    def claims(self, world, passed):
        return stages.Claimed(frozenset(self.holds))


def test_each_stage_gets_what_the_earlier_ones_claimed_in_order():
    seen = []
    passed = stages.decide(World((), (), (), ()), [_Stage("a", {"n1"}, seen), _Stage("b", {"n2"}, seen),
                                                   _Stage("c", (), seen)])
    assert seen == [("a", frozenset()), ("b", {"n1"}), ("c", {"n1", "n2"})]
    assert (passed.day2, passed.rollout, passed.capacity, passed.claimed.nodes) == ("a", "b", "c", {"n1", "n2"})


def test_the_planner_gets_held_nodes_unavailable_and_no_job_awaiting_its_bind():
    class Planning:
        def plan(self, jobs, nodes, in_flight, gangs, now, history, forecasters=None):
            return jobs, nodes

    world = World((Job("7", 1), Job("8", 1)), (), (), (NodeView("n1", "lab", "hot", "hot"),
                                                      NodeView("n2", "lab", "hot", "hot")))
    jobs, nodes = stages.Capacity(Planning()).decide(world, stages.Claimed(frozenset({"n2"}), frozenset({"7"})))
    assert [j.job_id for j in jobs] == ["8"]
    assert [(v.node, v.tier, v.state) for v in nodes] == [("n1", "hot", "hot"), ("n2", "unavailable", "day2")]
