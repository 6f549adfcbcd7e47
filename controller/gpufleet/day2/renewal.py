"""Renewal: re-validate nodes whose last gate is older than the pool's ``gate_validity`` or
that have been joined longer than ``day2.renewal_max_age`` - only while idle (joined and
running nothing, or hot), and within the disruption budget (gpufleet.day2.budget).
"""
from dataclasses import dataclass

from gpufleet.capacity.model import BUSY, HOT, IDLE
from gpufleet.day2.model import severity_of

__all__ = ["Due", "due_for_renewal"]


@dataclass(frozen=True)
class Due:
    node: str
    pool: str
    kind: str          # revalidate | reimage_revalidate
    reason: str
    since: float       # when it became due (for the budget's longest-waiting order)
    idle: bool         # False: due but busy, waits for idle
    severity: int = severity_of("renewal")   # for gpufleet.day2.budget: after every fault


def _why(node, pool_policy, now, joined_at):
    validity, max_age = pool_policy.gate_validity, pool_policy.day2.renewal_max_age
    if node.gate_passed_at is None:
        return "no passed gate recorded", now
    if now - node.gate_passed_at > validity:
        return (f"last gate {now - node.gate_passed_at:g}s ago, validity {validity:g}s",
                node.gate_passed_at + validity)
    joined = joined_at.get(node.node)
    if max_age is not None and joined is not None and now - joined > max_age:
        return f"joined {now - joined:g}s ago, max age {max_age:g}s", joined + max_age
    return None, None


def due_for_renewal(nodes, policy, now, joined_at=None):
    """nodes: NodeViews; policy: the capacity Policy; joined_at: {node: when it joined}.

    -> tuple of Due for joined or hot nodes, busy ones marked ``idle=False``."""
    joined_at = joined_at or {}
    found = []
    for node in sorted(nodes, key=lambda n: n.node):
        if node.tier not in (BUSY, IDLE, HOT) or node.pool not in policy.pools:
            continue
        pool_policy = policy.pools[node.pool]
        reason, since = _why(node, pool_policy, now, joined_at)
        if reason is None:
            continue
        kind = "reimage_revalidate" if pool_policy.day2.renewal_reimage else "revalidate"
        idle = node.tier != BUSY and not node.jobs
        found.append(Due(node.node, node.pool, kind, reason, since, idle))
    return tuple(found)
