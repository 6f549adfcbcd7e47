"""The day-2 stage of one reconcile pass: what to start now, from what the pass read.

``decide`` is pure: Slurm's node rows, the NodeViews, the running jobs, the pools' policies,
the persistence tracks of the last pass, the open repair cases (folded from the decision
log, gpufleet.day2.cases), the nodes with a machine action in flight, extra signals (Redfish)
and the clock -> the day-2 actions, the new tracks, the operator drains left alone and the
nodes day-2 holds (the capacity planner must not count them as supply).

"Replace, then repair": in the pass that starts the drain of a node running a multi-node job,
a hot node of the same pool is resumed for that job (``resume``) and the failed node follows
the normal drain -> recycle path behind it.

Only nodes in service (ledger ``joined`` or ``hot``) are watched: a node being brought up,
parked or already failed is the capacity planner's. A hot node is held drained by us, so a
drain without a reason there is our hold, not an operator's.
"""
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, Tuple

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.model import HOT, UNAVAILABLE, WARM
from gpufleet.capacity.tiers import gate_valid
from gpufleet.day2 import bindings, budget, detect, peers, persistence, repair
from gpufleet.day2.cases import NOT_STARTED
from gpufleet.day2.model import OperatorDrain, Signal
from gpufleet.work.action import REPAIR, Action

__all__ = ["Day2Pass", "decide", "IN_SERVICE", "running_on"]

IN_SERVICE = (states.JOINED, states.HOT)
_NO_REASON = ("", "none", "(null)")


@dataclass(frozen=True)
class Day2Pass:
    actions: Tuple[Action, ...] = ()
    tracks: Dict = field(default_factory=dict)
    operator: Tuple[OperatorDrain, ...] = ()
    claimed: frozenset = frozenset()     # open cases, drains started now, operator drains,
    #                                      hot nodes resumed now as replacements, nodes with a
    #                                      signal this pass (suspect until it persists or goes)
    notes: Tuple[str, ...] = ()          # waits and holds, in words for the log
    awaiting_bind: frozenset = frozenset()   # job IDs day-2 binds to their replacement's
    #                                          reservation: no demand for the planner


def _watched_rows(rows, views, cases):
    for node, state, reason, reason_time in rows:
        view = views.get(node)
        if view is None or view.state not in IN_SERVICE or node in cases:
            continue
        if view.state == states.HOT and (reason or "").strip().lower() in _NO_REASON:
            continue    # our hold: registered drained, Slurm dropped the reason
        yield node, state, reason, reason_time


def running_on(jobs):
    """{node: IDs of the jobs Slurm runs on it}."""
    found = {}
    for job in jobs:
        if job.state == "RUNNING":
            for node in job.nodes_assigned:
                found.setdefault(node, []).append(job.job_id)
    return {n: tuple(sorted(ids)) for n, ids in found.items()}


def _persist(tracks, signals, views, pools, now):
    new_tracks, actionable = {}, []
    for pool, rules in sorted(pools.items()):
        mine = {k: t for k, t in (tracks or {}).items()
                if getattr(views.get(k[0]), "pool", None) == pool}
        seen = [s for s in signals if views[s.node].pool == pool]
        state, found = persistence.observe(mine, seen, now, rules.day2.persistence)
        new_tracks.update(state)
        actionable.extend(found)
    return new_tracks, actionable


def _target_tier(node, pool, views, claimed, rules):
    """Back to what the pool's floors lack (hot, then warm), else to service (joined)."""
    others = [v for v in views.values() if v.pool == pool and v.node != node
              and v.node not in claimed]
    if sum(1 for v in others if v.tier == HOT) < rules.floors.hot:
        return "hot"
    if sum(1 for v in others if v.tier == WARM) < rules.floors.warm:
        return "warm"
    return "joined"


def _fabric_of(node, pool, fabric):
    """(fabric set, rack) of a node: the inventory's ``gpufleet_fabric_set`` (default: the
    pool, one rack description being one fabric) and ``gpufleet_rack``."""
    fabric_set, rack = (fabric or {}).get(node) or ("", "")
    return fabric_set or "pool:%s" % pool, rack or ""


def _with_peers(action, views, claimed, busy, rules, now, fabric, lent=()):
    """A recycle with a known-good fabric peer of its node, or recorded not started without one."""
    node, pool = action.nodes[0], action.pool
    nodes = [peers.PeerNode(v.node, *_fabric_of(v.node, pool, fabric),
                            v.tier if v.node not in claimed or v.node == node else UNAVAILABLE,
                            gate_valid(v.gate_passed_at, rules.gate_validity, now), v.jobs)
             for v in views.values() if v.pool == pool]
    pick = peers.pick_peers(node, nodes, count=1, exclude=set(busy) | set(claimed), shared=lent)
    if not pick.ok:
        return replace(action, blocked="too few fabric peers: %s" % pick.reason)
    return replace(action, peers=pick.peers, reason="%s (%s)" % (action.reason, pick.reason))


def _reservation_for(job, now):
    """(reservation to resume a replacement in, words for the reason). A job the controller
    admitted as a gang runs in its own JOB@EPOCH already: the spare joins that one (a second
    would overlap it). A job in someone else's reservation: none (ours would overlap theirs,
    theirs is not ours to change), the spare is resumed unreserved."""
    if re.fullmatch(r"%s@\d+" % re.escape(job.job_id), job.reservation or ""):
        return job.reservation, ""
    if job.reservation:
        return "", (f"; job {job.job_id} runs in reservation {job.reservation}, not the controller's: "
                    "the spare is resumed without one")
    return "%s@%d" % (job.job_id, int(now)), ""


def _replacements(failed, jobs, views, claimed, busy, now):
    """"Replace, then repair" for the nodes whose drain starts now -> (actions, spares taken).

    A spare is a hot node of the failed node's pool (repair.replacements never crosses pools)
    that nothing else holds: no day-2 claim, no action in flight, no gang reserving it. It is
    resumed (the ``resume`` kind: playbooks/admit.yml) so Slurm can place the job again when it
    is requeued; no spare -> a ``resume`` recorded as not started, with the reason, once (the
    drain starts once per case) and nothing run. The spare is resumed inside a reservation
    ``JOB@EPOCH`` on the job's surviving nodes and the spare (the job is bound to it once it is
    pending again: ``bindings``), so no other job takes them meanwhile. The failed members are not
    among them: a job running in its own gang reservation gets them taken out of it
    (``release_nodes``), so once requeued it starts on its survivors and the spares, not on a
    failed member once repaired (the lab's requeued job waited out Slurm's requeue delay, took
    the repaired member and left the spare idle)."""
    if not failed:
        return [], set()
    spares = [v for v in views.values() if v.state == states.HOT and v.gang_id is None
              and v.node not in claimed and v.node not in busy]
    steps = repair.replacements(set(failed), jobs, spares + [views[n] for n in failed])
    # one reservation per job: its surviving nodes and every spare it gets now
    by_id = {j.job_id: j for j in jobs}
    reserve, release = {}, {}
    for step in steps:
        if step.kind == "replace":
            reserve.setdefault(step.job_id, {n for n in by_id[step.job_id].nodes_assigned if n not in failed})
            reserve[step.job_id].add(step.replacement)
            # the members replaced now (one without a spare stays: the job waits for its repair),
            # all in each of the job's resumes: two resumes run at once must leave the
            # reservation the same whichever goes last
            release.setdefault(step.job_id, set()).add(step.node)
    actions, taken = [], set()
    for step in steps:
        if step.kind == "replace":
            taken.add(step.replacement)
            name, why = _reservation_for(by_id[step.job_id], now)
            actions.append(Action("resume", step.pool, (step.replacement,), step.reason + why,
                                  job_id=step.job_id, replaces=step.node, reservation=name,
                                  reserve_nodes=tuple(sorted(reserve[step.job_id])) if name else (),
                                  release_nodes=tuple(sorted(release[step.job_id])) if name else (), stage=REPAIR))
        else:
            actions.append(Action("resume", step.pool, (), step.reason, job_id=step.job_id,
                                  replaces=step.node, blocked=step.reason, stage=REPAIR))
    return actions, taken


def _case_action(open_case, step, views, claimed, busy, rules, now, fabric=None, lent=()):
    """The action for a repair step (None: a wait, nothing to start)."""
    case = open_case.case
    if step.kind == "break_fix":
        record = repair.break_fix_record(case, open_case.reasons, (), ())
        return Action("break_fix", case.pool, (case.node,), record.summary,
                      record=asdict(record), stage=REPAIR)
    if step.kind not in ("requeue", "drain", "recycle", "readmit"):
        return None
    # only a requeue carries its jobs; only a readmit has a target tier
    action = Action(step.kind, case.pool, (case.node,), step.reason,
                    jobs=step.jobs if step.kind == "requeue" else (),
                    target_tier=step.target_tier if step.kind == "readmit" else None, stage=REPAIR)
    if step.kind == "recycle":
        return _with_peers(action, views, claimed, busy, rules, now, fabric, lent)
    return action


def decide(rows, views, jobs, pools, tracks, cases, busy, now, extra_signals=(),
           checker_prefixes=(), fabric=None, also_out=None, replacements=None, lent=()):
    """rows: (node, state, reason, reason_time) from Slurm; views: NodeViews; jobs: Jobs;
    pools: {pool: capacity Pool policy}; tracks: the last pass's persistence state; cases:
    {node: OpenCase}; busy: nodes with a machine action in flight; extra_signals: Signals
    from elsewhere (Redfish); fabric: {node: (fabric set, rack)} from the inventory (missing:
    the pool is the fabric set); also_out: {pool: nodes out for rollout or renewal work},
    spent from the same budget (gpufleet.day2.rollout_stage); replacements: the open ones
    (gpufleet.day2.bindings.fold), whose jobs are bound once pending again; lent: nodes lent
    as fabric peers to runs in flight (a recycle picks them last). -> Day2Pass."""
    views = {v.node: v for v in views if v.pool in pools}
    cases = {n: c for n, c in cases.items() if c.case.pool in pools}
    found = detect.slurm_signals(list(_watched_rows(rows, views, cases)), now, checker_prefixes)
    # A node under one of our machine actions changes power and Slurm state on purpose: what
    # it shows meanwhile is not counted.
    signals = [s for s in found.signals if s.node not in busy] + [
        s for s in extra_signals if isinstance(s, Signal) and s.node in views
        and s.node not in cases and s.node not in busy and views[s.node].state in IN_SERVICE]
    new_tracks, actionable = _persist(tracks, signals, views, pools, now)
    running = running_on(jobs)
    candidates = [budget.Candidate(a.node, views[a.node].pool, a.severity, a.first_seen)
                  for a in actionable if a.node not in busy]
    why = {a.node: a.reasons for a in actionable}
    out_now = Counter(also_out or {}) + Counter(c.case.pool for c in cases.values())
    sizes = {p: sum(1 for v in views.values() if v.pool == p) for p in pools}
    chosen = budget.select(candidates, {p: r.day2.budget for p, r in pools.items()}, sizes, out_now)
    notes = ["held %s: %s" % (c.node, reason) for c, reason in chosen.held]
    # A track has done its work once its node's case is open (now or before): dropped, so a
    # repaired node is not suspect for the rest of the window on the signal it was repaired for.
    acted = set(cases) | {c.node for c in chosen.start}
    new_tracks = {key: track for key, track in new_tracks.items() if key[0] not in acted}
    # Day-2 holds its cases; a node a person drained is no supply for the planner either (a
    # resume would undo the person's drain).
    claimed = set(cases) | {c.node for c in chosen.start} | {o.node for o in found.operator}
    # A node showing a signal is suspect before the signal persists: never supply, a spare
    # or a fabric peer meanwhile (a health checker's drain on a slow HCA, offered as a peer,
    # failed a healthy node's fabric phase with it in the lab).
    claimed |= {s.node for s in signals}
    # ... and until its track ends (no sighting within the window): a Redfish reading is handed
    # over once, every bmc_interval, so the passes between readings show no signal. The lab's
    # powered-off hot node counted as hot again in those passes and the planner parked it.
    claimed |= {key[0] for key in new_tracks}
    # replacements first: the job waits on them, the failed node's repair does not
    actions, spares = _replacements([c.node for c in chosen.start], jobs, views, claimed, busy, now)
    notes += ["%s: %s" % (a.replaces, a.blocked) for a in actions if a.blocked]
    claimed |= spares
    for cand in chosen.start:
        actions.append(Action("drain", cand.pool, (cand.node,),
                              "; ".join(why[cand.node]), jobs=running.get(cand.node, ()), stage=REPAIR))
    for node, open_case in sorted(cases.items()):
        if open_case.in_flight or node in busy:
            continue
        rules = pools[open_case.case.pool]
        case = replace(open_case.case, jobs=running.get(node, ()))
        target = _target_tier(node, case.pool, views, claimed, rules)
        step = repair.next_step(case, rules.day2, now, target)
        action = _case_action(open_case, step, views, claimed, busy, rules, now, fabric, lent)
        if action is None:
            notes.append("%s %s: %s" % (node, case.phase, step.reason))
        elif action.blocked and "%s %s" % (NOT_STARTED, action.blocked) == open_case.not_started:
            notes.append("%s %s: %s" % (node, case.phase, action.blocked))   # recorded already
        else:
            actions.append(action)
    mine = {name: r for name, r in (replacements or {}).items() if r.pool in pools}
    actions += bindings.steps(mine, jobs)
    claimed |= bindings.held_nodes(mine, jobs)
    return Day2Pass(tuple(actions), new_tracks, found.operator, frozenset(claimed), tuple(notes),
                    bindings.awaiting_bind(mine, jobs))
