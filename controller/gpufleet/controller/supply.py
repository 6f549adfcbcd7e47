"""Supply: every inventory node of a pool as the planner sees it (NodeView), from the ledger
and Slurm. The tier itself is the planner's call (gpufleet.capacity.tiers.classify, through
planning.Planning.classify); this file only gathers what it needs per node.
"""
from datetime import datetime, timezone

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity import model

__all__ = ["node_views", "slurm_state", "epoch", "failures_since_good"]


def epoch(iso_text):
    """The ledger's ISO time as seconds since the epoch (0.0 for none)."""
    if not iso_text:
        return 0.0
    return datetime.strptime(iso_text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def _jobs_by_node(jobs):
    running = {}
    for job in jobs:
        if job.state != "PENDING":
            for node in job.nodes_assigned:
                running.setdefault(node, []).append(job.job_id)
    return running


def slurm_state(slurm_node):
    """Slurm's view as a list of words (['IDLE', 'DRAIN']); None when Slurm does not list it."""
    if slurm_node is None:
        return None
    return [slurm_node.state] + list(slurm_node.flags)


def failures_since_good(history):
    """The transitions to failed since the node last reached a good state (ready, hot, joined)."""
    failures = []
    for step in history:
        if step["to_state"] == states.FAILED:
            failures.append(step)
        elif step["to_state"] in (states.READY, states.HOT, states.JOINED):
            failures = []
    return failures


def consecutive_failures(history):
    return len(failures_since_good(history))


def node_views(hosts, ledger_records, slurm_nodes, jobs, planning, now, history_of=lambda node: (), pool_images=None):
    """NodeViews of every inventory host a pool claims, sorted by name.

    ``hosts``: inventory name -> Host; ``ledger_records``: the ledger's node dicts;
    ``slurm_nodes``: name -> SlurmNode; ``history_of(node)``: its ledger transitions;
    ``pool_images``: {pool: its image version} (images.pool_versions): a hot or parked node on
    another version is cold (needs a bring-up that installs the pool's version).
    """
    by_name = {r["node"]: r for r in ledger_records}
    running = _jobs_by_node(jobs)
    views = []
    for name in sorted(hosts):
        pool = planning.pool_of(hosts[name])
        if pool is None:
            continue
        record = by_name.get(name) or {}
        history = list(history_of(name)) if record else []
        gate_at = max([epoch(t["at"]) for t in history if t["to_state"] == states.READY], default=None)
        on_node = tuple(running.get(name, ()))
        slurm = slurm_nodes.get(name)
        state = record.get("state") or states.ENROLLED   # not in the ledger yet: needs the full bring-up
        tier = planning.classify(pool, state, slurm_state(slurm), gate_at, now, on_node,
                                 record.get("image_version"), pool_image=(pool_images or {}).get(pool))
        since = epoch(record.get("updated_at"))
        idle_since = max(since, (slurm.last_busy or 0.0) if slurm else 0.0) if tier == model.IDLE else None
        views.append(model.NodeView(
            node=name, pool=pool, tier=tier, state=record.get("state") or "", since=since,
            idle_since=idle_since, gate_passed_at=gate_at, image_version=record.get("image_version"),
            consecutive_failures=consecutive_failures(history), gang_id=record.get("gang_id"), jobs=on_node))
    return tuple(views)
