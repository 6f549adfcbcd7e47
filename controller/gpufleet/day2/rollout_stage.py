"""The rollout and renewal stage of one controller pass, after the day-2 repair stage.

``decide`` is pure: the pools' unfinished rollouts (ledger ``rollouts`` rows), the NodeViews,
the running jobs, the pools' policies, the rollout book (gpufleet.day2.rollout_book, folded
from the decision log), what the repair stage already holds, the nodes with a machine action
in flight and the clock -> the actions, the rollout updates (canaries chosen, phase changes;
the caller writes them before it records the actions) and the nodes this stage holds.

One budget per pool (``day2.budget``): repair cases and the drains the repair stage starts now
are counted first, then the open rollout and renewal work; rollouts start within what is
left, renewals after them. A node is moved only while idle (joined and running nothing, or
hot): drain, then recycle with the target version (``recycle.yml`` with the image and gate
profile variables), then readmit to the tier it left. A node that took a job between the
plan and the drain waits for it (a rollout never requeues). Canaries first; more canary gate
failures than ``day2.refresh.max_canary_failures`` halt the rollout, which then redeploys the
previous version on every node it moved (``rolling_back``), as an operator's ``gpufleet
refresh rollback`` does.
"""
from collections import Counter
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Optional, Tuple

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.model import UNAVAILABLE
from gpufleet.day2 import budget, renewal
from gpufleet.day2.refresh import Rollout, plan_refresh
from gpufleet.day2.stage import IN_SERVICE, _with_peers, running_on
from gpufleet.work.action import ROLLOUT, Action

__all__ = ["RolloutPass", "Update", "decide", "label", "out_by_pool"]


@dataclass(frozen=True)
class Update:
    rollout_id: int
    canaries: Optional[Tuple[str, ...]] = None
    phase: Optional[str] = None
    reason: str = ""
    expect: Tuple[str, ...] = ()       # the phases it may move from (a racing operator wins)


@dataclass(frozen=True)
class RolloutPass:
    actions: Tuple[Action, ...] = ()   # stage ROLLOUT: drain, recycle, revalidate, readmit
    updates: Tuple[Update, ...] = ()
    claimed: frozenset = frozenset()
    notes: Tuple[str, ...] = ()


def label(record):
    """What a node on the rollout's target is called: the version, plus the gate profile for
    a gate-profile rollout (the image stays, yet every node must pass the new profile)."""
    if record.get("gate_profile"):
        return "%s+%s" % (record["to_version"], record["gate_profile"])
    return record["to_version"]


def _extra(rollout_id, role, version, gate_profile, back_to, revalidate=False):
    """The ``rollout`` extra of a rollout or renewal step (rollout_book folds it back)."""
    extra = {"rollout_id": rollout_id, "role": role, "version": version, "gate_profile": gate_profile,
             "back_to": back_to}
    if revalidate:
        extra["revalidate"] = True
    return extra


class _Pass:
    """Working state of one stage run (actions, updates, room left per pool)."""

    def __init__(self, views, pools, room, held, busy, running, now, fabric=None, lent=()):
        self.views, self.pools, self.room, self.held = views, pools, room, set(held)
        self.busy, self.running, self.now, self.fabric = busy, running, now, fabric
        self.lent = lent     # fabric peers lent to runs in flight: picked last
        self.actions, self.updates, self.notes = [], [], []

    def start(self, node, pool, role, version, gate_profile, rollout_id, why, revalidate=False):
        """The first step of one node's work: drain it (in service) or recycle it (failed).
        ``revalidate``: a renewal that re-gates the drained node without a reimage."""
        view = self.views[node]
        back_to = states.JOINED if view.state == states.JOINED else states.HOT
        extra = _extra(rollout_id, role, version, gate_profile, back_to, revalidate)
        kind = "drain" if view.state in IN_SERVICE else "recycle"
        self.add_step(kind, pool, node, why, extra, None)
        self.room[pool] = self.room.get(pool, 0) - 1
        self.held.add(node)

    def add_step(self, kind, pool, node, why, extra, target_tier):
        action = Action(kind, pool, (node,), why, target_tier=target_tier, rollout=dict(extra), stage=ROLLOUT)
        if kind == "recycle":
            action = _with_peers(action, self.views, self.held | {node}, self.busy, self.pools[pool], self.now,
                                 self.fabric, self.lent)
        self.actions.append(action)


def _advance(work, item):
    """The next step of an open item (drain done -> recycle -> readmit), or a note."""
    if item.in_flight or item.node in work.busy:
        return
    what = "rollout %s %s" % (item.rollout_id, item.role) if item.rollout_id is not None else item.role
    extra = _extra(item.rollout_id, item.role, item.version, item.gate_profile, item.back_to, item.revalidate)
    view = work.views.get(item.node)
    jobs = work.running.get(item.node) or (view.jobs if view is not None else ())
    if item.phase == "draining" and jobs:
        work.notes.append("%s %s: waiting for job(s) %s to end (a rollout never requeues)"
                          % (item.node, what, ", ".join(jobs)))
        return
    if item.phase == "draining" and item.revalidate:
        work.add_step("revalidate", item.pool, item.node, "%s: re-run the gate on %s (no reimage, stays on %s)"
                      % (what, item.node, item.version), extra, None)
    elif item.phase in ("draining", "to_recycle"):
        why = "%s: recycle %s with %s%s" % (what, item.node, item.version,
                                          " (gate profile %s)" % item.gate_profile if item.gate_profile else "")
        work.add_step("recycle", item.pool, item.node, why, extra, None)
    elif item.phase == "recycled":
        work.add_step("readmit", item.pool, item.node, "%s: %s passed on %s, back to %s"
                      % (what, item.node, item.version, item.back_to), extra, item.back_to)


def _pool_nodes(work, record, touched):
    """The rollout's nodes as plan_refresh sees them: in service or touched by it; nodes held
    elsewhere (repair, open work, in flight) are not free."""
    return [replace(v, tier=UNAVAILABLE) if v.node in work.held or v.node in work.busy else v
            for v in work.views.values()
            if v.pool == record["pool"] and (v.state in IN_SERVICE or v.node in touched)]


def _refresh(work, record, book, items):
    """One step of a rollout in phase canary or batches."""
    rid, pool = record["id"], record["pool"]
    rules = work.pools[pool].day2.refresh
    moved = book.moved.get(rid, frozenset())
    results = book.results.get(rid, {})
    touched = set(moved) | set(record["canaries"]) | {i.node for i in items}
    nodes = _pool_nodes(work, record, touched)
    versions = {n.node: label(record) if n.node in moved else n.image_version for n in nodes}
    open_nodes = {i.node for i in items}
    for node in record["canaries"]:   # chosen, then the controller stopped before their drain
        if node in work.views and node not in results and node not in open_nodes \
                and node not in work.busy and work.room.get(pool, 0) > 0:
            work.start(node, pool, "canary", record["to_version"], record["gate_profile"], rid,
                       "rollout %s canary %s: %s -> %s (restarted)" % (rid, node, record["from_version"],
                                                                     record["to_version"]))
    state = Rollout(pool, label(record), record["from_version"], tuple(record["canaries"]))
    after, step = plan_refresh(state, nodes, results, (), rules, work.room.get(pool, 0), versions)
    if after.halted:
        work.updates.append(Update(rid, phase="rolling_back", reason="halted: " + after.reason,
                                   expect=("canary", "batches")))
        return
    if step.kind == "refresh" and not record["canaries"]:
        work.updates.append(Update(rid, canaries=after.canaries))
        role = "canary"
    elif step.kind == "refresh":
        role = "batch"
    else:
        _settle(work, record, step, items, results)
        return
    if role == "batch" and record["phase"] == "canary":
        work.updates.append(Update(rid, phase="batches", reason="canaries passed", expect=("canary",)))
    for node in step.nodes:
        work.start(node, pool, role, record["to_version"], record["gate_profile"], rid,
                   "rollout %s %s: %s -> %s on %s (%s)" % (rid, role, record["from_version"],
                                                           record["to_version"], node, step.reason))


def _settle(work, record, step, items, results):
    if step.kind == "done" and not items:
        failed = sorted(n for n, ok in results.items() if not ok)
        why = step.reason + ("; gate failed on %s (left failed for the repair path)" % ", ".join(failed)
                             if failed else "")
        work.updates.append(Update(record["id"], phase="done", reason=why, expect=("canary", "batches")))
    elif step.kind == "wait" and record["phase"] == "canary" and record["canaries"] \
            and all(results.get(c) is not None for c in record["canaries"]):
        work.updates.append(Update(record["id"], phase="batches", reason="canaries passed", expect=("canary",)))
        work.notes.append("rollout %s: %s" % (record["id"], step.reason))
    else:
        work.notes.append("rollout %s: %s" % (record["id"], step.reason))


def _roll_back(work, record, book, items):
    """Redeploy the previous version on every node the rollout moved, idle ones first."""
    rid, pool = record["id"], record["pool"]
    failures = book.rollback_failures.get(rid, {})
    limit = work.pools[pool].day2.max_recycles
    given_up = sorted(n for n in book.moved.get(rid, frozenset()) if failures.get(n, 0) >= limit)
    left = sorted(book.moved.get(rid, frozenset()) - {i.node for i in items} - set(given_up))
    if not left and not items:
        why = "%s back on %s" % (pool, record["from_version"])
        if given_up:
            why += "; %s failed the rollback %d time(s), left failed for a person" % (", ".join(given_up), limit)
        work.updates.append(Update(rid, phase="rolled_back", reason=why, expect=("rolling_back",)))
        return
    for node in left:
        view = work.views.get(node)
        if view is None or node in work.busy or node in work.held or work.running.get(node) or view.jobs:
            continue
        if work.room.get(pool, 0) <= 0:
            work.notes.append("rollout %s: rollback of %s waits for the disruption budget" % (rid, node))
            continue
        work.start(node, pool, "rollback", record["from_version"], record["from_gate_profile"], rid,
                   "rollout %s rollback: redeploy %s on %s (%s)" % (rid, record["from_version"], node,
                                                                    record["reason"]))


def _renew(work, pools_busy):
    """Renewal in pools without a rollout: idle nodes due, most overdue first, budget left."""
    views = [v for v in work.views.values() if v.state in IN_SERVICE and v.pool not in pools_busy
             and v.node not in work.held and v.node not in work.busy]
    joined_at = {v.node: v.since for v in views if v.state == states.JOINED}
    policy = SimpleNamespace(pools=work.pools)
    due = [d for d in renewal.due_for_renewal(views, policy, work.now, joined_at) if d.idle]
    cands = [budget.Candidate(d.node, d.pool, d.severity, d.since) for d in due]
    chosen = budget.select(cands, {p: max(r, 0) for p, r in work.room.items()}, work.room, {})
    why = {d.node: d for d in due}
    for cand in chosen.start:
        due_one, version = why[cand.node], work.views[cand.node].image_version
        if not version:
            work.notes.append("renewal of %s: no image version recorded; left alone" % cand.node)
            continue
        revalidate = due_one.kind == "revalidate"
        work.start(cand.node, cand.pool, "renewal", version, None, None,
                   "renewal (%s): %s; %s on %s" % (due_one.kind, due_one.reason,
                                                  "re-gate" if revalidate else "recycle", version),
                   revalidate=revalidate)


def out_by_pool(book):
    """{pool: nodes out for rollout or renewal work} (the repair stage counts them as spent)."""
    return dict(Counter(item.pool for item in book.items.values()))


def decide(records, views, jobs, pools, book, day2_out, held, busy, now, fabric=None, lent=()):
    """records: unfinished rollouts (ledger rows); views: NodeViews; jobs: Jobs; pools: {pool:
    Pool policy}; book: rollout_book.Book; day2_out: {pool: nodes out for repair, counted
    first}; held: nodes the repair stage holds; busy: machine actions in flight; fabric:
    {node: (fabric set, rack)} for the recycle's peers (as the repair stage); lent: nodes lent as
    fabric peers to runs in flight (picked last). -> RolloutPass."""
    views = {v.node: v for v in views if v.pool in pools}
    sizes = {p: sum(1 for v in views.values() if v.pool == p) for p in pools}
    open_by_pool = out_by_pool(book)
    room = {p: budget.allowed(r.day2.budget, sizes[p]) - day2_out.get(p, 0) - open_by_pool.get(p, 0)
            for p, r in pools.items()}
    work = _Pass(views, pools, room, set(held) | set(book.items), busy, running_on(jobs), now, fabric, lent)
    for item in sorted(book.items.values(), key=lambda i: i.node):
        if item.pool in pools:
            _advance(work, item)
    active = [r for r in records if r["pool"] in pools]
    # failed its gate on the target: the rollout's to restore, not the planner's to retry
    restore = {n for r in active for n in book.moved.get(r["id"], ())
               if book.results.get(r["id"], {}).get(n) is False}
    for record in sorted(active, key=lambda r: r["id"]):
        items = [i for i in book.items.values() if i.rollout_id == record["id"]]
        if record["phase"] in ("canary", "batches"):
            _refresh(work, record, book, items)
        elif record["phase"] == "rolling_back":
            _roll_back(work, record, book, items)
        else:
            work.notes.append("rollout %s halted: %s" % (record["id"], record["reason"]))
    _renew(work, {r["pool"] for r in active})
    return RolloutPass(tuple(work.actions), tuple(work.updates), frozenset(work.held | restore),
                       tuple(work.notes))
