"""The disruption budget: at most this many of a pool's nodes out for day-2 work at once.

Mirrors Karpenter's ``disruption.budgets[].nodes``: a count, or a percent of the pool's nodes
rounded up (Karpenter's default is 10%); 0 freezes day-2 work for the pool. Nodes already out
(draining, recycling, renewing, refreshing) are spent first. Candidates start most severe
first, then the longest-waiting, then by name, so the order never depends on input order.
"""
from dataclasses import dataclass
from typing import Tuple

from gpufleet.capacity.policy import nodes_of

__all__ = ["Candidate", "Selection", "allowed", "select"]


@dataclass(frozen=True)
class Candidate:
    node: str
    pool: str
    severity: int       # gpufleet.day2.model.SEVERITY: lower is more severe
    waiting_since: float


@dataclass(frozen=True)
class Selection:
    start: Tuple[Candidate, ...]
    held: Tuple[Tuple[Candidate, str], ...]   # (candidate, why it waits)


def allowed(budget, pool_size):
    """Nodes the budget allows out at once for a pool of ``pool_size`` nodes."""
    return nodes_of(budget, pool_size)


def select(candidates, budgets, pool_sizes, out_now):
    """budgets: {pool: count or 'N%'}; pool_sizes: {pool: nodes}; out_now: {pool: nodes out}.

    A pool missing from ``budgets`` or ``pool_sizes`` gets nothing (fail closed)."""
    left = {pool: allowed(budgets[pool], size) - out_now.get(pool, 0)
            for pool, size in pool_sizes.items() if pool in budgets}
    start, held, seen = [], [], set()
    for cand in sorted(candidates, key=lambda c: (c.severity, c.waiting_since, c.node)):
        if cand.node in seen:
            continue
        seen.add(cand.node)
        if cand.pool not in left:
            held.append((cand, f"pool {cand.pool!r} has no disruption budget"))
        elif left[cand.pool] <= 0:
            held.append((cand, f"pool {cand.pool!r} disruption budget "
                               f"{budgets[cand.pool]} of {pool_sizes[cand.pool]} nodes is spent"))
        else:
            left[cand.pool] -= 1
            start.append(cand)
    return Selection(tuple(start), tuple(held))
