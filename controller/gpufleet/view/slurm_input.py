"""Slurm's JSON as the fleet view needs it, over the controller's parsers
(gpufleet.controller.slurm_json): jobs with their pool, Slurm nodes as state words, and the
two things the view adds per job (start time, dependency).

A job's pool is the first pool (policy order) whose match rules fit it, even when that pool
owns too few nodes: ``why`` then answers at L1 with the counts, and the planner's own reason
for never serving it is kept in ``unservable``.
"""
import json
from dataclasses import replace

from gpufleet.capacity import model
from gpufleet.capacity.demand import map_jobs, matches
from gpufleet.controller.slurm_json import parse_sinfo, parse_squeue
from gpufleet.view.inputs import SlurmNode

__all__ = ["read_squeue", "read_sinfo", "job_extras"]


def _unwrap(value):
    """Slurm 23+ wraps numbers as {"set", "infinite", "number"}; 22.05 writes them plain."""
    if isinstance(value, dict):
        return value.get("number") if value.get("set", True) and not value.get("infinite") else None
    return value


def job_extras(text):
    """job id -> {start_time, dependency, qos, reservation} (parse_squeue has checked the shape)."""
    out = {}
    for record in json.loads(text).get("jobs") or []:
        start = _unwrap(record.get("start_time"))
        out[str(record.get("job_id"))] = {"start_time": float(start) if start else None,
                                          "dependency": record.get("dependency") or "",
                                          "qos": record.get("qos") or "",
                                          "reservation": record.get("reservation") or ""}
    return out


def read_squeue(text, policy, pools):
    """(jobs with ``pool`` set where a pool's match rules fit, extras); ``policy`` is the
    planner's Policy, ``pools`` the view's PoolSpecs (their members count for the planner)."""
    jobs = parse_squeue(text)
    views = tuple(model.NodeView(node=n, pool=p.name, tier=model.COLD, state="enrolled")
                  for p in pools for n in p.members)
    refused = dict((job.job_id, why) for job, why in
                   map_jobs(model.Demand(jobs=jobs), policy, model.Supply(nodes=views)).unservable)
    extras = job_extras(text)
    out = []
    for job in jobs:
        pool = next((name for name, spec in policy.pools.items() if matches(job, spec.match)), None)
        out.append(replace(job, pool=pool))
        if job.job_id in refused:
            extras.setdefault(job.job_id, {})["unservable"] = refused[job.job_id]
    return tuple(out), extras


def read_sinfo(text):
    """name -> view SlurmNode (base state and flags as one set of words)."""
    return dict((name, SlurmNode(name, frozenset((node.state,) + tuple(node.flags)), node.reason,
                                 tuple(node.partitions)))
                for name, node in parse_sinfo(text).items())
