"""Slurm's power saving as a second way in: requests handed over through a spool directory.

``gpufleet slurm resume|suspend|resume-fail HOSTLIST`` run on the slurmctld host as Slurm's
ResumeProgram, SuspendProgram and ResumeFailProgram. They must return at once, so they only
write one request file (written to a temporary name, then renamed: the controller never
reads half a request) and exit. The controller reads the spool every pass, turns each
request into actions on exactly those nodes (the same playbooks as its own actions), records
them as decisions and deletes the request only after the decisions are committed, so a
request survives a controller restart. Why a spool and not an HTTP endpoint: it needs no
listening port, no credentials to guard, and works with the controller down (requests wait).
"""
import json
import os
import time
import uuid

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.controller.errors import ControllerError
from gpufleet.controller.slurm_json import expand_hostlist
from gpufleet.work.action import Action
from gpufleet.work.kinds import SLURM_SUSPENDED

__all__ = ["KINDS", "SLURM_RESUMED", "SLURM_SUSPENDED", "submit", "pending", "actions_for", "done"]

KINDS = ("resume", "suspend", "resume-fail")
# Target tiers that say Slurm's power saving asked (they persist with the decision, so a
# restarted controller resumes the action the same way): a resumed node must come up
# schedulable (Slurm already placed a job on it); a suspended node (SLURM_SUSPENDED) is powered
# off WITHOUT a drain, since Slurm already took it out of scheduling and resumes it itself when
# a job needs it (a drained node would never be picked again).
SLURM_RESUMED = "joined"


def submit(spool, kind, hostlist, clock=time.time):
    """Write one request; returns its path. Fails (non-zero exit for Slurm) when it cannot."""
    if kind not in KINDS:
        raise ControllerError("Unknown power-saving request %r; use one of %s." % (kind, ", ".join(KINDS)))
    nodes = expand_hostlist(hostlist, "the %s host list" % kind)
    if not nodes:
        raise ControllerError("The %s request names no nodes (host list %r)." % (kind, hostlist))
    try:
        os.makedirs(spool, exist_ok=True)
        name = "%d-%s-%s.json" % (int(clock() * 1000), kind, uuid.uuid4().hex[:8])
        tmp = os.path.join(spool, "." + name + ".tmp")
        with open(tmp, "w") as handle:
            json.dump({"kind": kind, "nodes": list(nodes), "at": clock()}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, os.path.join(spool, name))
    except OSError as exc:
        raise ControllerError("Cannot write the %s request into the spool %s: %s. Create it writable by "
                              "SlurmUser (docs/controller.md)." % (kind, spool, exc.strerror))
    return os.path.join(spool, name)


def pending(spool):
    """[(path, request dict)] oldest first; unreadable files are reported, not guessed."""
    if not spool or not os.path.isdir(spool):
        return []
    found = []
    for name in sorted(os.listdir(spool)):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        path = os.path.join(spool, name)
        try:
            with open(path) as handle:
                request = json.load(handle)
            if request.get("kind") not in KINDS or not request.get("nodes"):
                raise ValueError("kind or nodes missing")
        except (OSError, ValueError) as exc:
            request = {"kind": "invalid", "nodes": [], "error": str(exc)}
        found.append((path, request))
    return found


def actions_for(request, node_states, pool_of):
    """Actions that carry out one request on exactly its nodes (``node_states``: node -> ledger state).

    resume: parked nodes are woken, hot nodes resumed, the others brought up; all end joined
    (target_tier SLURM_RESUMED), since Slurm already placed a job on them. suspend: park
    without a drain (SLURM_SUSPENDED). resume-fail: park with a drain (the node missed
    ResumeTimeout: it stays out of scheduling until the controller re-provisions it).
    """
    kind, reason = request["kind"], "slurm %s (power saving)" % request["kind"]
    actions = []
    for node in request["nodes"]:
        state, pool = node_states.get(node), pool_of(node) or "-"
        if kind == "resume":
            step = {states.PARKED: "wake", states.HOT: "resume", states.JOINED: None}.get(state, "bringup")
            if step:
                actions.append(Action(kind=step, pool=pool, nodes=(node,), reason=reason,
                                      target_tier=SLURM_RESUMED))
        elif kind == "suspend":
            if state != states.PARKED:
                actions.append(Action(kind="park", pool=pool, nodes=(node,), reason=reason,
                                      target_tier=SLURM_SUSPENDED))
        else:
            actions.append(Action(kind="park", pool=pool, nodes=(node,), target_tier="warm",
                                  reason="slurm resume-fail: the node missed ResumeTimeout; parked for recycling"))
    return actions


def done(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
