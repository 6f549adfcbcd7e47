"""The fleet page's data: the seam over a period (with a time series for the chart), each
started job's submit -> start breakdown, and the ``why`` of every pending job.

Pure over ``gpufleet.view.inputs.FleetInputs``; the caller passes the period.
"""
from gpufleet.view.answer import to_dict
from gpufleet.view.seam import by_node, seam
from gpufleet.view.startup import bringups, job_start_breakdown
from gpufleet.view.why_job import why_job

__all__ = ["collect_fleet"]


def _starts(inputs, transitions):
    out = []
    for job in inputs.jobs:
        start = (inputs.job_extra.get(job.job_id) or {}).get("start_time")
        if job.state == "RUNNING" and start:
            out.append(dict(job_start_breakdown(job, start, transitions), pool=job.pool, nodes=list(job.nodes_assigned)))
    return sorted(out, key=lambda r: r["start"])


def collect_fleet(inputs, since, until, buckets=24):
    """Everything the fleet page shows, as plain data."""
    transitions = by_node(inputs.transitions)
    members = sorted(set(n for p in inputs.pools for n in p.members))
    ready = [dict(b, node=node) for node in members for b in bringups(transitions.get(node, ()))
             if since <= b["joined_at"] < until]
    pending = [to_dict(why_job(inputs, j.job_id)) for j in inputs.jobs if j.state == "PENDING"]
    return {"generated_at": inputs.now, "seam": seam(inputs, since, until, buckets),
            "job_starts": _starts(inputs, transitions), "time_to_schedulable": ready,
            "pending": sorted(pending, key=lambda a: (a["layer"] or "", a["subject"]))}
