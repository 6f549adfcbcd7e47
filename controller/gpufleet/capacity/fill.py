"""Reactive and proactive supply for one pool: pending single-node jobs, then the floors.

Reactive: pending jobs that idle nodes cannot serve get hot nodes resumed (even while other
nodes are on their way: seconds, not minutes), then the nodes on their way count, then parked
nodes are woken and cold nodes brought up: never more than the jobs need. Proactive: the hot
and warm floors in force are filled the same way, counting what is already on its way so
nothing is started twice.
"""
from gpufleet.capacity.emit import ago, warm_up
from gpufleet.capacity.model import HOT, IDLE, WARM

__all__ = ["reactive", "proactive"]


def reactive(run, pool, singles):
    """Serve pending single-node jobs; returns the on-the-way hot nodes left for the floors.

    A free hot node serves a job before a node still on its way does: a resume takes seconds,
    a bring-up or wake minutes. The node on its way then arrives as a spare (the floors count
    it; scale-down parks it when nothing wants it)."""
    view = run.views[pool]
    idle = view.count(IDLE)
    need = max(0, len(singles) - idle - view.resuming)
    waiting = singles[len(singles) - need:] if need else []
    hot = min(len(waiting), view.count(HOT))
    for job in waiting[:hot]:
        node = view.take(HOT)
        run.add("resume", pool, (node,), f"{_why(run, pool, job, idle, view)}: resuming hot {node} "
                "(fastest tier)", job_id=job.job_id)
    rest = waiting[hot:]
    spare_incoming = max(0, view.incoming_hot - len(rest))
    for job in rest[view.incoming_hot:]:
        if warm_up(run, pool, _why(run, pool, job, idle, view), job_id=job.job_id) is None:
            cause = "concurrency limit reached" if view.startable() else "no free node"
            run.note(pool, "shortfall", f"job {job.job_id}: {cause} in pool {pool}")
            break
    return spare_incoming


def _why(run, pool, job, idle, view):
    return (f"job {job.job_id} in pool {pool} pending {_age(run, job)} ({job.reason or 'no reason'}); "
            f"{idle} idle and {view.incoming_hot + view.resuming} on the way cannot serve it")


def _age(run, job):
    return ago(run.now - job.submit_time) if job.submit_time else "for an unknown time"


def proactive(run, pool, floors, hot_have, warm_coming):
    """Fill the hot floor (wake, then bring up), then the warm floor (bring up, then park).
    ``hot_have``: hot nodes had or on the way; ``warm_coming``: nodes on their way to warm
    (the warm ones are counted after the hot floor took its wakes). Returns both after."""
    view = run.views[pool]
    hot_have = _fill(run, pool, floors, HOT, hot_have)
    warm_have = _fill(run, pool, floors, WARM, view.count(WARM) + warm_coming)
    return hot_have, warm_have - view.count(WARM)


def _fill(run, pool, floors, tier, have):
    """Start nodes towards ``tier`` until its floor is met or no node or budget is left."""
    won = run.notes[pool]["floors"]["won"][tier]
    gaps = run.notes[pool]["floors"]["forecast"].get("gap_note") if won.startswith("forecast") else None
    gaps = f" ({gaps})" if gaps else ""
    for _ in range(floors[tier] - have):
        why = f"pool {pool} {tier} floor {floors[tier]} ({won}): {have} {tier} or on the way{gaps}"
        if warm_up(run, pool, why, target=tier) is None:
            break
        have += 1
    return have
