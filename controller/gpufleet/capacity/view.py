"""One pool's supply sorted into tiers, with what is already under way, for one planning pass.

The planner takes nodes from these lists as it decides (``take``), so no node is given two
actions in one pass and nothing in flight is started twice.
"""
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Dict, List, Set

from gpufleet.capacity.model import (BRINGUP_KINDS, BUSY, COLD, PROVISIONING, TIERS,
                                     UNAVAILABLE, WARM, PlanInputError)

__all__ = ["PoolView", "build_views"]


@dataclass
class PoolView:
    """Mutable working state of one pool during one pass (never returned to callers)."""
    name: str
    nodes: Dict[str, object] = field(default_factory=dict)      # name -> NodeView
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

    def take(self, tier):
        """Remove and return the first free node of ``tier`` (deterministic: name order)."""
        names = self.free.get(tier)
        return names.pop(0) if names else None

    def startable(self):
        """True when a free node could still be woken or brought up (limits aside)."""
        return bool(self.free.get(WARM) or self.free.get(COLD) or self.retryable)

    @property
    def bounded(self):
        """Node operations under way that count against the fleet's concurrency limit."""
        return len(self.bringing) + len(self.parking - self.bringing)


def _bucket(view, node):
    tier = node.tier
    if tier != BUSY and (node.node in view.reserved or node.node in view.in_flight):
        return
    if tier == UNAVAILABLE and node.state == "failed":
        view.retryable.append(node.node)
        return
    view.free.setdefault(tier, []).append(node.node)


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


def build_views(policy, supply):
    """-> {pool name: PoolView} for the policy's pools; nodes of unknown pools are ignored."""
    views = {name: PoolView(name) for name in policy.pools}
    for gang in supply.gangs:
        if gang.pool in views:
            views[gang.pool].reserved.update(m.node for m in gang.members)
    for action in supply.in_flight:
        if action.pool in views:
            _count_in_flight(views[action.pool], action)
    seen = set()
    for node in sorted(supply.nodes, key=attrgetter("node")):
        _check(node, seen)
        view = views.get(node.pool)
        if view is None:
            continue
        view.nodes[node.node] = node
        if node.state != "decommissioned":
            view.members += 1
        if node.gang_id is not None:
            view.reserved.add(node.node)
        if node.tier == PROVISIONING:
            _provisioning(view, node)
        _bucket(view, node)
    return views


def _check(node, seen):
    if node.node in seen:
        raise PlanInputError(f"node {node.node} is in the supply twice; fix: give the planner "
                             "one NodeView per node")
    if node.tier not in TIERS:
        raise PlanInputError(f"node {node.node} has tier {node.tier!r}; fix: use one of "
                             f"{', '.join(TIERS)} (gpufleet.capacity.tiers.classify)")
    seen.add(node.node)


def _provisioning(view, node):
    """A node mid bring-up counts once, whether or not its action is in ``in_flight``."""
    if node.node not in view.in_flight and node.node not in view.reserved:
        view.incoming_hot += 1
    view.bringing.add(node.node)
