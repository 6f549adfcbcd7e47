"""The nodes of ``Supply.nodes`` sorted by pool and tier, kept from one planning pass to the next.

Sorting 1,000 nodes into tiers is most of a pass's cost, yet between two passes only a few
nodes change (the simulator rebuilds only the NodeViews that changed; NodeView is frozen). A
``NodeIndex`` remembers the last node tuple and, for the next one, re-sorts only the positions
holding a different NodeView object; anything else (other names or pools at a position, another
length, many changes, a bad tier) is a full rebuild from scratch. Either way the result is what
sorting the whole tuple gives (tests/unit/gpufleet/capacity/test_node_index.py checks it).
The caller owns the index and passes it to ``plan``; a fresh index is a full rebuild.
"""
from bisect import bisect_left, insort
from itertools import compress
from operator import attrgetter, is_not
from types import MappingProxyType

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.model import BUSY, TIERS, UNAVAILABLE, PlanInputError

__all__ = ["NodeIndex", "PoolNodes", "RETRYABLE"]

# The bucket of failed nodes (unavailable, ledger state "failed"): retried, not a free tier.
RETRYABLE = "retryable"
# Above this share of changed nodes a rebuild is cheaper than moving them one by one.
_REBUILD_SHARE = 8


def _bucket(node):
    if node.tier == UNAVAILABLE and node.state == states.FAILED:
        return RETRYABLE
    return node.tier


class PoolNodes:
    """One pool's nodes: by name, by bucket (a tier or RETRYABLE; names sorted), counts."""

    def __init__(self):
        self._nodes = {}            # name -> NodeView
        self.nodes = MappingProxyType(self._nodes)   # the planner reads, never writes
        self.buckets = {}           # bucket -> sorted node names
        self.bucket_of = {}         # name -> bucket
        self.not_busy = set()       # names outside the busy bucket (those a pass may set aside)
        self._tiers = dict.fromkeys(TIERS, 0)
        self.tiers = MappingProxyType(self._tiers)   # nodes per tier
        self.members = 0            # nodes not decommissioned
        self.gang_nodes = set()     # nodes the ledger records as reserved for a gang

    def add(self, node, in_order=False):
        """Index ``node``; ``in_order``: names arrive sorted, so append instead of insert."""
        name, bucket = node.node, _bucket(node)
        self._nodes[name] = node
        self.bucket_of[name] = bucket
        if bucket != BUSY:
            self.not_busy.add(name)
        names = self.buckets.setdefault(bucket, [])
        if in_order:
            names.append(name)
        else:
            insort(names, name)
        self._count(node, 1)

    def replace(self, old, new):
        """``new`` is node ``old.node`` now (same name, same pool)."""
        self._count(old, -1)
        self._nodes[new.node] = new
        bucket = _bucket(new)
        if bucket != self.bucket_of[new.node]:
            names = self.buckets[self.bucket_of[new.node]]
            del names[bisect_left(names, new.node)]
            insort(self.buckets.setdefault(bucket, []), new.node)
            self.bucket_of[new.node] = bucket
            if bucket == BUSY:
                self.not_busy.discard(new.node)
            else:
                self.not_busy.add(new.node)
        self._count(new, 1)

    def _count(self, node, sign):
        self._tiers[node.tier] += sign
        if node.state != states.DECOMMISSIONED:
            self.members += sign
        if node.gang_id is not None:
            if sign > 0:
                self.gang_nodes.add(node.node)
            else:
                self.gang_nodes.discard(node.node)


class NodeIndex:
    """``update(nodes)`` -> {pool name: PoolNodes} for every pool named by a node."""

    def __init__(self):
        self._last = None           # the node tuple the pools describe
        self._pools = {}

    def update(self, nodes):
        nodes = tuple(nodes)
        if nodes is self._last:
            return self._pools
        if not self._patch(nodes):
            self._rebuild(nodes)
        self._last = nodes
        return self._pools

    def _patch(self, nodes):
        """Move only the nodes whose NodeView object changed -> False when a rebuild is due."""
        last = self._last
        if last is None or len(last) != len(nodes):
            return False
        changed = list(compress(range(len(nodes)), map(is_not, last, nodes)))
        if len(changed) * _REBUILD_SHARE > len(nodes):
            return False
        for i in changed:
            old, new = last[i], nodes[i]
            if old.node != new.node or old.pool != new.pool or new.tier not in TIERS:
                return False
        for i in changed:
            self._pools[nodes[i].pool].replace(last[i], nodes[i])
        return True

    def _rebuild(self, nodes):
        self._last, self._pools = None, {}   # a raise below leaves nothing half built
        pools, seen = {}, set()
        for node in sorted(nodes, key=attrgetter("node")):
            _check(node, seen)
            pool = pools.get(node.pool)
            if pool is None:
                pool = pools[node.pool] = PoolNodes()
            pool.add(node, in_order=True)
        self._pools = pools


def _check(node, seen):
    if node.node in seen:
        raise PlanInputError(f"node {node.node} is in the supply twice; fix: give the planner "
                             "one NodeView per node")
    if node.tier not in TIERS:
        raise PlanInputError(f"node {node.node} has tier {node.tier!r}; fix: use one of "
                             f"{', '.join(TIERS)} (gpufleet.capacity.tiers.classify)")
    seen.add(node.node)
