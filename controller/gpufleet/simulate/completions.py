"""Operations finishing: what a node becomes when its bring-up, wake, resume or admit lands.

Stale completions (the node was re-targeted since: parked, rolled back, sent to break_fix)
are ignored: every operation carries the node's ``op`` counter from when it started.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity import model
from gpufleet.simulate.scheduler import start_job

__all__ = ["complete"]


def complete(sim, kind, payload, now):
    """An event of ``kind`` fired at ``now``."""
    if kind == "admitted":
        return _admitted(sim, payload, now)
    action, node, op = payload
    if action is not None:
        sim.track(action, node.name, False)
    if op != node.op:
        return None
    node.running = False
    if kind == "done":
        return _ready(sim, action, node, now)
    if kind == "resumed":
        return sim.fleet.set_tier(node, model.IDLE, now)
    if kind == "repaired":
        if node.state == states.BREAK_FIX:
            node.failures = 0
        return sim.fleet.set_tier(node, model.COLD, now)
    if kind == "expired":
        return sim.fleet.expire(node, now)
    raise ValueError("unknown simulator event %r" % kind)


def _ready(sim, action, node, now):
    if node.state in (states.IMAGING, "regating") and sim.latency.gate_fails():
        node.failures += 1
        node.op += 1
        sim.fleet.set_tier(node, model.UNAVAILABLE, now, state="failed")
        sim.clock.at(now + sim.latency.sample("recycle"), "repaired", (None, node, node.op))
        return
    if node.state in (states.IMAGING, "regating"):
        node.failures, node.gate_passed_at = 0, now
    if action.kind == "bringup" and action.target_tier == model.WARM:
        sim.metrics.power_off(node.name, now)   # brought up, validated, then parked
        sim.fleet.set_tier(node, model.WARM, now)
    else:
        sim.fleet.set_tier(node, model.HOT, now)


def _admitted(sim, members, now):
    action = members[0][0]
    for _, node, _ in members:
        sim.track(action, node.name, False)
    live = [node for _, node, op in members if node.op == op]
    for node in live:
        node.running = False
    job = sim.workload.find(action.job_id)
    if job is not None and job.start is None and len(live) == job.nodes:
        start_job(sim, job, live, now)
    else:
        for node in live:
            sim.fleet.set_tier(node, model.IDLE, now, gang_id=None)
