# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The crash-safe lifecycle ledger: one SQLite file on the controller.

Every state change is one ``BEGIN IMMEDIATE`` transaction that appends a transition
row (who, when, why, image version, gate report id, run id) and updates the node's
current state together, in WAL mode with ``synchronous=FULL``: a controller killed at
any instant leaves either both or neither. Transitions carry a per-node sequence number
with ``UNIQUE(node, seq)``, and asking for the state a node is already in is a no-op,
so a re-run playbook converges with no lost and no duplicated record. Concurrent
writers (Ansible forks delegating to the controller) serialise on the write lock.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import datetime
import os
import sqlite3
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["Ledger", "SCHEMA_VERSION", "iso"]

SCHEMA_VERSION = 1
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS nodes (
        node TEXT PRIMARY KEY, state TEXT NOT NULL, seq INTEGER NOT NULL,
        sku TEXT, image_version TEXT, gate_report_id TEXT, reason TEXT,
        gang_id TEXT, updated_at REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS transitions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, node TEXT NOT NULL, seq INTEGER NOT NULL,
        from_state TEXT, to_state TEXT NOT NULL, at REAL NOT NULL, who TEXT NOT NULL,
        why TEXT NOT NULL, image_version TEXT, gate_report_id TEXT, run_id TEXT,
        gang_id TEXT, UNIQUE (node, seq))""",
    """CREATE TABLE IF NOT EXISTS gangs (
        gang_id TEXT PRIMARY KEY, sku TEXT NOT NULL, size INTEGER NOT NULL,
        deadline REAL NOT NULL, status TEXT NOT NULL, reason TEXT,
        created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS gang_members (
        gang_id TEXT NOT NULL, node TEXT NOT NULL, source TEXT NOT NULL,
        PRIMARY KEY (gang_id, node))""",
    "CREATE INDEX IF NOT EXISTS transitions_node ON transitions (node, seq)",
)
_NODE_COLUMNS = ("node", "state", "seq", "sku", "image_version", "gate_report_id",
                 "reason", "gang_id", "updated_at")
_TRANSITION_COLUMNS = ("id", "node", "seq", "from_state", "to_state", "at", "who", "why",
                       "image_version", "gate_report_id", "run_id", "gang_id")


def iso(epoch):
    """UTC ISO 8601 text for an epoch timestamp (None stays None)."""
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def _row(columns, values, times=("updated_at", "at")):
    record = dict(zip(columns, values))
    for key in times:
        if key in record:
            record[key] = iso(record[key])
    return record


class Ledger:
    """Lifecycle records in one SQLite file; ``clock`` is injectable for tests."""

    def __init__(self, path, clock=time.time, busy_timeout=60.0, dry_run=False):
        self.path = path
        self.clock = clock
        # Check mode: every transaction runs in full (so the result is exact) and is
        # then rolled back instead of committed.
        self.dry_run = dry_run
        parent = os.path.dirname(os.path.abspath(path))
        try:
            if not os.path.isdir(parent):
                os.makedirs(parent)
            self._conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(
                "Cannot open the lifecycle ledger at %s: %s. Check that the directory is "
                "writable by the controller user and the file is an SQLite database." % (path, exc),
                ledger=path)

    def _migrate(self):
        with self.transaction(commit=True) as cur:
            version = cur.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    "The ledger at %s has schema version %d, newer than this collection's %d. "
                    "Upgrade the gpufleet.baremetal collection." % (self.path, version, SCHEMA_VERSION),
                    ledger=self.path)
            for statement in _SCHEMA:
                cur.execute(statement)
            cur.execute("PRAGMA user_version=%d" % SCHEMA_VERSION)

    def close(self):
        self._conn.close()

    @contextlib.contextmanager
    def transaction(self, commit=None):
        """One write transaction; the write lock is taken at BEGIN, not at first write."""
        commit = not self.dry_run if commit is None else commit
        cur = self._conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise LedgerError(
                "Cannot lock the lifecycle ledger at %s: %s. Another writer held it too long; "
                "re-run the task." % (self.path, exc), ledger=self.path)
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT" if commit else "ROLLBACK")
        finally:
            cur.close()

    # --- reads -----------------------------------------------------------------
    def get(self, node, cur=None):
        """The node's current record, or None when it was never enrolled."""
        source = cur or self._conn
        row = source.execute("SELECT %s FROM nodes WHERE node = ?" % ", ".join(_NODE_COLUMNS),
                             (node,)).fetchone()
        return _row(_NODE_COLUMNS, row) if row else None

    def nodes(self, sku=None, node_states=None, cur=None):
        """Current records, optionally of one SKU and in some states, sorted by name."""
        source = cur or self._conn
        query = "SELECT %s FROM nodes" % ", ".join(_NODE_COLUMNS)
        rows = source.execute(query + " ORDER BY node").fetchall()
        records = [_row(_NODE_COLUMNS, r) for r in rows]
        return [r for r in records
                if (sku is None or r["sku"] == sku)
                and (node_states is None or r["state"] in node_states)]

    def history(self, node=None):
        """Transitions in the order they happened, for one node or all."""
        query = "SELECT %s FROM transitions" % ", ".join(_TRANSITION_COLUMNS)
        if node is None:
            rows = self._conn.execute(query + " ORDER BY id").fetchall()
        else:
            rows = self._conn.execute(query + " WHERE node = ? ORDER BY seq", (node,)).fetchall()
        return [_row(_TRANSITION_COLUMNS, r) for r in rows]

    # --- writes ----------------------------------------------------------------
    def transition(self, node, target, who, why, **meta):
        """Move one node to ``target`` in its own transaction; see ``apply``."""
        with self.transaction() as cur:
            return self.apply(cur, node, target, who, why, **meta)

    def apply(self, cur, node, target, who, why, image_version=None, gate_report_id=None,
              run_id=None, gang_id=None, sku=None, skip_if_past=False):
        """Record ``node -> target`` inside the caller's transaction.

        Returns ``{node, before, after, changed, skipped_past}``. Asking for the current
        state changes nothing; with ``skip_if_past`` a node already further along the
        bring-up path is left alone (a re-run after a crash). Anything else must be an
        edge of the state machine, or IllegalTransition is raised.
        """
        if not why:
            raise LedgerError('Transition of node "%s" to "%s" has no reason. Pass why/reason.'
                              % (node, target), node=node)
        current = self.get(node, cur)
        before = current["state"] if current else None
        result = {"node": node, "before": before, "after": before, "changed": False,
                  "skipped_past": False}
        if before == target:
            return result
        if skip_if_past and states.is_past(before, target):
            result["skipped_past"] = True
            return result
        states.check_transition(node, before, target)
        now = self.clock()
        seq = (current["seq"] if current else 0) + 1
        keep = current or {}
        values = {
            "sku": sku or keep.get("sku"),
            "image_version": image_version or keep.get("image_version"),
            "gate_report_id": gate_report_id or keep.get("gate_report_id"),
        }
        cur.execute(
            "INSERT INTO transitions (node, seq, from_state, to_state, at, who, why, "
            "image_version, gate_report_id, run_id, gang_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (node, seq, before, target, now, who, why, values["image_version"],
             values["gate_report_id"], run_id, gang_id))
        cur.execute(
            "INSERT INTO nodes (node, state, seq, sku, image_version, gate_report_id, reason, "
            "gang_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(node) DO UPDATE SET "
            "state=excluded.state, seq=excluded.seq, sku=excluded.sku, "
            "image_version=excluded.image_version, gate_report_id=excluded.gate_report_id, "
            "reason=excluded.reason, updated_at=excluded.updated_at",
            (node, target, seq, values["sku"], values["image_version"],
             values["gate_report_id"], why, keep.get("gang_id"), now))
        result.update(after=target, changed=True)
        return result

    def reserve(self, cur, node, gang_id):
        """Mark a node as held by a gang (None releases it back to the pool)."""
        cur.execute("UPDATE nodes SET gang_id = ? WHERE node = ?", (gang_id, node))
