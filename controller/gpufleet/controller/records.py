"""The controller's one door to the ledger (module_utils/lifecycle): every name it uses.

Keeping the ledger's API in this file keeps the rest of the controller independent of how
the ledger stores things (SQLite or PostgreSQL) and makes a change there a change here only.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions as _decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang as _gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import lease as _lease
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import rollouts as _rollouts
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError, LifecycleError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger, iso

__all__ = ["open_ledger", "node_records", "record_decision", "set_outcome", "decisions", "open_decisions",
           "record_demand", "demand_history", "acquire_lease", "renew_lease", "release_lease", "lease_holder",
           "transition", "load_tracks", "save_tracks", "gang_rollback", "release_members", "gang_status", "states", "LedgerError", "LifecycleError", "LEASE",
           "iso", "start_rollout", "rollouts", "set_rollout_phase", "set_rollout_canaries",
           "ROLLOUT_ACTIVE"]

ROLLOUT_ACTIVE = _rollouts.ACTIVE

LEASE = "capacity-controller"
WHO = "gpufleet-controller"
IN_FLIGHT = None  # a decision whose outcome is not recorded yet


def open_ledger(location, clock=None):
    return Ledger(location, clock=clock) if clock else Ledger(location)


def node_records(ledger):
    """Current node records (dicts with node, state, sku, image_version, gang_id, updated_at...)."""
    return ledger.nodes()


def transition(ledger, node, target, why, run_id=None):
    return ledger.transition(node, target, WHO, why, run_id=run_id)


def load_tracks(ledger):
    """The day-2 persistence tracks a previous controller stored: {(node, source, kind): Track}."""
    from gpufleet.day2.persistence import Track
    return {(r["node"], r["source"], r["kind"]): Track(r["node"], r["source"], r["kind"], r["reason"],
                                                       r["first_seen"], tuple(r["seen"]), r["run_start"])
            for r in _decisions.tracks(ledger)}


def save_tracks(ledger, tracks):
    """Store the day-2 persistence tracks (all of them, replacing the last pass's)."""
    return _decisions.replace_tracks(ledger, [dict(node=t.node, source=t.source, kind=t.kind, reason=t.reason,
                                                     first_seen=t.first_seen, seen=t.seen, run_start=t.run_start)
                                                for t in tracks.values()])


def record_decision(ledger, controller, action, demand, supply, outcome=None, at=None):
    """Record the intent of one planned action before anything runs; returns its id."""
    return _decisions.record_decision(ledger, controller, action.pool, action.kind, list(action.nodes),
                                      action.reason, job=action.job_id, demand=demand, supply=supply,
                                      outcome=outcome, at=at)


def set_outcome(ledger, decision_id, outcome):
    _decisions.set_outcome(ledger, decision_id, outcome)


def decisions(ledger, limit=None, since=None, pool=None):
    return _decisions.decisions(ledger, since=since, pool=pool, limit=limit)


def open_decisions(ledger, since=None):
    """Decisions whose outcome was never recorded: work a killed controller left in flight."""
    return [d for d in _decisions.decisions(ledger, since=since) if d["outcome"] is IN_FLIGHT]


def record_demand(ledger, pool, minute, running, pending, pending_capacity):
    return _decisions.record_demand(ledger, pool, minute, running, pending, pending_capacity)


def demand_history(ledger, pool=None, since=None):
    return _decisions.demand_history(ledger, pool=pool, since=since)


def acquire_lease(ledger, holder, ttl_s, now):
    return _lease.acquire_lease(ledger, LEASE, holder, ttl_s, now)


def renew_lease(ledger, holder, ttl_s, now):
    return _lease.renew_lease(ledger, LEASE, holder, ttl_s, now)


def release_lease(ledger, holder):
    return _lease.release_lease(ledger, LEASE, holder)


def lease_holder(ledger, now):
    return _lease.lease_holder(ledger, LEASE, now)


def gang_rollback(ledger, gang_id, reason, node_reasons=None):
    return _gang.rollback(ledger, gang_id, reason, WHO, node_reasons=node_reasons)[0]


def release_members(ledger, nodes):
    """Clear the gang mark of admitted nodes (the gang's member rows keep the history): a joined
    node marked with a gang would count as reserved forever and never be parked or reused."""
    with ledger.transaction() as cur:
        for node in nodes:
            ledger.reserve(cur, node, None)


def gang_status(ledger, gang_id):
    """The ledger's gang record, or None when the gang never reached admission (the ledger's
    gang rows are written by admit.yml; a gang rolled back before that has none)."""
    try:
        return _gang.status(ledger, gang_id)
    except LifecycleError:
        return None


def start_rollout(ledger, pool, from_version, to_version, who, reason, gate_profile=None, from_gate_profile=None):
    """Record a rollout in phase canary; its id (refused while the pool has an unfinished one)."""
    return _rollouts.start_rollout(ledger, pool, from_version, to_version, who, reason, gate_profile=gate_profile,
                                   from_gate_profile=from_gate_profile)


def rollouts(ledger, pool=None):
    return _rollouts.rollouts(ledger, pool=pool)


def set_rollout_phase(ledger, rollout_id, phase, reason, expect=None):
    return _rollouts.set_phase(ledger, rollout_id, phase, reason, expect=expect)


def set_rollout_canaries(ledger, rollout_id, canaries):
    _rollouts.set_canaries(ledger, rollout_id, canaries)
