"""Gangs never span two image versions (a pool mid-rollout runs two)."""
from gpufleet.capacity.model import COLD, HOT, WARM

from tests.unit.gpufleet.capacity.fleet_factory import gang, job, kinds, make_policy, node, run

POLICY = make_policy(gang_deadline="30m", estimates={"warm": "5m", "cold": "20m"})


def _fleet(spec):
    """spec: (name, tier, image) -> NodeViews."""
    return [node(name, tier, image_version=image) for name, tier, image in spec]


def test_a_new_gang_takes_hot_nodes_of_one_version_only():
    fleet = _fleet([("a", HOT, "v1"), ("b", HOT, "v2"), ("c", HOT, "v2"), ("d", HOT, "v1"),
                    ("e", HOT, "v2")])
    result = run(POLICY, fleet, [job(1, size=3)])
    assert kinds(result) == ["reserve", "admit"]
    assert result.actions[1].nodes == ("b", "c", "e")        # v2: most hot nodes run it


def test_a_gang_short_of_one_version_waits_for_cold_nodes_instead_of_mixing():
    fleet = _fleet([("a", HOT, "v1"), ("b", HOT, "v2"), ("c", COLD, None)])
    result = run(POLICY, fleet, [job(1, size=2)])
    assert kinds(result) == ["reserve", "bringup"]
    reserve = result.actions[0]
    assert len(reserve.nodes) == 2 and "c" in reserve.nodes   # one hot node plus the cold one


def test_warm_nodes_keep_their_image_and_count_as_that_version():
    fleet = _fleet([("a", HOT, "v2"), ("w1", WARM, "v1"), ("w2", WARM, "v2")])
    result = run(POLICY, fleet, [job(1, size=2)])
    assert result.actions[0].nodes == ("a", "w2")


def test_a_member_on_another_version_is_replaced_before_admission():
    fleet = _fleet([("a", HOT, "v2"), ("b", HOT, "v2"), ("c", HOT, "v1"), ("s", HOT, "v2")])
    result = run(POLICY, fleet, [job(1, size=3)], gangs=[gang("g", 1, ["a", "b", "c"])])
    assert "admit" not in kinds(result)
    sub, = [a for a in result.actions if a.kind == "substitute"]
    assert (sub.replaces, sub.nodes) == ("c", ("s",)) and "two image versions" in sub.reason


def test_a_gang_of_one_version_is_admitted_as_before():
    fleet = _fleet([("a", HOT, "v1"), ("b", HOT, "v1")])
    result = run(POLICY, fleet, [job(1, size=2)], gangs=[gang("g", 1, ["a", "b"])])
    assert kinds(result) == ["admit"]
