"""Which pool a node belongs to, from the policy's member rules (groups, name patterns, labels).

The controller calls this when it builds ``NodeView``s from the inventory and the ledger; the
planner itself only reads ``NodeView.pool``. A node in no pool is left out of planning.
"""
from fnmatch import fnmatchcase

__all__ = ["pool_of", "is_member"]


def is_member(members, node, groups=(), labels=None):
    """True when any rule matches: an inventory group, a name pattern, or every listed label."""
    labels = labels or {}
    if set(members.groups) & set(groups):
        return True
    if any(fnmatchcase(node, pattern) for pattern in members.patterns):
        return True
    return bool(members.labels) and all(labels.get(k) == v for k, v in members.labels.items())


def pool_of(policy, node, groups=(), labels=None):
    """The first pool (policy order) whose member rules match the node, or None."""
    for name, pool in policy.pools.items():
        if is_member(pool.members, node, groups, labels):
            return name
    return None
