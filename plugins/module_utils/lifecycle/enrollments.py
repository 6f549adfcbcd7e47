# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""TPM attestation enrollments in the ledger (the controller's ``gpufleet.attest``, docs/attestation.md).

One row per enrollment: the node, its EK certificate's SHA-256 fingerprint, the enrolled AK
(SPKI PEM and TPM name), when, by whom and why. A node has at most one current enrollment (its
``replaced_at`` is empty). A re-enrollment is explicit (``reenroll`` with a reason): inside one
write transaction it closes the current row (``replaced_at``, ``replaced_by`` = the new row's id)
and adds the new one, so the history keeps every AK and EK the node ever had. Without it, a
node whose EK differs from the enrolled one is refused (``EnrollmentConflict``).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["COLUMNS", "EnrollmentConflict", "current", "history", "record"]

COLUMNS = ("id", "node", "ek_fingerprint", "ak_pem", "ak_name", "enrolled_at", "enrolled_by", "reason",
           "replaced_at", "replaced_by")
FIRST_REASON = "first enrollment"


class EnrollmentConflict(LedgerError):
    """The node already has a current enrollment that this one would replace without ``reenroll``."""


def _row(row):
    return dict(zip(COLUMNS, row))


def current(ledger, node, cur=None):
    """The node's current enrollment (a dict, times as epoch seconds), or None."""
    query = "SELECT %s FROM enrollments WHERE node = ? AND replaced_at IS NULL" % ", ".join(COLUMNS)
    if cur is not None:
        row = cur.execute(query, (node,)).fetchone()
    else:
        with ledger.transaction(write=False) as own:
            row = own.execute(query, (node,)).fetchone()
    return _row(row) if row else None


def history(ledger, node=None):
    """Every enrollment, oldest first, of one node or all (current and replaced)."""
    query = "SELECT %s FROM enrollments" % ", ".join(COLUMNS)
    with ledger.transaction(write=False) as cur:
        if node is None:
            rows = cur.execute(query + " ORDER BY node, id").fetchall()
        else:
            rows = cur.execute(query + " WHERE node = ? ORDER BY id", (node,)).fetchall()
    return [_row(r) for r in rows]


def record(ledger, node, ek_fingerprint, ak_pem, ak_name, who, reason=None, reenroll=False):
    """Enroll ``node``; returns the new current record.

    A node with no enrollment is enrolled (``reason`` defaults to "first enrollment"). A node
    already enrolled is refused with EnrollmentConflict unless ``reenroll``, which needs a
    ``reason`` and keeps the replaced record in the history.
    """
    for field, value in (("node", node), ("ek_fingerprint", ek_fingerprint), ("ak_pem", ak_pem),
                         ("ak_name", ak_name), ("enrolled_by", who)):
        if not isinstance(value, str) or not value.strip():
            raise LedgerError("An enrollment needs %s (got %r)." % (field, value), node=node, field=field)
    if reenroll and not (reason or "").strip():
        raise LedgerError("Re-enrolling node %s needs a reason (what a person checked, e.g. 'TPM replaced "
                          "under ticket 1234')." % node, node=node, field="reason")
    now = ledger.clock()
    with ledger.transaction() as cur:
        old = current(ledger, node, cur)
        if old is not None and not reenroll:
            raise EnrollmentConflict(
                "Node %s is already enrolled (EK certificate sha256 %s, enrolled %s by %s). Re-enroll it "
                "explicitly, with a reason, to replace that enrollment." % (
                    node, old["ek_fingerprint"], old["enrolled_at"], old["enrolled_by"]),
                node=node, enrolled_ek_fingerprint=old["ek_fingerprint"], ek_fingerprint=ek_fingerprint)
        if old is not None:
            # Closed before the insert: the unique index allows one current row per node.
            cur.execute("UPDATE enrollments SET replaced_at = ? WHERE id = ?", (now, old["id"]))
        new_id = cur.insert(
            "INSERT INTO enrollments (node, ek_fingerprint, ak_pem, ak_name, enrolled_at, enrolled_by, reason) "
            "VALUES (?,?,?,?,?,?,?)",
            (node, ek_fingerprint, ak_pem, ak_name, now, who, (reason or "").strip() or FIRST_REASON))
        if old is not None:
            cur.execute("UPDATE enrollments SET replaced_by = ? WHERE id = ?", (new_id, old["id"]))
        return current(ledger, node, cur)
