# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The acceptance gate's fabric test sets: which nodes of a run measure their fabric together.

The nodes that passed their single-node phases in a run are cut into test sets of ``size``
nodes (the profile's ``nccl_multi_node.nodes``), never across fabric sets: a node's
``gpufleet_fabric_set`` (unset: one set for all) names the nodes its NCCL and RDMA traffic
can be measured with. Within a fabric set a short last set borrows the set's other validated
nodes first, then the known-good ``peers`` of the same fabric set the run was given.

A set still short is one of two things, and the caller (playbooks/tasks/fabric.yml) treats
them apart:

- short because the run never had enough nodes of that fabric set: the run was asked for
  something the gate cannot do, and the node is refused (fails) as before;
- short only because nodes of the run that would have completed it left the run first (failed
  an earlier step, or stopped answering): the node is not at fault, so its fabric phase is
  ``not run``, with a reason naming those nodes. It is not admitted either (no fabric proof),
  and goes back to ``recycling``, from which a bring-up validates it again with a peer.

Pure: playbooks/tasks/fabric_sets.yml passes each node's facts through the
``gpufleet.baremetal.fabric_sets`` filter (plugins/filter/fabric_sets.py).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["NOT_RUN", "FIX", "describe", "left_why", "cut"]

NOT_RUN = "not run: fabric set short"
FIX = "fix: re-run with gpufleet_fabric_peers or more members"


def left_why(gate=None, failure_reason=None, step_state=None, in_play=True):
    """Why a node of the run did not reach the fabric phase, or None when it is still in
    the run without a failure (validated, or past validating already: a warm-pool member).

    ``gate``: its registered single-node gate result; ``failure_reason``: the reason its
    rescue kept; ``step_state``: its last recorded step; ``in_play``: Ansible still runs it
    (a node dropped as unreachable is not)."""
    gate = gate or {}
    if failure_reason:
        if gate.get("verdict") not in (None, "pass") and gate.get("failed_phase"):
            return "failed its %s phase" % gate["failed_phase"]
        return "failed while %s" % step_state if step_state else "failed"
    if not in_play:
        return "stopped answering"
    return None


def describe(host, facts, in_play=True):
    """One node of the run as ``cut`` reads it, from its facts (a mapping of host variables)."""
    step = facts.get("gpufleet_step") or {}
    state = step.get("state") if hasattr(step, "get") else None
    reason = facts.get("gpufleet_failure_reason")
    # Ansible's list of the play's hosts ignores --limit and keeps hosts that failed an earlier
    # play (enroll): only a node that started its steps in this run (recorded one) left it.
    why = left_why(facts.get("gpufleet_gate"), reason, state, in_play) if (step or reason) else None
    return {"node": host, "fabric_set": facts.get("gpufleet_fabric_set") or "",
            "validated": in_play and not reason and state == "validating", "left": why}


def _batch(members, size):
    return [members[i:i + size] for i in range(0, len(members), size)]


def cut(nodes, size, peers=()):
    """Cut a run into fabric test sets.

    ``nodes``: the run's nodes in play order, each ``{"node", "fabric_set", "validated",
    "left"}`` (``left``: why it left the run, or None; see ``describe``); ``size``: nodes per
    set (at least 2); ``peers``: the known-good nodes offered, each ``{"node", "fabric_set"}``,
    in the order they are preferred.

    Returns ``{"validated": [node, ...], "sets": [[leader, member, ...], ...], "not_run":
    {node: reason}}``. A set shorter than ``size`` is left short (the caller refuses it);
    its members are in ``not_run`` when the nodes that left the run would have completed it.
    """
    size = int(size)
    if size < 1:
        raise ValueError("fabric test sets need at least 1 node each, not %d" % size)
    validated = [n["node"] for n in nodes if n["validated"]]
    sets, not_run = [], {}
    for name in sorted(set(n["fabric_set"] for n in nodes if n["validated"])):
        members = [n["node"] for n in nodes if n["validated"] and n["fabric_set"] == name]
        borrowable = [p["node"] for p in peers if p["node"] not in validated and p["fabric_set"] == name]
        groups = _batch(members, size)
        last = groups[-1]
        if len(last) < size:
            spare = [n for n in members + borrowable if n not in last]
            groups[-1] = last = last + spare[:size - len(last)]
        if len(last) < size:
            left = [n for n in nodes if n["left"] and not n["validated"] and n["fabric_set"] == name]
            if left and len(last) + len(left) >= size:
                why = ", ".join("peer %s %s" % (n["node"], n["left"]) for n in left)
                reason = "%s: %s; %s" % (NOT_RUN, why, FIX)
                not_run.update((node, reason) for node in last if node in members)
        sets.extend(groups)
    return {"validated": validated, "sets": sets, "not_run": not_run}
