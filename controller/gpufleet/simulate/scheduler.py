"""The scheduler's part (Slurm's, not the policy's): start pending jobs on idle joined nodes.

First-come first-served with first-fit backfill: jobs are tried oldest first and each one
that fits in the idle nodes starts at once on all its nodes (a gang never starts partly).
Gangs the planner admits start through the ``admit`` action instead (gpufleet.simulate.actions).
"""
from gpufleet.capacity import model

__all__ = ["schedule", "start_job", "release"]


def start_job(sim, job, nodes, now):
    for node in nodes:
        node.job = job.job_id
        sim.fleet.set_tier(node, model.BUSY, now, gang_id=job.job_id if job.gang else None)
    job.started(now, [node.name for node in nodes])
    sim.workload.changed()


def schedule(sim, now):
    idle = sim.fleet.idle_nodes
    if not idle:
        return
    for job in list(sim.workload.pending()):
        if job.nodes <= len(idle):
            names = list(idle)[:job.nodes]
            start_job(sim, job, [idle[name] for name in names], now)
            if not idle:
                return


def release(sim, names, now):
    """Nodes of finished (or shrunk) jobs become idle joined nodes."""
    for name in names:
        node = sim.fleet.by_name[name]
        if node.tier == model.BUSY:
            node.job = None
            sim.fleet.set_tier(node, model.IDLE, now, gang_id=None)
