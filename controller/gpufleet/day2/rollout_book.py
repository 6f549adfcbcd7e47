"""Rollout and renewal work per node, folded from the controller's recorded decisions.

As day-2 repair cases are (gpufleet.day2.cases), a restarted controller finds each node where
the last one left it, from the decision log alone. Rollout and renewal decisions carry
``rollout`` beside the action (``demand.action.rollout``: the rollout id, or none for a
renewal; the role ``canary``, ``batch``, ``rollback`` or ``renewal``; the version and gate
profile the recycle installs; the tier the node goes back to). They are not ``day2`` cases:
``cases.fold_cases`` never sees them, so a repair and a rollout never drive one node twice.

Per node, oldest first: a drain (or a recycle of a node that was already failed) opens an
item; drain ok -> draining; recycle (or a renewal's revalidate: the gate without a reimage)
in flight -> recycling, ok -> recycled, failed -> closed
(the node is failed: the capacity planner retries it); readmit ok -> closed. A failed drain
closes it too (nothing was moved). Per rollout: each node's gate result on the target (the
outcome of its last canary or batch recycle), the nodes it moved and did not roll back, and
the failed rollback recycles per node.
"""
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, Optional

from gpufleet.day2.cases import NOT_STARTED, ended
from gpufleet.work import folds
from gpufleet.work.codec import rollout_of

__all__ = ["Item", "Book", "fold"]

# the steps that put a drained node through the gate: a reimage, or the gate alone (renewal)
_RECYCLES = ("recycle", "revalidate")


@dataclass(frozen=True)
class Item:
    node: str
    pool: str
    rollout_id: Optional[int]
    role: str
    version: str
    gate_profile: Optional[str]
    back_to: str                # joined | hot: where the node goes after its recycle
    phase: str                  # draining | recycling | recycled | to_recycle
    since: float
    in_flight: bool = False
    not_started: str = ""       # the last 'not started' outcome, said once
    revalidate: bool = False    # a renewal that re-gates without a reimage (revalidate, not recycle)


@dataclass(frozen=True)
class Book:
    items: Dict[str, Item] = field(default_factory=dict)            # open work per node
    results: Dict[int, Dict[str, bool]] = field(default_factory=dict)   # rollout -> node -> passed
    moved: Dict[int, FrozenSet[str]] = field(default_factory=dict)  # rollout -> nodes on its target
    rollback_failures: Dict[int, Dict[str, int]] = field(default_factory=dict)  # rollout -> node -> count


def _open(decision, extra, node):
    phase = "to_recycle" if decision["action"] == "recycle" else "draining"
    return Item(node, decision["pool"], extra.get("rollout_id"), extra["role"], extra.get("version") or "",
                extra.get("gate_profile"), extra.get("back_to") or "joined", phase, float(decision["at"]),
                revalidate=bool(extra.get("revalidate")))


def _step(item, decision):
    """The item after one of its node's decisions (None: closed)."""
    kind, outcome = decision["action"], decision["outcome"]
    if outcome is None:
        phase = "recycling" if kind in _RECYCLES else item.phase
        return replace(item, phase=phase, in_flight=True)
    if outcome.startswith(NOT_STARTED):
        return replace(item, in_flight=False, not_started=outcome)
    done = replace(item, in_flight=False, not_started="", since=ended(decision))
    ok = outcome == "ok"
    if kind == "drain":
        return replace(done, phase="draining") if ok else None
    if kind in _RECYCLES:
        return replace(done, phase="recycled") if ok else None
    if kind == "readmit" and ok:
        return None
    return done


def _result(results, moved, failures, extra, node, decision):
    """Gate results and moved nodes of a rollout, from one finished recycle."""
    rid = extra.get("rollout_id")
    if rid is None or decision["action"] != "recycle" or decision["outcome"] is None \
            or decision["outcome"].startswith(NOT_STARTED):
        return
    ok = decision["outcome"] == "ok"
    if extra["role"] in ("canary", "batch"):
        results.setdefault(rid, {})[node] = ok
        moved.setdefault(rid, set()).add(node)      # failed too: it left the previous version
    elif extra["role"] == "rollback" and ok:
        moved.setdefault(rid, set()).discard(node)
    elif extra["role"] == "rollback":
        failures.setdefault(rid, {})[node] = failures.get(rid, {}).get(node, 0) + 1


def fold(decisions):
    """decisions: the ledger's decision dicts, oldest first -> Book."""
    mine = [d for d in decisions if rollout_of(d) is not None]
    results, moved, failures = {}, {}, {}
    for decision in mine:
        for node in decision.get("nodes") or ():
            _result(results, moved, failures, rollout_of(decision), node, decision)

    def opened(decision, node):   # a drain, or a recycle of a node that was already failed
        return _open(decision, rollout_of(decision), node) if decision["action"] in ("drain", "recycle") else None
    items = folds.per_node(mine, opened, _step)
    return Book(items, results, {rid: frozenset(nodes) for rid, nodes in moved.items()}, failures)
