"""Planner actions applied to the simulated fleet, each with its sampled latency.

One function per action kind; each checks that every node is in a tier the action can start
from and otherwise refuses the whole action (counted in ``refused_actions``: a planner that
asks for the impossible shows up in the results instead of being silently corrected).
Latency paths (gpufleet.simulate.latency): bringup = cold, wake = warm, resume/admit = hot.
``reserve`` and ``substitute`` only record gang membership (the planner starts a member's
wake or bring-up as its own action), as the ledger does for the controller.
A bring-up (and a wake that re-gates) fails its gate with probability ``gate_failure``: the node becomes unavailable
(``failed``, consecutive failures + 1) and comes back cold after ``recycle``; the planner sees
the failure and picks a spare, as it does in the controller. ``hold``, ``park``, ``rollback``
and ``break_fix`` take effect at once (nothing waits on them).
"""
from gpufleet.capacity import model
from gpufleet.capacity.tiers import gate_valid
from gpufleet.simulate.scheduler import start_job

__all__ = ["apply", "complete"]

SOURCES = {
    "bringup": (model.COLD,),
    "wake": (model.WARM,),
    "resume": (model.HOT,),
    "admit": (model.HOT,),
    "reserve": (model.IDLE, model.HOT, model.WARM, model.COLD, model.PROVISIONING),
    "substitute": (model.IDLE, model.HOT, model.WARM, model.COLD, model.PROVISIONING),
    "rollback": (model.HOT, model.IDLE, model.PROVISIONING, model.WARM, model.COLD),
    "hold": (model.IDLE,),
    "park": (model.IDLE, model.HOT),
    "break_fix": (model.IDLE, model.HOT, model.WARM, model.COLD, model.PROVISIONING, model.UNAVAILABLE),
}


def apply(sim, action, now):
    """Start ``action``; returns False (and counts why) when it is refused."""
    if action.kind not in SOURCES:
        sim.metrics.refuse(action, "unknown kind (allowed: %s)" % ", ".join(model.ACTION_KINDS))
        return False
    nodes = [sim.fleet.by_name.get(name) for name in action.nodes]
    if None in nodes:
        sim.metrics.refuse(action, "node not in the pool")
        return False
    if not nodes or any(node.tier not in SOURCES[action.kind] for node in nodes):
        sim.metrics.refuse(action, "node tier not in %s" % "/".join(SOURCES[action.kind]))
        return False
    if action.kind == "admit" and not _admit_ok(sim, action, nodes):
        return False
    sim.metrics.action(action.kind)
    HANDLERS[action.kind](sim, action, nodes, now)
    return True


def _admit_ok(sim, action, nodes):
    job = sim.workload.find(action.job_id)
    if job is None or job.start is not None:
        sim.metrics.refuse(action, "job not pending")
        return False
    if len(nodes) != job.nodes or len(set(action.nodes)) != len(nodes):
        sim.metrics.partial_starts += 1
        sim.metrics.refuse(action, "partial start: %d distinct nodes for a %d-node job" % (len(set(action.nodes)), job.nodes))
        return False
    return True


def _begin(sim, node, action, now, path, state, extra=0.0):
    node.op += 1
    sim.fleet.set_tier(node, model.PROVISIONING, now, state=state, gang_id=action.gang_id or node.gang_id)
    sim.clock.at(now + sim.latency.sample(path) + extra, "done", (action, node, node.op))
    sim.track(action, node.name, True)


def _bringup(sim, action, nodes, now):
    for node in nodes:
        _begin(sim, node, action, now, "cold", "imaging")


def _wake(sim, action, nodes, now):
    # A parked node whose gate is older than the pool's gate_validity is re-gated on the way
    # up (issue 13): the wake takes the regate latency more and can fail like a bring-up.
    for node in nodes:
        stale = sim.gate_validity is not None and not gate_valid(node.gate_passed_at, sim.gate_validity, now)
        _begin(sim, node, action, now, "warm", "regating" if stale else "waking",
               sim.latency.sample("regate") if stale else 0.0)


def _resume(sim, action, nodes, now):
    for node in nodes:
        _begin(sim, node, action, now, "hot", "hot")


def _admit(sim, action, nodes, now):
    # One operation for the whole gang: the reservation is released once, all ranks start together.
    for node in nodes:
        node.op += 1
        sim.fleet.set_tier(node, model.PROVISIONING, now, state="hot", gang_id=action.gang_id or action.job_id)
        sim.track(action, node.name, True)
    sim.clock.at(now + sim.latency.sample("hot"), "admitted", (action, [(n, n.op) for n in nodes]))


def _member(sim, node, gang_id):
    node.gang_id = gang_id
    sim.fleet.touch(node)


def _reserve(sim, action, nodes, now):
    for node in nodes:
        _member(sim, node, action.gang_id)


def _substitute(sim, action, nodes, now):
    old = sim.fleet.by_name.get(action.replaces) if action.replaces else None
    if old is not None and old.gang_id == action.gang_id:
        _member(sim, old, None)
    for node in nodes:
        _member(sim, node, action.gang_id)


def _to_warm(sim, node, now):
    if node.tier in (model.HOT, model.IDLE, model.PROVISIONING):
        sim.metrics.power_offs += 1
    node.op += 1
    sim.fleet.set_tier(node, model.WARM, now, gang_id=None)


def _rollback(sim, action, nodes, now):
    target = action.target_tier or model.WARM
    for node in nodes:
        if target == model.HOT and node.tier in (model.HOT, model.IDLE):
            sim.fleet.set_tier(node, model.HOT, now, gang_id=None)
        elif target == model.HOT and node.tier == model.PROVISIONING:
            node.gang_id = None
            sim.fleet.touch(node)
        elif node.tier != model.COLD:
            _to_warm(sim, node, now)


def _hold(sim, action, nodes, now):
    for node in nodes:
        sim.fleet.set_tier(node, model.HOT, now)


def _park(sim, action, nodes, now):
    for node in nodes:
        _to_warm(sim, node, now)


def _break_fix(sim, action, nodes, now):
    for node in nodes:
        node.op += 1
        sim.fleet.set_tier(node, model.UNAVAILABLE, now, state="break_fix", gang_id=None)
        sim.clock.at(now + sim.latency.sample("repair"), "repaired", (node, node.op))


HANDLERS = {"bringup": _bringup, "wake": _wake, "resume": _resume, "admit": _admit, "reserve": _reserve,
            "substitute": _substitute, "rollback": _rollback, "hold": _hold, "park": _park, "break_fix": _break_fix}


def complete(sim, kind, payload, now):
    """An operation finished at ``now``; stale ones (node re-targeted since) are ignored."""
    if kind == "done":
        action, node, op = payload
        sim.track(action, node.name, False)
        if op == node.op:
            _done(sim, action, node, now)
    elif kind == "admitted":
        action, members = payload
        for node, _ in members:
            sim.track(action, node.name, False)
        live = [node for node, op in members if node.op == op]
        job = sim.workload.find(action.job_id)
        if job is not None and job.start is None and len(live) == job.nodes:
            start_job(sim, job, live, now)
        else:
            for node in live:
                sim.fleet.set_tier(node, model.IDLE, now, gang_id=None)
    elif kind == "repaired":
        node, op = payload
        if op == node.op:
            if node.state == "break_fix":
                node.failures = 0
            sim.fleet.set_tier(node, model.COLD, now)


def _done(sim, action, node, now):
    if node.state == "hot":                 # resume: hot -> joined, idle
        sim.fleet.set_tier(node, model.IDLE, now)
    elif node.state in ("imaging", "regating") and sim.latency.gate_fails():
        node.failures += 1
        node.op += 1
        sim.fleet.set_tier(node, model.UNAVAILABLE, now, state="failed")
        sim.clock.at(now + sim.latency.sample("recycle"), "repaired", (node, node.op))
    else:
        if node.state in ("imaging", "regating"):
            node.failures, node.gate_passed_at = 0, now
        if action.kind == "bringup" and action.target_tier == model.WARM:
            sim.metrics.power_offs += 1     # brought up, validated, then parked
            sim.fleet.set_tier(node, model.WARM, now)
        else:
            sim.fleet.set_tier(node, model.HOT, now)
