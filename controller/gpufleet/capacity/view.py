"""One pool's supply sorted into tiers, with what is already under way, for one planning pass.

The planner takes nodes from these lists as it decides (``take``), so no node is given two
actions in one pass and nothing in flight is started twice.
"""
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Set

from gpufleet.capacity.model import BRINGUP_KINDS, COLD, HOT, PROVISIONING, WARM
from gpufleet.capacity.node_index import RETRYABLE, NodeIndex

__all__ = ["PoolView", "build_views"]


@dataclass
class PoolView:
    """Mutable working state of one pool during one pass (never returned to callers)."""
    name: str
    nodes: Mapping[str, object] = field(default_factory=dict)   # name -> NodeView (read-only)
    tiers: Mapping[str, int] = field(default_factory=dict)      # tier -> nodes of the pool
    free: Dict[str, List[str]] = field(default_factory=dict)    # tier -> free node names, sorted
    reserved: Set[str] = field(default_factory=set)             # members of gangs
    in_flight: Set[str] = field(default_factory=set)            # nodes with an action under way
    incoming_hot: int = 0       # on their way to hot for no gang (bring-ups, wakes)
    incoming_warm: int = 0      # on their way to warm (bring-ups to warm, parks)
    resuming: int = 0           # hot -> joined under way (they will serve pending jobs)
    bringing: Set[str] = field(default_factory=set)  # bring-ups and wakes under way
    parking: Set[str] = field(default_factory=set)   # parks under way
    retryable: List[str] = field(default_factory=list)  # failed, below the break_fix limit
    members: int = 0            # nodes that could ever serve a job (not decommissioned)
    idle_claimed: int = 0       # idle nodes pending jobs will start on (kept from scale-down)

    def count(self, tier):
        return len(self.free.get(tier, ()))

    def take(self, tier, where=None):
        """Remove and return the first free node of ``tier`` (deterministic: name order), or
        with ``where(name)`` the first one it accepts."""
        names = self.free.get(tier)
        for index, name in enumerate(names or ()):
            if where is None or where(name):
                return names.pop(index)
        return None

    def startable(self):
        """True when a free node could still be woken or brought up (limits aside)."""
        return bool(self.free.get(WARM) or self.free.get(COLD) or self.retryable)

    @property
    def bounded(self):
        """Node operations under way that count against the fleet's concurrency limit."""
        return len(self.bringing) + len(self.parking - self.bringing)


def _count_in_flight(view, action):
    for name in action.nodes:
        view.in_flight.add(name)
    if action.kind in BRINGUP_KINDS:
        view.bringing.update(action.nodes)
    elif action.kind == "park":
        view.parking.update(action.nodes)
    if action.kind == "rollback":   # released gang members on their way to warm
        view.incoming_warm += len(action.nodes)
    if action.gang_id is not None:
        return
    if action.kind in BRINGUP_KINDS:
        if action.target_tier == WARM:
            view.incoming_warm += len(action.nodes)
        else:
            view.incoming_hot += len(action.nodes)
    elif action.kind == "park":
        view.incoming_warm += len(action.nodes)
    elif action.kind == "hold":
        view.incoming_hot += len(action.nodes)
    elif action.kind == "resume":
        view.resuming += len(action.nodes)


def _arrived(action, nodes):
    """A bring-up or wake to hot, for no gang, whose nodes (``nodes``: the pool's name -> NodeView)
    the ledger already shows hot: its run
    ended (or is writing its report) and the controller has not collected it yet. Its nodes are
    hot supply now, not incoming: counted as under way, a job they can serve in seconds would get
    a cold bring-up of minutes. They still count against the concurrency limit until collected,
    and the loop starts nothing on them before that."""
    return (action.kind in BRINGUP_KINDS and action.gang_id is None and action.target_tier != WARM
            and all(name in nodes and nodes[name].tier == HOT for name in action.nodes))


def build_views(policy, supply, index=None):
    """-> {pool name: PoolView} for the policy's pools; nodes of unknown pools are ignored.
    ``index``: the NodeIndex kept from the caller's last pass (None: sort every node now)."""
    views = {name: PoolView(name) for name in policy.pools}
    for gang in supply.gangs:
        if gang.pool in views:
            views[gang.pool].reserved.update(m.node for m in gang.members)
    pools = (NodeIndex() if index is None else index).update(supply.nodes)
    for action in supply.in_flight:
        if action.pool not in views:
            continue
        indexed = pools.get(action.pool)
        if _arrived(action, indexed.nodes if indexed is not None else {}):
            views[action.pool].bringing.update(action.nodes)
        else:
            _count_in_flight(views[action.pool], action)
    for name, view in views.items():
        nodes = pools.get(name)
        if nodes is not None:
            _fill(view, nodes)
    return views


def _fill(view, pool):
    """The pool's indexed nodes into ``view``: free nodes are those neither reserved nor under
    way (busy ones always), failed ones are retryable; lists are copies the pass may take from."""
    view.nodes, view.tiers, view.members = pool.nodes, pool.tiers, pool.members
    view.reserved |= pool.gang_nodes
    for name in pool.buckets.get(PROVISIONING, ()):
        _provisioning(view, name)
    taken = {}   # busy nodes stay free whatever they are reserved for
    for name in (pool.not_busy & view.reserved) | (pool.not_busy & view.in_flight):
        taken.setdefault(pool.bucket_of[name], []).append(name)
    for bucket, names in pool.buckets.items():
        names = _without(names, taken.get(bucket, ()))
        if not names:
            continue
        if bucket == RETRYABLE:
            view.retryable = names
        else:
            view.free[bucket] = names


def _without(names, gone):
    """A copy of sorted ``names`` less ``gone`` (each one of them)."""
    names = list(names)
    for name in gone:
        del names[bisect_left(names, name)]
    return names


def _provisioning(view, name):
    """A node mid bring-up counts once, whether or not its action is in ``in_flight``."""
    if name not in view.in_flight and name not in view.reserved:
        view.incoming_hot += 1
    view.bringing.add(name)
