"""Bind a replaced member's job to its replacement's reservation once it is pending again.

"Replace, then repair" (``stage._replacements``) resumes a hot spare inside a reservation
``JOB@EPOCH`` on the job's surviving nodes and the spare, while the job still runs: Slurm moves
only a pending job into a reservation. Once the job is pending again (its own requeue, Slurm's
requeue after a node went DOWN, or day-2's after ``drain_timeout``) it must be bound, or it
starts elsewhere, or not at all, while the reserved nodes sit idle. ``fold`` reads the open
replacements back from the decision log; ``steps`` turns those whose job is pending and not in
its reservation into ``bind`` actions (playbooks/bind_replacement.yml). One bind per
reservation, ever: a bind that failed is said in its outcome and not repeated. A job that ended
without being requeued leaves its reservation to ``admit_members.sh``, which deletes every
``JOB@EPOCH`` reservation whose job is gone on the next resume or admission.

Until the bind ran, such a job is day-2's, not the planner's: ``awaiting_bind`` names it, and
the controller keeps it out of the planner's demand. Slurm's own requeue delay (``BeginTime``,
``AuthInfo=cred_expire``) hides it for 120 s by default; a site that sets that low would
otherwise see the planner admit the job as a new gang on other nodes, leaving the spare idle.
A bind that failed hands the job back to the planner.
"""
from dataclasses import dataclass, replace
from typing import Optional, Tuple

from gpufleet.work.action import REPAIR, Action
from gpufleet.work.codec import extra_of

__all__ = ["Replacement", "fold", "steps", "held_nodes", "awaiting_bind"]


@dataclass(frozen=True)
class Replacement:
    job_id: str
    pool: str
    reservation: str                # JOB@EPOCH
    nodes: Tuple[str, ...]          # the job's surviving nodes and its spare(s): the reserved ones
    spare: Tuple[str, ...]          # the node the resume made schedulable
    bound: bool = False             # a bind was recorded (in flight or done)
    bind_outcome: Optional[str] = None   # that bind's outcome once collected ("ok" or why not)


def fold(decisions):
    """decisions: the ledger's decision dicts, oldest first -> {reservation: Replacement}:
    replacements resumed (outcome ok), ``bound`` once a ``bind`` is recorded (in flight or done)."""
    found = {}
    for decision in decisions:
        extra = extra_of(decision)
        name = extra.get("reservation")
        if not extra.get("day2") or not name:
            continue
        if decision["action"] == "resume" and decision["outcome"] == "ok":
            found[name] = Replacement(str(decision.get("job")), decision["pool"], name,
                                      tuple(extra.get("reserve_nodes") or ()), tuple(decision["nodes"] or ()))
        elif decision["action"] == "bind" and name in found:
            found[name] = replace(found[name], bound=True, bind_outcome=decision.get("outcome"))
    return found


def _pending_outside(replacements, jobs):
    """The replacements whose job Slurm reports pending outside their reservation."""
    by_id = {j.job_id: j for j in jobs}
    for item in sorted(replacements.values(), key=lambda r: r.reservation):
        job = by_id.get(item.job_id)
        if job is not None and job.state == "PENDING" and job.reservation != item.reservation:
            yield item


def steps(replacements, jobs):
    """replacements: ``fold``'s; jobs: the capacity Jobs Slurm reports -> ``bind`` Actions
    for each job pending again outside its replacement's reservation."""
    return [Action("bind", item.pool, item.spare,
                   f"job {item.job_id} is pending again: bound to reservation {item.reservation} "
                   f"({','.join(item.nodes)}: its surviving nodes and its replacement {','.join(item.spare)})",
                   job_id=item.job_id, reservation=item.reservation, reserve_nodes=item.nodes, stage=REPAIR)
            for item in _pending_outside(replacements, jobs) if not item.bound]


def held_nodes(replacements, jobs):
    """The reserved nodes (spares and survivors) kept for their job while it is still active
    and not running on them: idle joined nodes otherwise, which the planner would park after
    the pool's idle time while the job waits for its requeue or to start (the lab: the
    survivor was parked and the requeued job waited for the failed node's repair)."""
    by_id = {j.job_id: j for j in jobs}
    held = set()
    for item in replacements.values():
        job = by_id.get(item.job_id)
        if job is not None:
            held |= set(item.nodes) - set(job.nodes_assigned if job.state == "RUNNING" else ())
    return held


def awaiting_bind(replacements, jobs):
    """Job IDs pending outside their open replacement's reservation whose bind is due or in
    flight: day-2 binds them, the planner must not admit them elsewhere meanwhile. Once the bind's
    outcome is in, a job pending outside the reservation is the planner's again (its bind failed,
    or it was requeued again after the reservation was gone): one bind per reservation, ever."""
    return frozenset(item.job_id for item in _pending_outside(replacements, jobs)
                     if not item.bound or item.bind_outcome is None)
