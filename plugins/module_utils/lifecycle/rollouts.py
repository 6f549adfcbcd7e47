# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Image / gate-profile rollouts of a pool (``gpufleet refresh``, docs/day2.md).

One row per rollout: the pool, the version it leaves and the one it moves to (and the gate
profiles), the canaries, the phase and why. What happened to each node is in the decision log
(the controller's recycle decisions carry the rollout id), so this table holds only what an
operator or the controller decided about the rollout as a whole. A pool has at most one
rollout that is not finished (``ACTIVE`` phases): ``start_rollout`` checks it inside its write
transaction (SQLite ``BEGIN IMMEDIATE``, PostgreSQL the ledger's advisory lock).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["PHASES", "ACTIVE", "start_rollout", "rollouts", "active_rollout", "set_phase",
           "set_canaries"]

# canary: canaries first; batches: the rest within the budget; halted: nothing new starts
# (an operator's halt); rolling_back: the previous version goes back on every node the
# rollout moved; rolled_back, done: finished.
PHASES = ("canary", "batches", "halted", "rolling_back", "rolled_back", "done")
ACTIVE = ("canary", "batches", "halted", "rolling_back")
_COLUMNS = ("id", "pool", "from_version", "to_version", "from_gate_profile", "gate_profile",
            "phase", "canaries", "reason", "who", "created_at", "updated_at")


def _row(row):
    record = dict(zip(_COLUMNS, row))
    record["canaries"] = json.loads(record["canaries"] or "[]")
    return record


def _active(cur, pool):
    row = cur.execute("SELECT %s FROM rollouts WHERE pool = ? AND phase IN (%s) ORDER BY id DESC"
                      % (", ".join(_COLUMNS), ",".join("?" * len(ACTIVE))),
                      (pool,) + ACTIVE).fetchone()
    return _row(row) if row else None


def start_rollout(ledger, pool, from_version, to_version, who, reason, gate_profile=None,
                  from_gate_profile=None, at=None):
    """Record a new rollout in phase ``canary``; returns its id. Refused while the pool has
    one that is not finished."""
    if not pool or not from_version or not to_version or not who:
        raise LedgerError("A rollout needs pool, from_version, to_version and who (got %r, %r, %r, %r)."
                          % (pool, from_version, to_version, who), pool=pool)
    at = ledger.clock() if at is None else at
    with ledger.transaction() as cur:
        current = _active(cur, pool)
        if current is not None:
            raise LedgerError("Pool %s already has rollout %s (%s -> %s, phase %s); one rollout per pool at a "
                              "time. Wait for it to finish, or halt and roll it back first (`gpufleet refresh "
                              "rollback --pool %s`)." % (pool, current["id"], current["from_version"],
                                                         current["to_version"], current["phase"], pool),
                              pool=pool, rollout=current["id"])
        return cur.insert(
            "INSERT INTO rollouts (pool, from_version, to_version, from_gate_profile, gate_profile, phase, "
            "canaries, reason, who, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (pool, from_version, to_version, from_gate_profile, gate_profile, "canary", "[]", reason, who,
             at, at))


def rollouts(ledger, pool=None, active_only=False):
    """Rollouts oldest first, of one pool or all; ``active_only``: the unfinished ones."""
    where, params = [], []
    if pool is not None:
        where.append("pool = ?")
        params.append(pool)
    if active_only:
        where.append("phase IN (%s)" % ",".join("?" * len(ACTIVE)))
        params.extend(ACTIVE)
    query = "SELECT %s FROM rollouts%s ORDER BY id" % (
        ", ".join(_COLUMNS), (" WHERE " + " AND ".join(where)) if where else "")
    with ledger.transaction(write=False) as cur:
        return [_row(r) for r in cur.execute(query, tuple(params)).fetchall()]


def active_rollout(ledger, pool):
    """The pool's unfinished rollout, or None."""
    with ledger.transaction(write=False) as cur:
        return _active(cur, pool)


def set_phase(ledger, rollout_id, phase, reason, expect=None):
    """Move a rollout to ``phase``; with ``expect`` (phases) only from one of those. Returns
    True when it moved, False when it was in another phase (a race lost, nothing written)."""
    if phase not in PHASES:
        raise LedgerError("Rollout phase %r is unknown; use one of %s." % (phase, ", ".join(PHASES)),
                          rollout=rollout_id)
    with ledger.transaction() as cur:
        row = cur.execute("SELECT phase FROM rollouts WHERE id = ?", (rollout_id,)).fetchone()
        if row is None:
            raise LedgerError("Rollout %s is not in the ledger at %s." % (rollout_id, ledger.path),
                              rollout=rollout_id)
        if expect is not None and row[0] not in expect:
            return False
        cur.execute("UPDATE rollouts SET phase = ?, reason = ?, updated_at = ? WHERE id = ?",
                    (phase, reason, ledger.clock(), rollout_id))
    return True


def set_canaries(ledger, rollout_id, canaries):
    """Record the canaries chosen (before any of them is touched: a restarted controller
    keeps them)."""
    with ledger.transaction() as cur:
        cur.execute("UPDATE rollouts SET canaries = ?, updated_at = ? WHERE id = ?",
                    (json.dumps(sorted(canaries)), ledger.clock(), rollout_id))
        if cur.rowcount != 1:
            raise LedgerError("Rollout %s is not in the ledger at %s." % (rollout_id, ledger.path),
                              rollout=rollout_id)
