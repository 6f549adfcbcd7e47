"""``why NODE``: where one node stands and what keeps it from running work."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.view.answer import Answer, duration
from gpufleet.view.seam import by_node
from gpufleet.view.startup import pool_step_durations
from gpufleet.view.supply import gate_failures, node_now
from gpufleet.view.waiting import node_progress

__all__ = ["why_node", "known_node"]


def known_node(inputs, name):
    return (inputs.pool_of(name) is not None or name in inputs.slurm_nodes
            or any(t.node == name for t in inputs.transitions))


def _last_why(transitions):
    return transitions[-1].why if transitions else ""


def _supply(inputs, node, transitions):
    state = node["state"]
    evidence = ["%s since %s ago%s" % (state, duration(inputs.now - node["since"]) if node["since"] else "?",
                                      ": " + _last_why(transitions) if transitions else "")]
    for check, measured, threshold, unit in gate_failures(inputs.gate_reports.get(node["node"])):
        evidence.append("gate check %s measured %s %s (threshold %s)" % (check, measured, unit, threshold))
    summary = {"not enrolled": "the pool owns the node but it is not enrolled in the ledger",
               states.FAILED: "the node failed (recycle it: playbooks/recycle.yml, or break_fix)",
               states.BREAK_FIX: "the node waits for a human repair (break_fix)",
               states.DECOMMISSIONED: "the node is decommissioned"}[state]
    return Answer(node["node"], "node", "L1", True, summary, tuple(evidence), {"state": state})


def _joined(inputs, node):
    name, category = node["node"], node["category"]
    slurm = "Slurm state %s" % ("+".join(node["slurm"]) if node["slurm"] else "unknown (not in sinfo)")
    if category == "busy":
        jobs = [j for j in inputs.jobs if j.state == "RUNNING" and name in j.nodes_assigned]
        return Answer(name, "node", "L4", False, "the node runs work",
                      tuple(["%s; jobs: %s" % (slurm, ", ".join(j.job_id for j in jobs) or "none listed")]),
                      {"jobs": [j.job_id for j in jobs]})
    if category == "idle":
        return Answer(name, "node", "L3", False, "joined and schedulable, running nothing",
                      (slurm,), {"slurm": node["slurm"]})
    reason = node["slurm_reason"] or "no reason given"
    return Answer(name, "node", "L3", True,
                  "joined in the ledger, but Slurm does not schedule it (%s)" % category.replace("_", " "),
                  ("%s, reason: %s" % (slurm, reason),), {"slurm": node["slurm"], "reason": reason})


def why_node(inputs, name):
    """The Answer for one node (``LookupError`` when nothing knows it)."""
    if not known_node(inputs, name):
        raise LookupError('Node "%s" is in no pool, not in the ledger and not in sinfo. Check the '
                          'name (gpufleet controller status lists the pools).' % name)
    transitions = by_node(inputs.transitions)
    mine = transitions.get(name, [])
    node = node_now(inputs, name, mine)
    if node["state"] in ("not enrolled", states.FAILED, states.BREAK_FIX, states.DECOMMISSIONED):
        return _supply(inputs, node, mine)
    if node["state"] == states.JOINED:
        return _joined(inputs, node)
    pool = inputs.pool_of(name)
    durations = pool_step_durations(transitions, pool.members if pool else (name,))
    text, record = node_progress(node, durations, inputs.now)
    summary = {"hot": "validated and held (hot): admitted when demand needs it",
               "warm": "parked (warm): powered off, woken when demand needs it",
               "cold": "enrolled, not yet brought up (cold)",
               "draining": "being drained"}.get(node["category"], "on its way: %s" % node["state"])
    return Answer(name, "node", "L2", True, summary, (text, "last transition: " + _last_why(mine)), record)
