# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Gang provisioning: N nodes of a SKU by a deadline, all admitted or none.

``plan`` reserves validated nodes from the warm pool first and provisionable nodes for
the rest; ``admitting`` checks, under the ledger's write lock, that every member is
``ready`` before the scheduler is touched; ``admitted`` records every member ``joined``
in one transaction; ``rollback`` sends members that failed (or were cut off in flight)
to ``failed`` with the reason and releases every healthy one back to the pool. Every
step is idempotent: repeating it after a crash returns the recorded outcome.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import GangError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import iso

__all__ = ["plan", "admitting", "admitted", "rollback", "status",
           "PLANNED", "ADMITTING", "ADMITTED", "ROLLED_BACK"]

PLANNED = "planned"
ADMITTING = "admitting"
ADMITTED = "admitted"
ROLLED_BACK = "rolled_back"
_GANG_COLUMNS = ("gang_id", "sku", "size", "deadline", "status", "reason", "created_at", "updated_at")


def _load(cur, gang_id):
    row = cur.execute("SELECT %s FROM gangs WHERE gang_id = ?" % ", ".join(_GANG_COLUMNS),
                      (gang_id,)).fetchone()
    if row is None:
        return None
    gang = dict(zip(_GANG_COLUMNS, row))
    gang["members"] = [
        {"node": node, "source": source}
        for node, source in cur.execute(
            "SELECT node, source FROM gang_members WHERE gang_id = ? ORDER BY node", (gang_id,))]
    return gang


def _require(cur, gang_id):
    gang = _load(cur, gang_id)
    if gang is None:
        raise GangError('Gang "%s" is not in the ledger. Plan it first (gang state=planned).'
                        % gang_id, gang_id=gang_id)
    return gang


def _describe(ledger, cur, gang):
    """The gang as returned to callers: times as ISO text, members with their state."""
    now = ledger.clock()
    out = dict(gang)
    out["expired"] = gang["status"] in (PLANNED, ADMITTING) and now > gang["deadline"]
    out["seconds_left"] = round(gang["deadline"] - now, 3)
    for key in ("deadline", "created_at", "updated_at"):
        out[key] = iso(gang[key])
    members = []
    for member in gang["members"]:
        record = ledger.get(member["node"], cur) or {}
        members.append(dict(member, state=record.get("state"), reason=record.get("reason")))
    out["members"] = members
    out["pool"] = [m["node"] for m in members if m["source"] == "pool"]
    out["provision"] = [m["node"] for m in members if m["source"] == "provision"]
    return out


def _set_status(ledger, cur, gang_id, status, reason=None):
    cur.execute("UPDATE gangs SET status = ?, reason = COALESCE(?, reason), updated_at = ? "
                "WHERE gang_id = ?", (status, reason, ledger.clock(), gang_id))


def _select(ledger, cur, sku, size, candidates):
    """Warm pool first, then provisionable nodes; names sorted for a stable choice."""
    allowed = set(candidates) if candidates is not None else None
    free = [n for n in ledger.nodes(sku=sku, cur=cur)
            if n["gang_id"] is None and (allowed is None or n["node"] in allowed)]
    pool = [n["node"] for n in free if n["state"] == states.POOL_STATE]
    fresh = [n["node"] for n in free if n["state"] in states.PROVISIONABLE]
    chosen = [(name, "pool") for name in pool[:size]]
    chosen += [(name, "provision") for name in fresh[:size - len(chosen)]]
    if len(chosen) < size:
        counts = {}
        for n in ledger.nodes(sku=sku, cur=cur):
            key = n["state"] if n["gang_id"] is None else "held by gang %s" % n["gang_id"]
            counts[key] = counts.get(key, 0) + 1
        raise GangError(
            "Cannot plan a gang of %d %s nodes: only %d are free (%d ready in the warm pool, "
            "%d provisionable). Ledger nodes of this SKU by state: %s. Enroll or recycle more "
            "nodes, or ask for fewer." % (size, sku, len(chosen), len(pool), len(fresh),
                                          counts or "none"),
            sku=sku, size=size, free=len(chosen))
    return chosen


def plan(ledger, gang_id, sku, size, deadline_seconds, candidates=None):
    """Reserve ``size`` nodes of ``sku`` for the gang; returns (gang, changed)."""
    if size < 1 or deadline_seconds <= 0:
        raise GangError("Gang %s needs size >= 1 and a positive deadline (got size=%s, "
                        "deadline_seconds=%s)." % (gang_id, size, deadline_seconds), gang_id=gang_id)
    with ledger.transaction() as cur:
        existing = _load(cur, gang_id)
        if existing is not None:
            if (existing["sku"], existing["size"]) != (sku, size):
                raise GangError(
                    'Gang "%s" already exists for %d %s nodes; it cannot be re-planned as %d %s. '
                    "Use a new gang id." % (gang_id, existing["size"], existing["sku"], size, sku),
                    gang_id=gang_id)
            return _describe(ledger, cur, existing), False
        now = ledger.clock()
        chosen = _select(ledger, cur, sku, size, candidates)
        cur.execute("INSERT INTO gangs (gang_id, sku, size, deadline, status, reason, created_at, "
                    "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                    (gang_id, sku, size, now + deadline_seconds, PLANNED, None, now, now))
        for name, source in chosen:
            cur.execute("INSERT INTO gang_members (gang_id, node, source) VALUES (?,?,?)",
                        (gang_id, name, source))
            ledger.reserve(cur, name, gang_id)
        return _describe(ledger, cur, _load(cur, gang_id)), True


def admitting(ledger, gang_id):
    """Lock the gang for admission once every member is ready; returns (gang, changed)."""
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] in (ADMITTING, ADMITTED):
            return _describe(ledger, cur, gang), False
        if gang["status"] != PLANNED:
            raise GangError('Gang "%s" is %s and cannot be admitted. Plan a new gang.'
                            % (gang_id, gang["status"]), gang_id=gang_id, status=gang["status"])
        if ledger.clock() > gang["deadline"]:
            raise GangError('Gang "%s" missed its deadline (%s) before all members were ready. '
                            "Roll it back (gang state=rolled_back)." % (gang_id, iso(gang["deadline"])),
                            gang_id=gang_id)
        not_ready = {}
        for member in gang["members"]:
            record = ledger.get(member["node"], cur) or {}
            if record.get("state") != states.POOL_STATE:
                not_ready[member["node"]] = record.get("state")
        if not_ready:
            raise GangError(
                'Gang "%s" cannot be admitted: %d of %d members are not ready (%s). Nothing was '
                "admitted; roll the gang back." % (
                    gang_id, len(not_ready), gang["size"],
                    ", ".join("%s=%s" % item for item in sorted(not_ready.items()))),
                gang_id=gang_id, not_ready=not_ready)
        _set_status(ledger, cur, gang_id, ADMITTING)
        return _describe(ledger, cur, _require(cur, gang_id)), True


def admitted(ledger, gang_id, who, run_id=None):
    """Record every member ``joined`` in one transaction; returns (gang, changed)."""
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] == ADMITTED:
            return _describe(ledger, cur, gang), False
        if gang["status"] != ADMITTING:
            raise GangError('Gang "%s" is %s; run gang state=admitting before state=admitted so '
                            "readiness is checked first." % (gang_id, gang["status"]), gang_id=gang_id)
        why = "admitted with gang %s (%d nodes)" % (gang_id, gang["size"])
        for member in gang["members"]:
            ledger.apply(cur, member["node"], states.ADMITTED_STATE, who, why,
                         run_id=run_id, gang_id=gang_id)
        _set_status(ledger, cur, gang_id, ADMITTED)
        return _describe(ledger, cur, _require(cur, gang_id)), True


def _roll_back_member(ledger, cur, gang_id, node, reason, who, run_id):
    record = ledger.get(node, cur) or {}
    state = record.get("state")
    if reason and state in states.IN_PROGRESS:
        ledger.apply(cur, node, states.FAILED, who, reason, run_id=run_id, gang_id=gang_id)
    elif state in states.IN_PROGRESS:
        why = "gang %s rolled back while the node was %s; reimage before reuse" % (gang_id, state)
        ledger.apply(cur, node, states.FAILED, who, why, run_id=run_id, gang_id=gang_id)
    elif reason and state == states.POOL_STATE:
        ledger.apply(cur, node, states.RECYCLING, who, reason, run_id=run_id, gang_id=gang_id)
    ledger.reserve(cur, node, None)
    after = ledger.get(node, cur) or {}
    return {"node": node, "before": state, "after": after.get("state"), "reason": after.get("reason")}


def rollback(ledger, gang_id, reason, who, node_reasons=None, run_id=None):
    """Undo a gang that did not make it; returns (gang, changed).

    ``node_reasons`` maps a failed member to why it failed. In-flight members go to
    ``failed``; ``ready`` members return to the warm pool; nothing is admitted.
    """
    node_reasons = node_reasons or {}
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] == ROLLED_BACK:
            return _describe(ledger, cur, gang), False
        if gang["status"] == ADMITTED:
            raise GangError('Gang "%s" is already admitted; its nodes are joined. Drain them '
                            "(playbooks/recycle.yml) instead of rolling back." % gang_id, gang_id=gang_id)
        outcome = [_roll_back_member(ledger, cur, gang_id, m["node"], node_reasons.get(m["node"]),
                                     who, run_id) for m in gang["members"]]
        _set_status(ledger, cur, gang_id, ROLLED_BACK, reason)
        described = _describe(ledger, cur, _require(cur, gang_id))
        described["rollback"] = outcome
        return described, True


def status(ledger, gang_id):
    """The gang's record and its members' current states (read-only)."""
    with ledger.transaction() as cur:
        return _describe(ledger, cur, _require(cur, gang_id))
