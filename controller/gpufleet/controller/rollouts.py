"""The loop's rollout and renewal step (gpufleet.day2.rollout_stage) with the ledger around it.

``read_book`` takes the unfinished rollouts from the rows the pass read (``World.rollout_rows``)
and folds the rollout book from the decision log (from the oldest rollout's start when it is
older than the pass's look-back); ``plan`` runs the stage after the repair stage (repairs are
counted first in the one budget) and fills each recycle's image variables from the catalogue;
``apply_updates`` writes the canaries and phases the stage decided, before its actions are
recorded, and returns the actions to record. Each takes what it reads (the ledger, the pools'
policies, the nodes in flight) and a ``say`` for the lines a person reads, not the loop itself.
"""
from dataclasses import replace

from gpufleet.controller import records
from gpufleet.controller.errors import ControllerError
from gpufleet.day2 import rollout_book, rollout_stage
from gpufleet.day2.cases import NOT_STARTED
from gpufleet.work import folds

__all__ = ["read_book", "out_by_pool", "plan", "apply_updates", "day2_out"]


def day2_out(world):
    """{pool: nodes out for repair}: open cases and the drains the repair stage starts now."""
    nodes = set(world.cases) | {n for a in world.day2.actions if a.kind == "drain" for n in a.nodes}
    pool_of = {v.node: v.pool for v in world.nodes}
    out = {}
    for node in nodes:
        pool = pool_of.get(node)
        if pool is not None:
            out[pool] = out.get(pool, 0) + 1
    return out


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


def read_book(ledger, world, now, recent):
    """Sets ``world.rollouts`` (the unfinished ones of ``world.rollout_rows``); -> the rollout
    book folded from the decision log (from the oldest rollout's start when it is older than
    ``recent``)."""
    world.rollouts = [r for r in world.rollout_rows if r["phase"] in records.ROLLOUT_ACTIVE]
    oldest = min([r["created_at"] for r in world.rollouts], default=now)
    decisions = recent
    if recent is None or (recent and oldest < recent[0]["at"]):
        decisions = records.decisions(ledger, since=min(oldest, now - folds.LOOKBACK_S))
    world.rollout_book = rollout_book.fold(decisions)
    return world.rollout_book


def out_by_pool(book):
    return rollout_stage.out_by_pool(book)


def plan(world, now, book, pools, catalogue, busy, lent, fabric, say):
    """Sets ``world.rollout``: the stage's pass after the repair stage (whose nodes are
    ``world.day2.claimed``), recycles with their image variables; a step not started for the same
    reason as last time is said once, not recorded. ``pools``: {pool: Pool policy}; ``busy``
    and ``lent``: the nodes in flight and lent as fabric peers; ``fabric``: inventory.fabric_places."""
    passed = rollout_stage.decide(world.rollouts, world.nodes, world.raw, pools, book, day2_out(world),
                                  world.day2.claimed, busy, now, fabric=fabric, lent=lent)
    actions = []
    for action in passed.actions:
        action = _with_image(action, catalogue)
        item = book.items.get(action.nodes[0])
        if action.blocked and item is not None and item.not_started == "%s %s" % (NOT_STARTED, action.blocked):
            say("rollout %s %s: %s" % (action.nodes[0], action.kind, action.blocked))
            continue
        actions.append(action)
    world.rollout = replace(passed, actions=tuple(actions))
    for note in passed.notes:
        say("rollout %s" % note)
    return world.rollout


def apply_updates(ledger, world, say):
    """Write the stage's rollout updates; -> the actions to record. A phase change that lost a
    race (an operator halted or rolled back meanwhile) drops that rollout's new steps."""
    lost = set()
    for update in world.rollout.updates:
        if update.canaries is not None:
            records.set_rollout_canaries(ledger, update.rollout_id, update.canaries)
            say("rollout %s: canaries %s" % (update.rollout_id, ", ".join(update.canaries)))
        if update.phase is not None:
            moved = records.set_rollout_phase(ledger, update.rollout_id, update.phase, update.reason,
                                              expect=update.expect or None)
            if moved:
                say("rollout %s: %s (%s)" % (update.rollout_id, update.phase, update.reason))
            else:
                lost.add(update.rollout_id)
    return [a for a in world.rollout.actions
            if a.rollout.get("rollout_id") is None or a.rollout["rollout_id"] not in lost
            or a.kind == "readmit"]
