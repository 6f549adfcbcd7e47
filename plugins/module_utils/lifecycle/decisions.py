# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The capacity controller's records in the ledger: decisions, demand history, Slurm samples.

Plain functions over a ``Ledger``; each write is its own transaction (rolled back in check
mode). Times are epoch seconds (floats) as the planner uses them; JSON columns (nodes,
demand, supply) are stored as text and returned decoded.

- ``decisions``: every action the controller chose, with the demand and supply it saw and
  why; ``outcome`` is filled in later (``set_outcome``) when the action finished.
- ``demand_history``: per pool and minute, GPUs running, pending, and pending for lack of
  capacity; ``UNIQUE(pool, minute)``, re-recording a minute replaces it.
- ``node_samples``: Slurm's view of a node at a time (state, reason) for the fleet view.
- ``day2_tracks``: the day-2 persistence tracks (gpufleet.day2.persistence), one row per
  (node, source, kind): reason, first_seen, seen (the sightings in the window, a JSON list),
  run_start (None when the signal is absent now). Kept here so a restarted controller counts
  on instead of from zero; ``replace_tracks`` writes the whole set in one transaction.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["record_decision", "decisions", "decision_counts", "set_outcome", "record_demand",
           "demand_history", "latest_demand", "record_node_sample", "node_samples", "replace_tracks",
           "tracks"]

_DECISION_COLUMNS = ("id", "at", "controller", "pool", "action", "nodes", "job", "reason",
                     "demand", "supply", "outcome", "outcome_at")
_DEMAND_COLUMNS = ("pool", "minute", "gpus_running", "gpus_pending", "gpus_pending_capacity",
                   "recorded_at")
_SAMPLE_COLUMNS = ("id", "at", "node", "slurm_state", "reason")


def _json(value):
    return None if value is None else json.dumps(value, sort_keys=True)


def _where(filters):
    """SQL WHERE text and parameters for (sql fragment, value) pairs whose value is set."""
    used = [(sql, value) for sql, value in filters if value is not None]
    if not used:
        return "", ()
    return " WHERE " + " AND ".join(sql for sql, _v in used), tuple(v for _s, v in used)


def record_decision(ledger, controller, pool, action, nodes, reason, job=None, demand=None,
                    supply=None, outcome=None, at=None):
    """Append one decision; returns its id. ``nodes`` is a list of node names."""
    if not controller or not action or not reason:
        raise LedgerError("A decision needs controller, action and reason (got %r, %r, %r)."
                          % (controller, action, reason), pool=pool)
    at = ledger.clock() if at is None else at
    with ledger.transaction() as cur:
        return cur.insert(
            "INSERT INTO decisions (at, controller, pool, action, nodes, job, reason, demand, "
            "supply, outcome, outcome_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (at, controller, pool, action, _json(list(nodes or [])), job, reason, _json(demand),
             _json(supply), outcome, at if outcome is not None else None))


def _decision(row):
    record = dict(zip(_DECISION_COLUMNS, row))
    for key in ("nodes", "demand", "supply"):
        if record[key] is not None:
            record[key] = json.loads(record[key])
    return record


def decisions(ledger, since=None, pool=None, limit=None):
    """Decisions oldest first; with ``limit`` only the newest ``limit`` of them."""
    where, params = _where((("at >= ?", since), ("pool = ?", pool)))
    query = "SELECT %s FROM decisions%s ORDER BY id DESC" % (", ".join(_DECISION_COLUMNS), where)
    if limit is not None:
        query += " LIMIT %d" % int(limit)
    with ledger.transaction(write=False) as cur:
        rows = cur.execute(query, params).fetchall()
    return [_decision(r) for r in reversed(rows)]


def decision_counts(ledger):
    """{(pool, action, outcome class): count} counted by the database, for a metrics scrape that
    must not read every decision. Outcomes are free text ("failed: playbook ... see build/runs/
    ctl-12-bringup"), so they are classed as ``ok``, ``failed`` or ``pending`` (no outcome yet):
    one label value per decision would grow the metric without bound."""
    query = ("SELECT COALESCE(pool, ''), action, CASE WHEN outcome IS NULL THEN 'pending' "
             "WHEN outcome = 'ok' THEN 'ok' ELSE 'failed' END AS outcome_class, COUNT(*) "
             "FROM decisions GROUP BY COALESCE(pool, ''), action, outcome_class")
    with ledger.transaction(write=False) as cur:
        rows = cur.execute(query).fetchall()
    return dict(((pool, action, outcome), int(count)) for pool, action, outcome, count in rows)


def set_outcome(ledger, decision_id, outcome):
    """Record how decision ``decision_id`` ended; raises when there is no such decision."""
    with ledger.transaction() as cur:
        cur.execute("UPDATE decisions SET outcome = ?, outcome_at = ? WHERE id = ?",
                    (outcome, ledger.clock(), decision_id))
        if cur.rowcount != 1:
            raise LedgerError("Decision %s is not in the ledger at %s; cannot set its outcome."
                              % (decision_id, ledger.path), decision_id=decision_id)


def record_demand(ledger, pool, minute_epoch, gpus_running, gpus_pending, gpus_pending_capacity):
    """Record (or replace) one pool's demand for the minute containing ``minute_epoch``."""
    minute = int(minute_epoch) // 60 * 60
    counts = (gpus_running, gpus_pending, gpus_pending_capacity)
    if any(not isinstance(c, int) or c < 0 for c in counts):
        raise LedgerError("Demand of pool %s at minute %d needs non-negative integer GPU counts "
                          "(got %r)." % (pool, minute, counts), pool=pool)
    with ledger.transaction() as cur:
        cur.execute(
            "INSERT INTO demand_history (pool, minute, gpus_running, gpus_pending, "
            "gpus_pending_capacity, recorded_at) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(pool, minute) DO UPDATE SET gpus_running=excluded.gpus_running, "
            "gpus_pending=excluded.gpus_pending, "
            "gpus_pending_capacity=excluded.gpus_pending_capacity, "
            "recorded_at=excluded.recorded_at",
            (pool, minute) + counts + (ledger.clock(),))
    return minute


def demand_history(ledger, pool=None, since=None, until=None):
    """Demand rows ordered by pool and minute; ``since``/``until`` bound the minute (inclusive)."""
    where, params = _where((("pool = ?", pool), ("minute >= ?", since), ("minute <= ?", until)))
    with ledger.transaction(write=False) as cur:
        rows = cur.execute("SELECT %s FROM demand_history%s ORDER BY pool, minute"
                           % (", ".join(_DEMAND_COLUMNS), where), params).fetchall()
    return [dict(zip(_DEMAND_COLUMNS, r)) for r in rows]


def latest_demand(ledger):
    """Each pool's newest demand row (one row per pool, pool order), read by an index-backed
    query instead of the whole history."""
    columns = ", ".join("d." + c for c in _DEMAND_COLUMNS)
    with ledger.transaction(write=False) as cur:
        rows = cur.execute("SELECT %s FROM demand_history d JOIN (SELECT pool, MAX(minute) AS minute "
                           "FROM demand_history GROUP BY pool) newest ON d.pool = newest.pool "
                           "AND d.minute = newest.minute ORDER BY d.pool" % columns).fetchall()
    return [dict(zip(_DEMAND_COLUMNS, r)) for r in rows]


def record_node_sample(ledger, at, node, slurm_state, reason=None):
    """Append Slurm's state (and reason) of ``node`` at time ``at``; returns the sample id."""
    with ledger.transaction() as cur:
        return cur.insert("INSERT INTO node_samples (at, node, slurm_state, reason) VALUES (?,?,?,?)",
                          (at, node, slurm_state, reason))


def node_samples(ledger, node=None, since=None):
    """Samples oldest first, optionally of one node and from a time on."""
    where, params = _where((("node = ?", node), ("at >= ?", since)))
    with ledger.transaction(write=False) as cur:
        rows = cur.execute("SELECT %s FROM node_samples%s ORDER BY at, id"
                           % (", ".join(_SAMPLE_COLUMNS), where), params).fetchall()
    return [dict(zip(_SAMPLE_COLUMNS, r)) for r in rows]


_TRACK_COLUMNS = ("node", "source", "kind", "reason", "first_seen", "seen", "run_start")


def _check(row):
    missing = [k for k in ("node", "source", "kind", "reason", "first_seen") if row.get(k) in (None, "")]
    if missing:
        raise LedgerError("Day-2 track %r lacks %s; every track needs node, source, kind, reason and "
                          "first_seen." % (row, ", ".join(missing)), node=row.get("node"))


def replace_tracks(ledger, rows):
    """Store ``rows`` (dicts as above) as the only day-2 tracks; returns how many."""
    rows = list(rows)
    for row in rows:
        _check(row)
    now = ledger.clock()
    with ledger.transaction() as cur:
        cur.execute("DELETE FROM day2_tracks")
        for row in rows:
            cur.execute(
                "INSERT INTO day2_tracks (node, source, kind, reason, first_seen, seen, run_start, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                (row["node"], row["source"], row["kind"], row["reason"], float(row["first_seen"]),
                 json.dumps([float(t) for t in row.get("seen") or ()]),
                 None if row.get("run_start") is None else float(row["run_start"]), now))
    return len(rows)


def tracks(ledger):
    """Every stored track as a dict, ordered by node, source, kind."""
    with ledger.transaction(write=False) as cur:
        found = cur.execute("SELECT %s FROM day2_tracks ORDER BY node, source, kind"
                            % ", ".join(_TRACK_COLUMNS)).fetchall()
    result = []
    for row in found:
        record = dict(zip(_TRACK_COLUMNS, row))
        try:
            record["seen"] = tuple(float(t) for t in json.loads(record["seen"]))
        except (TypeError, ValueError):
            raise LedgerError("Day-2 track %s/%s/%s in the ledger at %s has unreadable sightings %r; "
                              "delete the row (the track starts counting again)."
                              % (record["node"], record["source"], record["kind"], ledger.path,
                                 record["seen"]), node=record["node"])
        result.append(record)
    return result
