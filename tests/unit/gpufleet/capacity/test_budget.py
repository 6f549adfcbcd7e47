"""Budget: what the limits allow in one pass, and a decision taken back within it."""
from gpufleet.capacity.budget import Budget
from gpufleet.capacity.model import COLD, Supply
from gpufleet.capacity.view import build_views

from tests.unit.gpufleet.capacity.fleet_factory import flight, make_policy, nodes


def _budget(**pool):
    policy = make_policy(limit=3, **pool)
    supply = Supply(nodes(COLD, 4), (flight("bringup", "p-cold-00"),))
    return Budget(policy, build_views(policy, supply))


def test_room_is_the_tighter_of_the_pool_and_fleet_limits_after_work_under_way():
    assert _budget(max_concurrent_bringups=2).room("p", "bringup") == 1     # pool: 2 - 1 under way
    assert _budget(max_concurrent_bringups=9).room("p", "bringup") == 2     # fleet: 3 - 1
    assert _budget().room("p", "resume") == float("inf")                     # never held back


def test_a_refund_gives_back_exactly_one_spend():
    budget = _budget(max_concurrent_bringups=9)
    assert budget.spend("p", "bringup") and budget.spend("p", "bringup")
    assert budget.room("p", "bringup") == 0 and not budget.spend("p", "bringup")
    budget.refund("p", "bringup")
    assert budget.room("p", "bringup") == 1 and budget.spend("p", "bringup")
