# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""A named lease in the ledger: one capacity controller acts at a time.

A lease row holds its holder and an expiry. ``acquire_lease`` is one upsert inside a write
transaction (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the ledger's advisory lock, and
``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` makes the take-over itself atomic): the row is
taken only when it is free, expired, or already held by the caller. Two holders therefore
never both hold it; a holder that dies stops renewing, and a standby takes over at the first
attempt after ``expires_at`` - at most ``ttl_s`` after the last renewal (plus the standby's
polling interval). Times come from the caller (``now``), so the holders' clocks must agree
to well within ``ttl_s`` (NTP).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["acquire_lease", "renew_lease", "release_lease", "lease_holder"]


def _check(name, holder, ttl_s):
    if not name or not holder or not ttl_s or ttl_s <= 0:
        raise LedgerError("A lease needs a name, a holder and a positive ttl_s (got %r, %r, %r)."
                          % (name, holder, ttl_s), lease=name)


def _current(cur, name):
    row = cur.execute("SELECT holder, expires_at FROM leases WHERE name = ?", (name,)).fetchone()
    return (row[0], row[1]) if row else (None, None)


def acquire_lease(ledger, name, holder, ttl_s, now):
    """Take or extend lease ``name``; returns (acquired, current holder, expires_at)."""
    _check(name, holder, ttl_s)
    with ledger.transaction() as cur:
        cur.execute(
            "INSERT INTO leases (name, holder, acquired_at, renewed_at, expires_at) "
            "VALUES (?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET holder=excluded.holder, "
            "acquired_at=CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at "
            "ELSE excluded.acquired_at END, renewed_at=excluded.renewed_at, "
            "expires_at=excluded.expires_at "
            "WHERE leases.holder = excluded.holder OR leases.expires_at <= ?",
            (name, holder, now, now, now + ttl_s, now))
        current, expires_at = _current(cur, name)
    return current == holder, current, expires_at


def renew_lease(ledger, name, holder, ttl_s, now):
    """Extend a lease the caller still holds; returns (renewed, current holder, expires_at).

    A holder whose lease expired and was taken over gets ``renewed=False`` and must stop
    acting at once.
    """
    _check(name, holder, ttl_s)
    with ledger.transaction() as cur:
        cur.execute("UPDATE leases SET renewed_at = ?, expires_at = ? WHERE name = ? AND holder = ?",
                    (now, now + ttl_s, name, holder))
        current, expires_at = _current(cur, name)
    return current == holder, current, expires_at


def release_lease(ledger, name, holder):
    """Give the lease up (a clean shutdown); True when the caller held it."""
    with ledger.transaction() as cur:
        cur.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
        return cur.rowcount == 1


def lease_holder(ledger, name, now):
    """(holder, expires_at) of a live lease, or (None, None) when free or expired."""
    with ledger.transaction(write=False) as cur:
        holder, expires_at = _current(cur, name)
    if holder is None or expires_at <= now:
        return None, None
    return holder, expires_at
