"""Jobs -> pools: which pool serves each job, and which jobs no pool can ever serve.

A job goes to the first pool (policy order) whose match rules fit it. A job that fits no pool,
asks for more GPUs per node than the pool's nodes have, or for more nodes than the pool has
members is unservable: it is reported with the reason and never provisioned for.
"""
from dataclasses import dataclass, replace
from typing import Dict, Tuple

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.model import Job

__all__ = ["DemandMap", "map_jobs", "matches", "member_counts", "WAITING_ON_OTHER"]

# Pending reasons that capacity cannot fix: the job would not start on a free node either.
WAITING_ON_OTHER = frozenset({
    "Dependency", "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin", "BeginTime",
    "PartitionDown", "PartitionInactive", "PartitionTimeLimit", "InvalidAccount", "InvalidQOS",
})


@dataclass(frozen=True)
class DemandMap:
    """``jobs``: every job with its pool set; ``unservable``: (job, reason) pairs."""
    jobs: Tuple[Job, ...] = ()
    unservable: Tuple[Tuple[Job, str], ...] = ()

    def pending_all(self):
        """Pending jobs that capacity could start (any pool), oldest first."""
        found = [j for j in self.jobs if j.state == "PENDING" and j.reason not in WAITING_ON_OTHER]
        return sorted(found, key=lambda j: (j.submit_time, j.job_id))


def matches(job, rules):
    """True when ``rules`` (policy Match) accept the job's partition and requested features."""
    if rules.partitions and job.partition not in rules.partitions:
        return False
    provided = set(rules.features) | set(rules.gres)
    return all(feature in provided for feature in job.features)


def member_counts(supply):
    """Nodes per pool that could ever serve a job (decommissioned ones cannot)."""
    counts: Dict[str, int] = {}
    for node in supply.nodes:
        if node.state != states.DECOMMISSIONED:
            counts[node.pool] = counts.get(node.pool, 0) + 1
    return counts


def _unservable_reason(job, name, pool, members):
    if job.nodes < 1:
        return f"asks for {job.nodes} nodes; a job needs at least 1"
    if job.gpus_per_node > pool.gpus_per_node:
        return (f"asks for {job.gpus_per_node} GPUs per node; pool {name} nodes have "
                f"{pool.gpus_per_node}")
    if job.nodes > members:
        return f"needs {job.nodes} nodes; pool {name} has {members} member(s)"
    return None


def map_jobs(demand, policy, supply, counts=None):
    """-> DemandMap. Jobs already carrying a pool keep it when that pool exists.
    ``counts``: members per pool when the caller has them (else counted from ``supply``)."""
    counts = member_counts(supply) if counts is None else counts
    mapped, unservable = [], []
    for job in demand.jobs:
        if job.state == "PENDING" and job.reservation:
            # Slurm starts it on its reservation's nodes only; a gang admitted elsewhere would
            # bind it to a new reservation, taking it out of its own (a replacement's, a gang's
            # just admitted, a site's)
            unservable.append((replace(job, pool=None), f"bound to reservation {job.reservation}: Slurm "
                               "starts it on that reservation's nodes; the controller does not admit it elsewhere"))
            continue
        name, reason = _choose(job, policy, counts)
        if name is None and job.state == "PENDING":
            unservable.append((replace(job, pool=None), reason))
        elif name is not None:
            mapped.append(job if job.pool == name else replace(job, pool=name))
    return DemandMap(tuple(mapped), tuple(unservable))


def _choose(job, policy, counts):
    """The first matching pool (policy order) that can serve the job -> (name, None); else
    (None, why none can). A running job keeps the first matching pool."""
    if job.pool in policy.pools:
        candidates = [job.pool]
    else:
        candidates = [name for name, pool in policy.pools.items() if matches(job, pool.match)]
    if not candidates:
        return None, (f"no pool matches partition {job.partition!r} and features "
                      f"{list(job.features)}")
    reasons = []
    for name in candidates:
        reason = _unservable_reason(job, name, policy.pools[name], counts.get(name, 0))
        if reason is None or job.state != "PENDING":
            return name, None
        reasons.append(reason)
    return None, "; ".join(reasons)
