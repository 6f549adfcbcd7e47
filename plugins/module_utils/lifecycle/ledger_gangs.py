# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""All SQL of the ``gangs`` and ``gang_members`` tables; ``gang.py`` holds the rules.

Every function runs inside the caller's ledger transaction (``cur``), so a gang step and
the node transitions it causes commit together. Member rows are never deleted: a member
swapped for a spare keeps its row with status ``replaced`` or ``failed``, who replaced it
and why, and a rollback leaves those records in place.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["gang_ids", "load", "create", "add_member", "set_status", "set_member", "MEMBER", "REPLACED",
           "FAILED"]

MEMBER = "member"
REPLACED = "replaced"
FAILED = "failed"
_GANG_COLUMNS = ("gang_id", "sku", "size", "deadline", "status", "reason", "created_at", "updated_at")
_MEMBER_COLUMNS = ("node", "source", "status", "replaced_by", "reason", "at")


def gang_ids(cur):
    """Every gang id in the ledger, sorted."""
    return [r[0] for r in cur.execute("SELECT gang_id FROM gangs ORDER BY gang_id").fetchall()]


def load(cur, gang_id):
    """The gang's row with ``members`` (active) and ``substitutions`` (swapped out), or None."""
    row = cur.execute("SELECT %s FROM gangs WHERE gang_id = ?" % ", ".join(_GANG_COLUMNS),
                      (gang_id,)).fetchone()
    if row is None:
        return None
    gang = dict(zip(_GANG_COLUMNS, row))
    rows = [dict(zip(_MEMBER_COLUMNS, r)) for r in cur.execute(
        "SELECT %s FROM gang_members WHERE gang_id = ? ORDER BY node" % ", ".join(_MEMBER_COLUMNS),
        (gang_id,))]
    gang["members"] = [{"node": r["node"], "source": r["source"]} for r in rows if r["status"] == MEMBER]
    gang["substitutions"] = [r for r in rows if r["status"] != MEMBER]
    return gang


def create(cur, gang_id, sku, size, deadline, status, now):
    cur.execute("INSERT INTO gangs (gang_id, sku, size, deadline, status, reason, created_at, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                (gang_id, sku, size, deadline, status, None, now, now))


def add_member(cur, gang_id, node, source, now):
    cur.execute("INSERT INTO gang_members (gang_id, node, source, status, at) VALUES (?,?,?,?,?)",
                (gang_id, node, source, MEMBER, now))


def set_status(cur, gang_id, status, now, reason=None):
    cur.execute("UPDATE gangs SET status = ?, reason = COALESCE(?, reason), updated_at = ? "
                "WHERE gang_id = ?", (status, reason, now, gang_id))


def set_member(cur, gang_id, node, status, now, reason=None, replaced_by=None):
    cur.execute("UPDATE gang_members SET status = ?, reason = ?, replaced_by = ?, at = ? "
                "WHERE gang_id = ? AND node = ?", (status, reason, replaced_by, now, gang_id, node))
