"""A pool's nodes as they stand now: ledger state, since when, category (Slurm for joined)."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.view.categories import ledger_category, slurm_category
from gpufleet.view.timeline import state_at

__all__ = ["node_now", "pool_now", "gate_failures"]


def node_now(inputs, node, transitions):
    """{node, state, since, category, slurm, slurm_reason} of one node at ``inputs.now``."""
    state, since = state_at(transitions, inputs.now)
    slurm = inputs.slurm_nodes.get(node)
    if state == states.JOINED:
        category = slurm_category(slurm.states if slurm else None)
    elif state == states.DECOMMISSIONED:
        category = "decommissioned"
    else:
        category = ledger_category(state)
    return {"node": node, "state": state or "not enrolled", "since": since, "category": category,
            "slurm": sorted(slurm.states) if slurm else None,
            "slurm_reason": slurm.reason if slurm else ""}


def pool_now(inputs, pool, transitions_by_node):
    """[node_now(...)] for every member of ``pool``, by name."""
    return [node_now(inputs, node, transitions_by_node.get(node, ()))
            for node in sorted(pool.members)]


def gate_failures(report):
    """[(check, measured, threshold, unit)] of the failing checks in one gate report."""
    return [(check.get("name"), check.get("measured"), check.get("threshold"), check.get("unit") or "")
            for phase in (report or {}).get("phases") or [] for check in phase.get("checks") or []
            if check.get("verdict") == "fail"]
