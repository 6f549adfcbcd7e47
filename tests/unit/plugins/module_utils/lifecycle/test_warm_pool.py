import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import warm_pool
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LifecycleError


def rec(node, state, sku="h100", gang_id=None, **extra):
    return dict(node=node, state=state, sku=sku, gang_id=gang_id, **extra)


def test_refill_plans_the_deficit_from_provisionable_nodes():
    records = [rec("a", "ready"), rec("b", "imaging"), rec("c", "enrolled"), rec("d", "recycling"),
               rec("e", "ready", gang_id="g1"), rec("f", "failed"), rec("z", "enrolled", sku="b200")]
    (plan,) = warm_pool.plan_refill([{"sku": "h100", "min_ready": 4}], records)
    assert plan["ready"] == ["a"] and plan["in_flight"] == ["b"]
    assert plan["deficit"] == 2 and plan["provision"] == ["c", "d"] and plan["shortfall"] == 0


def test_shortfall_and_surplus_are_reported():
    records = [rec("a", "ready"), rec("b", "ready"), rec("c", "ready")]
    (plan,) = warm_pool.plan_refill([{"sku": "h100", "min_ready": 1, "max_ready": 2}], records)
    assert plan["deficit"] == 0 and plan["surplus"] == 1
    (plan,) = warm_pool.plan_refill([{"sku": "h100", "min_ready": 5}], records[:1])
    assert plan["deficit"] == 4 and plan["shortfall"] == 4 and plan["provision"] == []


def test_tiers_only_count_their_own_nodes():
    records = [rec("a", "ready", tier="gold"), rec("b", "enrolled", tier="gold"), rec("c", "enrolled")]
    gold, default = warm_pool.plan_refill(
        [{"sku": "h100", "tier": "gold", "min_ready": 2}, {"sku": "h100", "min_ready": 1}], records)
    assert gold["provision"] == ["b"] and default["provision"] == ["c"]


@pytest.mark.parametrize("policy,fragment", [
    ([{"min_ready": 1}], "has no sku"),
    ([{"sku": "h100", "min_ready": -1}], "0 <= min_ready"),
    ([{"sku": "h100", "min_ready": 3, "max_ready": 2}], "0 <= min_ready"),
    ([{"sku": "h100", "min_ready": 1, "colour": "red"}], "unknown keys"),
    ([{"sku": "h100", "min_ready": 1}, {"sku": "h100", "min_ready": 2}], "twice"),
])
def test_invalid_policy_is_refused(policy, fragment):
    with pytest.raises(LifecycleError) as err:
        warm_pool.validate_policy(policy)
    assert fragment in err.value.msg


def test_hot_nodes_count_as_ready():
    records = [rec("a", "hot"), rec("b", "ready"), rec("c", "parked"), rec("d", "enrolled")]
    (plan,) = warm_pool.plan_refill([{"sku": "h100", "min_ready": 3}], records)
    assert plan["ready"] == ["a", "b"] and plan["provision"] == ["d"]
