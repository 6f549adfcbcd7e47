"""L2 evidence: what a pool's pending job waits for while its nodes are being readied.

Nodes on their way (state, time in state, expected time left from the pool's measured
durations), gate failures with the check and its measured value, the job's gang and its
missing members, and concurrency limits reached.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.view.answer import duration
from gpufleet.view.categories import IN_FLIGHT_STATES
from gpufleet.view.startup import expected_left, pool_step_durations
from gpufleet.view.supply import gate_failures

__all__ = ["on_their_way", "node_progress", "gate_lines", "gang_of"]

_ON_THE_WAY = ("provisioning", "hot", "warm", "cold", "draining")
_VALIDATED = (states.READY, states.HOT, states.JOINED)


def node_progress(node, durations, now):
    """'n3 validating for 4m10s, about 1m50s left (median of 3 measured validating stays: 360 s)'."""
    elapsed = now - node["since"] if node["since"] is not None else None
    left, how = expected_left(durations, node["state"], elapsed or 0.0)
    text = "%s %s for %s" % (node["node"], node["state"], duration(elapsed))
    if left is None:
        text += " (%s)" % how
    elif left > 0:
        text += ", about %s left (%s)" % (duration(left), how)
    else:
        text += ", longer than usual: check the node (%s)" % how
    return text, {"node": node["node"], "state": node["state"], "seconds_in_state": elapsed,
                  "expected_seconds_left": left}


def gate_lines(inputs, nodes):
    """'n5 failed the gate: nvbandwidth_d2d measured 92.54 GB/s (threshold {...})' per check."""
    return ["%s failed the gate: %s measured %s %s (threshold %s)" % (node["node"], check, measured, unit, threshold)
            for node in nodes if node["category"] in ("failed", "break_fix")
            for check, measured, threshold, unit in gate_failures(inputs.gate_reports.get(node["node"]))]


def gang_of(inputs, job_id):
    return next((gang for gang in inputs.gangs
                 if str(gang.get("job")) == str(job_id) or gang.get("gang_id") == str(job_id)), None)


def _gang_lines(gang, by_name):
    members = [m for m in gang.get("members") or [] if m.get("status", "member") == "member"]
    ready = [m["node"] for m in members if by_name.get(m["node"], {}).get("state") in _VALIDATED]
    missing = [m["node"] for m in members if m["node"] not in ready]
    line = "gang %s (%s) has %d of %d members validated" % (
        gang["gang_id"], gang.get("status", "?"), len(ready), gang.get("size", len(members)))
    if missing:
        found = ", ".join("%s %s" % (n, by_name.get(n, {}).get("state", "?")) for n in missing)
        line += "; waiting for %s" % found
    return [line], {"gang": gang["gang_id"], "members_ready": ready, "members_missing": missing}


def _concurrency_lines(inputs, pool, nodes):
    lines = []
    in_flight = [n for n in nodes if n["state"] in IN_FLIGHT_STATES]
    startable = [n for n in nodes if n["category"] in ("cold", "warm")]
    if pool.max_concurrent_bringups and len(in_flight) >= pool.max_concurrent_bringups and startable:
        lines.append("pool concurrency limit reached: %d of %d bring-ups under way, %d nodes wait "
                     "to start" % (len(in_flight), pool.max_concurrent_bringups, len(startable)))
    if inputs.fleet_concurrency and startable:
        fleet = sum(1 for t in _current_states(inputs) if t in IN_FLIGHT_STATES)
        if fleet >= inputs.fleet_concurrency:
            lines.append("fleet concurrency limit reached: %d of %d bring-ups under way"
                         % (fleet, inputs.fleet_concurrency))
    return lines


def _current_states(inputs):
    # transitions are oldest first: a node's last one by now is its state
    return {t.node: t.to_state for t in inputs.transitions if t.at <= inputs.now}.values()


def on_their_way(inputs, job, pool, nodes, transitions_by_node):
    """(evidence lines, details) for a job blocked at L2."""
    durations = pool_step_durations(transitions_by_node, pool.members)
    by_name = dict((n["node"], n) for n in nodes)
    gang = gang_of(inputs, job.job_id)
    lines, details = [], {"on_their_way": []}
    if gang:
        gang_text, details["gang"] = _gang_lines(gang, by_name)
        lines += gang_text
    for node in nodes:
        if node["category"] in _ON_THE_WAY:
            text, record = node_progress(node, durations, inputs.now)
            lines.append(text)
            details["on_their_way"].append(record)
    lines += gate_lines(inputs, nodes)
    lines += _concurrency_lines(inputs, pool, nodes)
    if not details["on_their_way"]:
        last = [d for d in inputs.decisions if d.get("pool") == pool.name]
        lines.append("no node of pool %s is on its way; last controller decision: %s" % (
            pool.name, "%s (%s)" % (last[-1]["action"], last[-1]["reason"]) if last else "none recorded"))
    return lines, details
