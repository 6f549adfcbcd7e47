"""Planner actions applied to the simulated fleet, each with its sampled latency.

One function per action kind; each checks that every node is in a tier the action can start
from, with no operation of its own under way, and otherwise refuses the whole action (counted
in ``refused_actions``: a planner that asks for the impossible shows up in the results instead
of being silently corrected). Latency paths (gpufleet.simulate.latency): bringup = cold,
wake = warm (+ regate when the node's gate is stale), resume/admit = hot.
- A node keeps the tier the controller would read while an operation runs: provisioning for
  bring-ups and wakes (ledger imaging/waking), hot during a resume or admit (ledger still
  hot; the in-flight action keeps the planner from repeating it).
- ``reserve`` and ``substitute`` only record gang membership (the planner starts a member's
  wake or bring-up as its own action), as the ledger does for the controller.
- A gate run (bring-up, re-gating wake) fails with probability ``gate_failure``: the node is
  unavailable (``failed``, consecutive failures + 1) and comes back cold after ``recycle``;
  the planner sees it and picks a spare, as it does in the controller; a bring-up of a failed
  node (the planner retries those once no cold node is left) re-images it at once.
- ``hold``, ``park``, ``rollback`` and ``break_fix`` take effect at once; a rollback releases
  every member of its gang and moves the nodes it names (possibly none) to its target tier.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity import model
from gpufleet.capacity.tiers import gate_valid

__all__ = ["apply", "SOURCES"]

ANY = (model.IDLE, model.HOT, model.WARM, model.COLD, model.PROVISIONING)
SOURCES = {
    "bringup": (model.COLD,),
    "wake": (model.WARM,),
    "resume": (model.HOT,),
    "admit": (model.HOT,),
    "reserve": ANY,
    "substitute": ANY,
    "rollback": ANY,
    "hold": (model.IDLE,),
    "park": (model.IDLE, model.HOT),
    "break_fix": ANY + (model.UNAVAILABLE,),
}
# Kinds that may name a node whose own operation is still under way (they record or cancel).
OVER_RUNNING = ("reserve", "substitute", "rollback", "break_fix")


def apply(sim, action, now):
    """Start ``action``; returns False (and counts why) when it is refused."""
    if action.kind not in SOURCES:
        sim.metrics.refuse(action, "unknown kind (allowed: %s)" % ", ".join(model.ACTION_KINDS))
        return False
    nodes = [sim.fleet.by_name.get(name) for name in action.nodes]
    if None in nodes:
        sim.metrics.refuse(action, "node not in the pool")
        return False
    if not nodes and action.kind != "rollback":     # a rollback may only release its members
        sim.metrics.refuse(action, "names no node")
        return False
    if any(node.view_tier not in SOURCES[action.kind] and not _retry(action, node) for node in nodes):
        sim.metrics.refuse(action, "node tier not in %s" % "/".join(SOURCES[action.kind]))
        return False
    if action.kind not in OVER_RUNNING and any(node.running for node in nodes):
        sim.metrics.refuse(action, "node has an operation under way")
        return False
    if action.kind == "admit" and not _admit_ok(sim, action, nodes):
        return False
    sim.metrics.action(action.kind)
    HANDLERS[action.kind](sim, action, nodes, now)
    return True


def _retry(action, node):
    """A bring-up of a failed node below the break_fix limit: the planner retries it as cold
    (re-imaging is a bring-up), as the controller does; its pending recycle is cancelled."""
    return action.kind == "bringup" and node.tier == model.UNAVAILABLE and node.state == states.FAILED


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


def _operate(sim, node, action, now, seconds, kind="done"):
    node.op += 1
    node.running = True
    sim.clock.at(now + seconds, kind, (action, node, node.op))
    sim.track(action, node.name, True)


def _bringup(sim, action, nodes, now):
    for node in nodes:
        sim.metrics.power_on(node.name, now)
        sim.fleet.set_tier(node, model.PROVISIONING, now, state="imaging", gang_id=action.gang_id or node.gang_id)
        _operate(sim, node, action, now, sim.latency.sample("cold"))


def _wake(sim, action, nodes, now):
    # A node whose gate is older than the pool's gate_validity is re-gated on the way up
    # (issue 13): the regate latency more, and it can fail like a bring-up. A stale hot node
    # (powered, held) only re-gates.
    for node in nodes:
        stale = sim.gate_validity is not None and not gate_valid(node.gate_passed_at, sim.gate_validity, now)
        seconds = (sim.latency.sample("regate") if stale else 0.0)
        seconds += 0.0 if node.tier == model.HOT else sim.latency.sample("warm")
        if node.tier != model.HOT:
            sim.metrics.power_on(node.name, now)
        sim.fleet.set_tier(node, model.PROVISIONING, now, state="regating" if stale else "waking",
                           gang_id=action.gang_id or node.gang_id)
        _operate(sim, node, action, now, seconds)


def _resume(sim, action, nodes, now):
    for node in nodes:
        _operate(sim, node, action, now, sim.latency.sample("hot"), kind="resumed")


def _admit(sim, action, nodes, now):
    # One operation for the whole gang: the reservation is released once, all ranks start together.
    members = []
    for node in nodes:
        node.gang_id = action.gang_id or action.job_id
        node.op += 1
        node.running = True
        sim.track(action, node.name, True)
        members.append((action, node, node.op))
    sim.clock.at(now + sim.latency.sample("hot"), "admitted", members)


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


def _cancel(node):
    node.op += 1
    node.running = False


def _to_warm(sim, node, now):
    if node.tier in (model.HOT, model.IDLE, model.PROVISIONING):
        sim.metrics.power_off(node.name, now)
    _cancel(node)
    sim.fleet.set_tier(node, model.WARM, now, gang_id=None)


def _rollback(sim, action, nodes, now):
    # The gang ends: every member is released (its gang id cleared, as the ledger releases a
    # gang); the nodes the action names (hot or on their way) also go to the target tier.
    for node in sim.fleet.nodes:
        if node.gang_id is not None and node.gang_id == action.gang_id and node.tier != model.BUSY:
            _member(sim, node, None)
    target = action.target_tier or model.WARM
    for node in nodes:
        if target == model.HOT and node.tier in (model.HOT, model.IDLE):
            _cancel(node)
            sim.fleet.set_tier(node, model.HOT, now, gang_id=None)
        elif target == model.HOT and node.tier == model.PROVISIONING:
            _member(sim, node, None)
        elif node.tier == model.COLD:
            _member(sim, node, None)
        else:
            _to_warm(sim, node, now)


def _hold(sim, action, nodes, now):
    for node in nodes:
        sim.fleet.set_tier(node, model.HOT, now)


def _park(sim, action, nodes, now):
    for node in nodes:
        _to_warm(sim, node, now)


def _break_fix(sim, action, nodes, now):
    for node in nodes:
        _cancel(node)
        sim.fleet.set_tier(node, model.UNAVAILABLE, now, state="break_fix", gang_id=None)
        sim.clock.at(now + sim.latency.sample("repair"), "repaired", (None, node, node.op))


HANDLERS = {"bringup": _bringup, "wake": _wake, "resume": _resume, "admit": _admit, "reserve": _reserve,
            "substitute": _substitute, "rollback": _rollback, "hold": _hold, "park": _park, "break_fix": _break_fix}
