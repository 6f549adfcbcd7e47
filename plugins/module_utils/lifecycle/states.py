# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The node lifecycle as an explicit state machine (docs/lifecycle.md draws it).

``enrolled -> inspected -> imaging -> configuring -> validating -> ready -> joined``;
imaging, configuring and validating can fail; joined nodes drain and recycle; failed
nodes recycle (retry) or go to break-fix (a human); a validating node whose fabric phase
could not run for want of a peer recycles too (no failure); any state may be decommissioned.
The capacity controller's warmth tiers: ``hot`` (validated, registered with the scheduler
and held: admitted in seconds), ``parked`` (validated, then powered off: the warm tier)
and ``waking`` (a parked node being powered on, re-gated when its gate result is stale).
Compare Ironic's provision states and MAAS's machine lifecycle.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import IllegalTransition

__all__ = [
    "STATES", "TRANSITIONS", "BRINGUP_PATH", "POOL_STATE", "ADMITTED_STATE", "ADMISSIBLE",
    "PROVISIONABLE", "IN_PROGRESS", "WAKEABLE", "HOT", "PARKED", "WAKING",
    "check_transition", "is_past", "validate_state", "allowed_targets",
]

ENROLLED = "enrolled"
INSPECTED = "inspected"
IMAGING = "imaging"
CONFIGURING = "configuring"
VALIDATING = "validating"
READY = "ready"
JOINED = "joined"
FAILED = "failed"
DRAINING = "draining"
RECYCLING = "recycling"
BREAK_FIX = "break_fix"
DECOMMISSIONED = "decommissioned"
HOT = "hot"
PARKED = "parked"
WAKING = "waking"

# The happy path of a bring-up, in order; a re-run skips the steps a node is past.
BRINGUP_PATH = (ENROLLED, INSPECTED, IMAGING, CONFIGURING, VALIDATING, READY, JOINED)
POOL_STATE = READY
ADMITTED_STATE = JOINED
# Validated nodes a gang may admit at once (hot ones are already known to the scheduler).
ADMISSIBLE = (HOT, READY)
# Validated but powered off: a gang or the controller wakes them (parked -> waking).
WAKEABLE = (PARKED,)
# Nodes a gang or the warm pool may start provisioning (nothing in flight, not broken).
PROVISIONABLE = (ENROLLED, INSPECTED, RECYCLING)
# Work under way: a crash here leaves the node in an unknown condition (rollback fails it).
IN_PROGRESS = (IMAGING, CONFIGURING, VALIDATING, WAKING)

TRANSITIONS = {
    ENROLLED: (INSPECTED,),
    INSPECTED: (IMAGING,),
    IMAGING: (CONFIGURING, FAILED),
    CONFIGURING: (VALIDATING, FAILED),
    # validating -> recycling: the gate's fabric phase could not run because the nodes that
    # would have completed the node's fabric test set left the run first (failed an earlier
    # phase); not the node's failure, and not admitted without fabric proof: validated again
    # from recycling, with a peer (playbooks/tasks/fabric.yml)
    VALIDATING: (READY, FAILED, RECYCLING),
    READY: (HOT, PARKED, JOINED, RECYCLING),
    # hot -> waking: a held node whose gate result expired is re-gated by the wake playbook
    # (the planner sees it warm; playbooks/wake.yml powers on, which it is, and re-gates)
    HOT: (JOINED, PARKED, DRAINING, RECYCLING, WAKING),
    JOINED: (DRAINING,),
    DRAINING: (HOT, PARKED, RECYCLING, JOINED, FAILED),
    PARKED: (WAKING, RECYCLING),
    WAKING: (VALIDATING, READY, HOT, FAILED),
    RECYCLING: (IMAGING, ENROLLED),
    FAILED: (RECYCLING, BREAK_FIX),
    BREAK_FIX: (ENROLLED,),
    DECOMMISSIONED: (),
}
STATES = tuple(sorted(TRANSITIONS))


def validate_state(state, what="state"):
    """Return ``state`` if it is a lifecycle state, else raise naming the valid ones."""
    if state not in TRANSITIONS:
        raise IllegalTransition(
            'Unknown lifecycle %s "%s". Valid states: %s.' % (what, state, ", ".join(STATES)),
            state=state)
    return state


def allowed_targets(current):
    """Every state reachable in one step from ``current`` (decommission always is)."""
    targets = list(TRANSITIONS[validate_state(current)])
    if current != DECOMMISSIONED:
        targets.append(DECOMMISSIONED)
    return targets


def check_transition(node, current, target):
    """Raise IllegalTransition unless ``current -> target`` is an edge of the machine."""
    validate_state(target, "target state")
    if current is None:
        if target == ENROLLED:
            return
        raise IllegalTransition(
            'Node "%s" is not in the ledger, so it cannot move to "%s". '
            'Enroll it first (playbooks/enroll.yml records state "enrolled").' % (node, target),
            node=node, current=None, target=target)
    allowed = allowed_targets(current)
    if target not in allowed:
        raise IllegalTransition(
            'Illegal lifecycle transition for node "%s": %s -> %s. From "%s" the node may only '
            'move to: %s. Take it through one of those states first.'
            % (node, current, target, current, ", ".join(allowed) or "nothing (terminal)"),
            node=node, current=current, target=target, allowed=allowed)


def is_past(current, target):
    """True when ``current`` lies strictly after ``target`` on the bring-up path.

    A re-run after a crash uses this to skip work already done: a node recorded as
    ``configuring`` has finished imaging, so the imaging step is not repeated.
    """
    position = _position(current)
    goal = _position(target)
    if position is None or goal is None:
        return False
    return position > goal


def _position(state):
    # ``hot`` is a validated node the scheduler knows: past ``ready``, not yet ``joined``,
    # so a re-run bring-up leaves it alone instead of asking for an illegal hot -> imaging.
    if state == HOT:
        return BRINGUP_PATH.index(READY) + 0.5
    if state in BRINGUP_PATH:
        return BRINGUP_PATH.index(state)
    return None
