"""An action to its journal line and back: what a restarted controller resumes, what the books fold.

The decisions table has columns for kind, pool, nodes, reason and job; the rest rides in the
decision's ``demand["action"]``: the gang fields always, then the stage's payload: ``day2:
true`` with the repair fields (the repair case book reads those), or ``rollout`` with the image
and peers (the rollout book reads those; never ``day2``, so no repair case takes a rollout step).
"""
from gpufleet.work.action import CAPACITY, REPAIR, ROLLOUT, Action
from gpufleet.work.kinds import DAY2_KINDS

__all__ = ["encode", "decode", "extra_of", "is_day2", "rollout_of", "ROLES"]

ROLES = ("canary", "batch", "rollback", "renewal")   # a rollout step's role (gpufleet.day2.rollout_book)


def encode(action):
    """The ``demand["action"]`` extra of ``action``'s decision."""
    extra = {"gang_id": action.gang_id, "replaces": action.replaces, "target_tier": action.target_tier,
             "deadline_at": action.deadline_at}
    if action.stage == ROLLOUT:
        extra.update(rollout=dict(action.rollout), image=dict(action.image), peers=list(action.peers))
    elif action.stage == REPAIR:
        extra.update(day2=True, jobs=list(action.jobs), peers=list(action.peers), record=action.record,
                     reservation=action.reservation, reserve_nodes=list(action.reserve_nodes),
                     release_nodes=list(action.release_nodes))
    return extra


def extra_of(decision):
    """The decision's action extra ({} when it has none)."""
    return (decision.get("demand") or {}).get("action") or {}


def is_day2(decision):
    """Day-2 decisions carry ``day2: true`` beside the action (the capacity planner's
    break_fix does not)."""
    return bool(extra_of(decision).get("day2"))


def rollout_of(decision):
    """The decision's ``rollout`` extra (a dict), or None for every other decision."""
    extra = extra_of(decision).get("rollout")
    return extra if isinstance(extra, dict) and extra.get("role") in ROLES else None


def decode(decision):
    """The Action a recorded decision asked for, as ``encode`` wrote it."""
    extra = extra_of(decision)
    common = dict(kind=decision["action"], pool=decision["pool"], nodes=tuple(decision["nodes"] or ()),
                  reason=decision["reason"], target_tier=extra.get("target_tier"))
    if rollout_of(decision) is not None:
        return Action(**common, rollout=dict(extra["rollout"]), image=dict(extra.get("image") or {}),
                      peers=tuple(extra.get("peers") or ()), stage=ROLLOUT)
    if extra.get("day2") and decision["action"] in DAY2_KINDS:
        return Action(**common, job_id=decision.get("job"), replaces=extra.get("replaces"),
                      jobs=tuple(extra.get("jobs") or ()), peers=tuple(extra.get("peers") or ()),
                      record=extra.get("record"), reservation=extra.get("reservation") or "",
                      reserve_nodes=tuple(extra.get("reserve_nodes") or ()),
                      release_nodes=tuple(extra.get("release_nodes") or ()), stage=REPAIR)
    return Action(**common, job_id=decision.get("job"), gang_id=extra.get("gang_id"),
                  replaces=extra.get("replaces"), deadline_at=extra.get("deadline_at"), stage=CAPACITY)
