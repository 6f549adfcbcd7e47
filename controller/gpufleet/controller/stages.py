"""The stages of a controller pass, one signature: ``decide(world, claimed) -> the stage's pass``.

``world``: what the pass read, once (``World``, frozen); ``claimed``: what earlier stages hold. In
order: ``Repair``, ``Rollout`` (and renewals), ``Capacity`` (the planner). A stage only decides:
its notes and ledger writes come back in its pass, for the loop's one apply step.
"""
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from gpufleet.capacity.model import UNAVAILABLE
from gpufleet.controller.errors import ControllerError
from gpufleet.day2 import rollout_stage, stage
from gpufleet.day2.cases import NOT_STARTED
from gpufleet.day2.rollout_book import Book

__all__ = ["World", "Claimed", "Pass", "Repair", "Rollout", "Capacity", "decide", "supply"]

DAY2_HELD = "day2"   # the state the planner sees for a node an earlier stage holds


@dataclass(frozen=True)
class World:
    """What one pass read. Reconciler.read_world: Slurm's jobs (raw), the same with pools,
    unservable (job, why), node views, the ledger's rollout rows (oldest first); the rest is what
    Reconciler.observe adds for the stages."""
    raw: tuple
    jobs: tuple
    unservable: tuple
    nodes: tuple
    rollout_rows: tuple = ()
    now: float = 0.0
    rows: tuple = ()
    signals: tuple = ()
    tracks: Mapping = field(default_factory=dict)
    cases: Mapping = field(default_factory=dict)
    replacements: Any = None
    rollouts: tuple = ()
    rollout_book: Book = field(default_factory=Book)
    pools: Mapping = field(default_factory=dict)
    catalogue: Any = None
    busy: frozenset = frozenset()
    lent: frozenset = frozenset()
    fabric: Mapping = field(default_factory=dict)
    in_flight: tuple = ()
    gangs: tuple = ()
    history: Mapping = field(default_factory=dict)
    forecasters: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Claimed:
    """Nodes no later stage touches, job IDs awaiting their replacement's bind (day-2's), and
    {pool: nodes out for repair} (counted first in the one disruption budget)."""
    nodes: frozenset = frozenset()
    jobs: frozenset = frozenset()
    out: Mapping = field(default_factory=dict)

    def __or__(self, other):
        return Claimed(self.nodes | other.nodes, self.jobs | other.jobs, Counter(self.out) + Counter(other.out))


@dataclass(frozen=True)
class Pass:
    """The stages' decisions of one pass, and what they claimed together."""
    day2: stage.Day2Pass = field(default_factory=stage.Day2Pass)
    rollout: rollout_stage.RolloutPass = field(default_factory=rollout_stage.RolloutPass)
    capacity: Optional[Any] = None
    claimed: Claimed = field(default_factory=Claimed)


class Repair:
    """Day-2 repair: Slurm's drains, BMC and health signals, open cases, replacements."""
    def decide(self, world, claimed):
        return stage.decide(world.rows, world.nodes, world.raw, world.pools, world.tracks, world.cases, world.busy,
                            world.now, extra_signals=world.signals, fabric=world.fabric,
                            also_out=rollout_stage.out_by_pool(world.rollout_book),
                            replacements=world.replacements, lent=world.lent)

    def claims(self, world, passed):
        """Its nodes and jobs; per pool its open cases and the drains it starts now."""
        nodes = set(world.cases) | {n for a in passed.actions if a.kind == "drain" for n in a.nodes}
        pool_of = {v.node: v.pool for v in world.nodes}
        return Claimed(passed.claimed, passed.awaiting_bind,
                       Counter(pool_of[n] for n in nodes if pool_of.get(n) is not None))


class Rollout:
    """Rollouts and renewals after the repair stage; each recycle gets its image variables. A step
    not started for the same reason as last time is said once, not recorded."""
    def decide(self, world, claimed):
        passed = rollout_stage.decide(world.rollouts, world.nodes, world.raw, world.pools, world.rollout_book,
                                      claimed.out, claimed.nodes, world.busy, world.now, fabric=world.fabric,
                                      lent=world.lent)
        actions, said = [], []
        for action in passed.actions:
            action = _with_image(action, world.catalogue)
            item = world.rollout_book.items.get(action.nodes[0])
            if action.blocked and item is not None and item.not_started == "%s %s" % (NOT_STARTED, action.blocked):
                said.append("%s %s: %s" % (action.nodes[0], action.kind, action.blocked))
                continue
            actions.append(action)
        return replace(passed, actions=tuple(actions), notes=tuple(said) + passed.notes)

    def claims(self, world, passed):
        return Claimed(passed.claimed)


class Capacity:
    """The capacity planner; what earlier stages hold is unavailable supply to it."""
    def __init__(self, planning):
        self.planning = planning

    def decide(self, world, claimed):
        demand = [j for j in world.raw if j.job_id not in claimed.jobs]
        return self.planning.plan(demand, supply(world, claimed), world.in_flight, world.gangs, world.now,
                                  world.history, world.forecasters)

    def claims(self, world, passed):
        return Claimed()


def decide(world, stages):
    """``stages`` (repair, rollout, capacity) in order on the one World, each given what the
    earlier ones claimed -> Pass."""
    claimed, passes = Claimed(), []
    for one in stages:
        passes.append(one.decide(world, claimed))
        claimed = claimed | one.claims(world, passes[-1])
    return Pass(*passes, claimed=claimed)


def supply(world, claimed):
    """The node views the planner gets: a node an earlier stage holds is unavailable (state 'day2':
    the planner retries or breaks a 'failed' node itself, and a held node is not its to touch)."""
    return [replace(v, tier=UNAVAILABLE, state=DAY2_HELD) if v.node in claimed.nodes else v for v in world.nodes]


def _with_image(action, catalogue):
    """A recycle gets the image variables of its version; none resolvable: recorded, not run."""
    if action.kind != "recycle" or action.blocked:
        return action
    if catalogue is None:
        return replace(action, blocked="no image catalogue given to the controller (docs/day2.md, 'Refresh')")
    try:
        return replace(action, image=catalogue.resolve(action.rollout.get("version") or ""))
    except ControllerError as exc:
        return replace(action, blocked=exc.msg)
