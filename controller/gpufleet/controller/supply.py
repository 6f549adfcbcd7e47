"""Supply: every inventory node as the planner sees it (NodeView), from the ledger and Slurm.

The ledger says how far a node got (its lifecycle state); Slurm says whether a joined node
runs anything and since when it is idle. Tiers (docs/capacity.md): busy/idle (joined), hot
(validated, registered, held), warm (parked: validated, powered off), cold (needs the full
bring-up), provisioning (on its way), unavailable (failed, break_fix, draining, gone).
"""
from gpufleet.capacity import model
from gpufleet.controller import records

__all__ = ["tier_of", "node_views"]

S = records.states
_TIER_OF_STATE = {
    None: model.COLD, S.ENROLLED: model.COLD, S.INSPECTED: model.COLD, S.RECYCLING: model.COLD,
    S.IMAGING: model.PROVISIONING, S.CONFIGURING: model.PROVISIONING, S.VALIDATING: model.PROVISIONING,
    S.WAKING: model.PROVISIONING,
    # ready: validated and powered but not registered with the scheduler: one join from hot
    S.READY: model.PROVISIONING,
    S.HOT: model.HOT, S.PARKED: model.WARM,
    S.FAILED: model.UNAVAILABLE, S.BREAK_FIX: model.UNAVAILABLE, S.DRAINING: model.UNAVAILABLE,
    S.DECOMMISSIONED: model.UNAVAILABLE,
}


def tier_of(state, jobs):
    """The warmth tier of a node in lifecycle ``state`` running ``jobs`` (a tuple of job ids)."""
    if state == S.JOINED:
        return model.BUSY if jobs else model.IDLE
    return _TIER_OF_STATE.get(state, model.UNAVAILABLE)


def _epoch(iso_text):
    from datetime import datetime, timezone
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


def node_views(hosts, ledger_records, slurm_nodes, jobs, pool_of, gate_passed_at=lambda node: None):
    """NodeViews of every inventory host that belongs to a pool.

    ``hosts``: inventory name -> Host; ``ledger_records``: ledger node dicts; ``slurm_nodes``:
    name -> SlurmNode; ``pool_of(host) -> pool name or None`` is the policy's membership rule.
    """
    by_name = {r["node"]: r for r in ledger_records}
    running = _jobs_by_node(jobs)
    views = []
    for name in sorted(hosts):
        pool = pool_of(hosts[name])
        if pool is None:
            continue
        record = by_name.get(name) or {}
        state = record.get("state")
        on_node = tuple(running.get(name, ()))
        tier = tier_of(state, on_node)
        since = _epoch(record.get("updated_at"))
        idle_since = None
        if tier == model.IDLE:
            slurm = slurm_nodes.get(name)
            idle_since = max(since, (slurm.last_busy or 0.0) if slurm else 0.0)
        views.append(model.NodeView(
            node=name, pool=pool, tier=tier, state=state or "", since=since, idle_since=idle_since,
            gate_passed_at=gate_passed_at(name) if state in (S.HOT, S.PARKED, S.READY, S.JOINED) else None,
            image_version=record.get("image_version"), gang_id=record.get("gang_id"), jobs=on_node))
    return tuple(views)
