"""Reactive and proactive supply for one pool: pending single-node jobs, then the floors.

Reactive: pending jobs that idle nodes (and nodes already on their way) cannot serve get
hot nodes resumed, then parked nodes woken, then cold nodes brought up: never more than the
jobs need. Proactive: the hot and warm floors in force are filled the same way, counting
what is already on its way so nothing is started twice.
"""
from gpufleet.capacity.emit import ago, warm_up
from gpufleet.capacity.model import HOT, IDLE, WARM

__all__ = ["reactive", "proactive"]


def reactive(run, pool, singles):
    """Serve pending single-node jobs; returns the on-the-way hot nodes left for the floors."""
    view = run.views[pool]
    idle = view.count(IDLE)
    need = len(singles) - idle - view.resuming
    spare_incoming = max(0, view.incoming_hot - max(0, need))
    need -= view.incoming_hot
    for job in singles[len(singles) - max(0, need):]:
        why = (f"job {job.job_id} in pool {pool} pending {_age(run, job)} "
               f"({job.reason or 'no reason'}); {idle} idle and "
               f"{view.incoming_hot + view.resuming} on the way cannot serve it")
        node = view.take(HOT)
        if node is not None:
            run.add("resume", pool, (node,), f"{why}: resuming hot {node} (fastest tier)",
                    job_id=job.job_id)
            continue
        if warm_up(run, pool, why, job_id=job.job_id) is None:
            cause = "concurrency limit reached" if view.startable() else "no free node"
            run.note(pool, "shortfall", f"job {job.job_id}: {cause} in pool {pool}")
            break
    return spare_incoming


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
    for _ in range(floors[tier] - have):
        why = f"pool {pool} {tier} floor {floors[tier]} ({won}): {have} {tier} or on the way"
        if warm_up(run, pool, why, target=tier) is None:
            break
        have += 1
    return have
