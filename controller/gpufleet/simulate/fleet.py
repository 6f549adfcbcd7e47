"""The simulated pool: N nodes, each in one warmth tier, seen by the planner as NodeViews.

The fleet only changes a node's tier when the engine applies a planner action or an action
finishes; what a tier means is model.TIERS. Tier counts are kept live for the metrics.
"""
from gpufleet.capacity import model
from gpufleet.capacity.model import NodeView
from gpufleet.simulate.errors import SimulateError

__all__ = ["SimNode", "Fleet", "LEDGER_STATE", "MAX_NODES", "check_nodes"]

# A pool of more nodes than any real one; each simulated node costs memory and planner time.
MAX_NODES = 100000


def check_nodes(count):
    """``count`` if it is a whole number of nodes from 1 to MAX_NODES (``--nodes``); SimulateError otherwise."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_NODES:
        raise SimulateError("--nodes %r: give the number of nodes in the simulated pool, 1 to %d." % (count, MAX_NODES))
    return count

# The ledger lifecycle state a controller would read for a node in each tier (the ledger's
# states.py names). PROVISIONING differs by path, so the node keeps the state it was given
# ("imaging" for a bring-up, "waking", "regating" for a wake with a stale gate: the ledger's
# "waking"; "hot" while a resume or admit is under way).
LEDGER_STATE = {
    model.BUSY: "joined", model.IDLE: "joined", model.HOT: "hot", model.WARM: "parked",
    model.COLD: "enrolled", model.PROVISIONING: "imaging", model.UNAVAILABLE: "failed",
}


class SimNode:
    __slots__ = ("index", "name", "tier", "state", "since", "idle_since", "gate_passed_at", "failures", "gang_id",
                 "job", "op", "running", "stale", "_view")

    def __init__(self, index, name, tier, now):
        self.index, self.name, self.tier, self.state, self.since = index, name, tier, LEDGER_STATE[tier], now
        self.idle_since = now if tier == model.IDLE else None
        self.gate_passed_at = now if tier in (model.BUSY, model.IDLE, model.HOT, model.WARM) else None
        self.failures = 0
        self.gang_id = None
        self.job = None
        self.op = 0                 # bumped when an operation on the node starts or is cancelled
        self.running = False        # an operation of its own (bring-up, wake, resume, admit) is under way
        self.stale = False          # hot, but its gate expired: the controller reads it as warm
        self._view = None

    @property
    def view_tier(self):
        """The tier the controller would compute (gpufleet.capacity.tiers.classify): a hot node
        with a stale gate is warm (it needs a re-gate before admission)."""
        return model.WARM if self.stale else self.tier

    def view(self, pool):
        if self._view is None:
            state = "waking" if self.state == "regating" else self.state
            self._view = NodeView(node=self.name, pool=pool, tier=self.view_tier, state=state, since=self.since,
                                  idle_since=self.idle_since, gate_passed_at=self.gate_passed_at,
                                  consecutive_failures=self.failures, gang_id=self.gang_id,
                                  jobs=(self.job,) if self.job else ())
        return self._view


class Fleet:
    """Nodes of one pool; ``on_change(now)`` runs before every tier change (metrics integrate)."""

    def __init__(self, pool, count, gpus_per_node, initial_tier, now, on_change=None, on_hot=None):
        self.pool, self.gpn = pool, gpus_per_node
        width = len(str(count))
        self.nodes = [SimNode(i, "%s-%0*d" % (pool, width, i + 1), initial_tier, now) for i in range(count)]
        self.by_name = {node.name: node for node in self.nodes}
        self.counts = dict.fromkeys(model.TIERS, 0)
        self.counts[initial_tier] = count
        self.idle_nodes = {node.name: node for node in self.nodes if node.tier == model.IDLE}
        self.on_change = on_change or (lambda now: None)
        self.on_hot = on_hot or (lambda node, now: None)
        # One view per node, refreshed only for nodes that changed: a pass over 1,000 nodes
        # then costs one tuple copy, not 1,000 NodeView rebuilds (benchmarks/capacity).
        self._view_list = [node.view(pool) for node in self.nodes]
        self._changed = set()
        self._views = None

    def set_tier(self, node, tier, now, state=None, gang_id=False):
        self.on_change(now)
        self.counts[node.tier] -= 1
        self.counts[tier] += 1
        if node.tier == model.IDLE:
            del self.idle_nodes[node.name]
        if tier == model.IDLE:
            self.idle_nodes[node.name] = node
        node.tier, node.state, node.since = tier, state or LEDGER_STATE[tier], now
        node.idle_since = now if tier == model.IDLE else None
        node.stale = False
        if gang_id is not False:
            node.gang_id = gang_id
        self.touch(node)
        if tier == model.HOT:
            self.on_hot(node, now)

    def expire(self, node, now):
        """The gate of hot ``node`` went stale at ``now`` (the engine schedules this)."""
        if node.tier == model.HOT and not node.running and not node.stale:
            self.on_change(now)
            node.stale = True
            self.touch(node)

    def touch(self, node):
        """A node's fields changed (tier, gang, failures, job): its view is rebuilt on next read."""
        node._view = None
        self._changed.add(node)
        self._views = None

    def views(self):
        if self._views is None:
            for node in self._changed:
                self._view_list[node.index] = node.view(self.pool)
            self._changed.clear()
            self._views = tuple(self._view_list)
        return self._views

    def idle(self):
        return list(self.idle_nodes.values())
