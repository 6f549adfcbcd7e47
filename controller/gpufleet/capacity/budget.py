"""Concurrency budgets for one pass: the pool's bring-ups and the fleet's node operations.

What is already under way (in-flight actions, nodes mid bring-up) is spent first, so a pass
never starts more than the limits allow, whatever the previous passes did.
"""
from gpufleet.capacity.model import BOUNDED_KINDS, BRINGUP_KINDS

__all__ = ["Budget"]


class Budget:
    """``spend(pool, kind)`` says yes (and counts it) or no; unbounded kinds always pass."""

    def __init__(self, policy, views):
        self.fleet_left = policy.fleet.concurrency_limit - sum(v.bounded for v in views.values())
        self.pool_left = {name: policy.pools[name].max_concurrent_bringups - len(view.bringing)
                          for name, view in views.items()}
        self.refused = {}   # pool -> operations held back this pass (for the notes)

    def allows(self, pool, kind):
        if kind not in BOUNDED_KINDS:
            return True
        if self.fleet_left <= 0:
            return False
        return kind not in BRINGUP_KINDS or self.pool_left[pool] > 0

    def room(self, pool, kind):
        """How many more of ``kind`` the limits allow in ``pool`` this pass."""
        if kind not in BOUNDED_KINDS:
            return float("inf")
        return self.fleet_left if kind not in BRINGUP_KINDS else min(self.fleet_left, self.pool_left[pool])

    def refund(self, pool, kind):
        """Give back one ``spend`` (a decision taken back within the pass)."""
        if kind in BOUNDED_KINDS:
            self.fleet_left += 1
        if kind in BRINGUP_KINDS:
            self.pool_left[pool] += 1

    def spend(self, pool, kind):
        """True and counted when the limits allow ``kind`` now; False and noted otherwise."""
        if not self.allows(pool, kind):
            self.refused[pool] = self.refused.get(pool, 0) + 1
            return False
        if kind in BOUNDED_KINDS:
            self.fleet_left -= 1
        if kind in BRINGUP_KINDS:
            self.pool_left[pool] -= 1
        return True
