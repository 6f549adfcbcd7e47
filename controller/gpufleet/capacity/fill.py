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
        why = (f"job {job.job_id} in pool {pool} pending {_age(run, job)} ({job.reason or 'no reason'}); "
               f"{idle} idle and {view.incoming_hot + view.resuming} on the way cannot serve it")
        node = view.take(HOT)
        if node is not None:
            run.add("resume", pool, (node,), f"{why}: resuming hot {node} (fastest tier)",
                    job_id=job.job_id)
            continue
        if warm_up(run, pool, why, job_id=job.job_id) is None:
            run.note(pool, "shortfall", f"job {job.job_id}: no free node in pool {pool}")
            break
    return spare_incoming


def _age(run, job):
    return ago(run.now - job.submit_time) if job.submit_time else "for an unknown time"


def proactive(run, pool, floors, spare_incoming):
    """Fill the hot floor (wake, then bring up), then the warm floor (bring up, then park)."""
    view = run.views[pool]
    hot_have = view.count(HOT) + spare_incoming
    won = run.notes[pool]["floors"]["won"]
    for _ in range(floors["hot"] - hot_have):
        why = (f"pool {pool} hot floor {floors['hot']} ({won['hot']}): {hot_have} hot or on "
               "the way")
        if warm_up(run, pool, why, target=HOT) is None:
            break
        hot_have += 1
    warm_have = view.count(WARM) + view.incoming_warm
    for _ in range(floors["warm"] - warm_have):
        why = (f"pool {pool} warm floor {floors['warm']} ({won['warm']}): {warm_have} warm or "
               "on the way")
        if warm_up(run, pool, why, target=WARM) is None:
            break
        warm_have += 1
    return hot_have
