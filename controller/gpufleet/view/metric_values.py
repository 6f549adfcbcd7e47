"""The values the controller's /metrics exposes, computed purely from FleetInputs and the
ledger's demand and decision rows (``metrics.LedgerCollector`` turns them into Prometheus
families on every scrape). docs/fleet-view.md lists every metric.
"""
from collections import Counter

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.tiers import classify
from gpufleet.view.categories import LAYER_OF, ledger_category, slurm_category
from gpufleet.view.seam import by_node
from gpufleet.view.timeline import state_at

__all__ = ["METRICS", "metric_values"]

# name -> (type, help, label names). Counters are named without ``_total``: the client adds it.
METRICS = {
    "gpufleet_nodes": ("gauge", "Nodes by pool, warmth tier and ledger state", ("pool", "tier", "state")),
    "gpufleet_node_state_seconds": ("gauge", "Seconds each node has been in its current ledger state",
                                    ("pool", "node", "state")),
    # Prometheus guidance: export when a state began, not only how long ago (alerts use time() - it)
    "gpufleet_node_state_since_timestamp_seconds": ("gauge", "Unix time each node entered its current ledger state",
                                                    ("pool", "node", "state")),
    "gpufleet_gpus": ("gauge", "GPUs by pool and fleet-view category (layer L1..L4) now",
                      ("pool", "category", "layer")),
    "gpufleet_gate_checks": ("gauge", "Nodes whose latest gate report has this check with this verdict",
                             ("pool", "check", "verdict")),
    "gpufleet_demand_gpus": ("gauge", "GPUs of the latest recorded demand minute: running, pending, "
                             "pending for lack of capacity", ("pool", "kind")),
    "gpufleet_shortfall_gpus": ("gauge", "GPUs pending for lack of capacity beyond those on their way "
                                "(hot or provisioning)", ("pool",)),
    "gpufleet_decisions": ("counter", "Controller decisions recorded in the ledger",
                           ("pool", "action", "outcome")),
    "gpufleet_ledger_up": ("gauge", "1 when the last scrape read the ledger, 0 when it failed", ()),
}

def _slurm(state, samples, since):
    """Slurm's last sampled state during the current joined stretch (None: not sampled)."""
    mine = [s for s in samples if s.at >= since] if state == states.JOINED else []
    return mine[-1].slurm_state if mine else None


def _tier(pool, state, slurm, history, now):
    """The planner's own tier (gpufleet.capacity.tiers.classify), so the metric and the
    planner agree; a host not in the ledger is cold, as the controller counts it."""
    gate_at = max([t.at for t in history if t.to_state == states.READY and t.at <= now], default=None)
    tier, _why = classify(state or states.ENROLLED, slurm, gate_passed_at=gate_at,
                          gate_validity=pool.gate_validity, now=now)
    return tier


def _node_rows(inputs):
    """(pool, node, state, since, category, tier) for every owned node not decommissioned."""
    transitions, samples = by_node(inputs.transitions), by_node(inputs.samples)
    for pool in inputs.pools:
        for node in pool.members:
            history = transitions.get(node, ())
            state, since = state_at(history, inputs.now)
            if state == states.DECOMMISSIONED:
                continue
            slurm = _slurm(state, samples.get(node, ()), since or 0.0)
            category = slurm_category(slurm) if state == states.JOINED else ledger_category(state)
            yield pool, node, state, since, category, _tier(pool, state, slurm, history, inputs.now)


def _gate(inputs):
    return Counter((pool.name, check.get("name") or "?", check.get("verdict") or "?")
                   for pool in inputs.pools for node in pool.members
                   for phase in (inputs.gate_reports.get(node) or {}).get("phases") or []
                   for check in phase.get("checks") or [])


def _demand(inputs, demand_rows, gpus):
    latest = {}
    for row in demand_rows:
        if row["pool"] not in latest or row["minute"] > latest[row["pool"]]["minute"]:
            latest[row["pool"]] = row
    values, shortfall = [], []
    for pool, row in sorted(latest.items()):
        for kind in ("running", "pending", "pending_capacity"):
            values.append(((pool, kind), row["gpus_" + kind]))
        coming = sum(n for (p, c, _l), n in gpus.items() if p == pool and c in ("hot", "provisioning"))
        shortfall.append(((pool,), max(0, row["gpus_pending_capacity"] - coming)))
    return values, shortfall


def metric_values(inputs, demand_rows=(), decision_counts=None):
    """{metric name: [(label values tuple, value)]} for every metric in METRICS.

    ``demand_rows``: at least each pool's newest demand row; ``decision_counts``:
    {(pool, action, ok|failed|pending): n} as ``decisions.decision_counts`` returns it."""
    rows = list(_node_rows(inputs))
    state_of = lambda r: r[2] or "not_enrolled"  # noqa: E731
    gpus = Counter()
    for pool, _node, _state, _since, category, _tier_name in rows:
        gpus[(pool.name, category, LAYER_OF[category])] += pool.gpus_per_node
    demand, shortfall = _demand(inputs, demand_rows, gpus)
    return {
        "gpufleet_nodes": sorted(Counter((r[0].name, r[5], state_of(r)) for r in rows).items()),
        "gpufleet_node_state_seconds": sorted(((r[0].name, r[1], state_of(r)), inputs.now - r[3])
                                              for r in rows if r[3] is not None),
        "gpufleet_node_state_since_timestamp_seconds": sorted(((r[0].name, r[1], state_of(r)), r[3])
                                                              for r in rows if r[3] is not None),
        "gpufleet_gpus": sorted(gpus.items()),
        "gpufleet_gate_checks": sorted(_gate(inputs).items()),
        "gpufleet_demand_gpus": demand,
        "gpufleet_shortfall_gpus": shortfall,
        "gpufleet_decisions": sorted((decision_counts or {}).items()),
        "gpufleet_ledger_up": [((), 1)],
    }
