# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The crash-safe lifecycle ledger: an SQLite file or a PostgreSQL database.

One setting chooses the backend: a file path (SQLite, the embedded default) or a
``postgresql://`` URL (``ledger_sqlite.py``, ``ledger_postgres.py``). Every state change is
one write transaction that appends a transition row (who, when, why, image version, gate
report id, run id) and updates the node's current state together: a controller killed at
any instant leaves either both or neither. Transitions carry a per-node sequence number
with ``UNIQUE(node, seq)``, and asking for the state a node is already in is a no-op, so a
re-run playbook converges with no lost and no duplicated record. Concurrent writers
(Ansible forks, AWX job slices, several controllers) serialise on the backend's write lock.

Check mode (``dry_run``) writes nothing at all: no directory, no file, no schema; every
transaction runs in full (so results are exact) and is rolled back. All SQL of the node and
transition tables is here; the gang tables' SQL is in ``ledger_gangs.py``, the capacity
controller's tables in ``decisions.py`` and ``lease.py``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import datetime
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location, states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_schema import (
    SCHEMA_VERSION, migrations)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_sqlite import SqliteBackend

__all__ = ["Ledger", "SCHEMA_VERSION", "iso"]

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


def _backend(location, busy_timeout, dry_run, password, read_only):
    if ledger_location.is_postgres(location):
        # Imported here so an SQLite-only controller never needs psycopg.
        from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_postgres import (
            PostgresBackend)
        return PostgresBackend(location, busy_timeout, dry_run, password)
    return SqliteBackend(ledger_location.expand(location), busy_timeout, dry_run, read_only)


class Ledger:
    """Lifecycle records; ``clock`` is injectable for tests.

    ``location`` is a file path or a ``postgresql://`` URL; ``password`` (optional) is the
    PostgreSQL role's password when the URL does not carry it. ``path`` is the location as
    shown to people: the password of a URL is masked. ``read_only`` is check mode for a
    reader: an SQLite file is opened read-only (no write access needed) and must exist.
    """

    def __init__(self, location, clock=time.time, busy_timeout=60.0, dry_run=False, password=None,
                 read_only=False):
        self.clock = clock
        self.dry_run = dry_run = dry_run or read_only
        self.backend = _backend(location, busy_timeout, dry_run, password, read_only)
        self.path = self.backend.display
        self.exists = self.backend.exists
        self._pending = []
        self.found_version = None  # the schema version the ledger had when opened
        self._conn = None
        try:
            self._conn = self.backend.connect()
            self._prepare()
        except self.backend.errors as exc:
            self.close()
            raise LedgerError("Cannot open the lifecycle ledger at %s: %s. %s"
                              % (self.path, self._scrub(exc), self.backend.open_hint()),
                              ledger=self.path)

    def _scrub(self, text):
        return ledger_location.scrub(text, *self.backend.secrets)

    # --- schema ----------------------------------------------------------------
    def schema_version(self, cur):
        """The schema version recorded in the ledger (0: empty)."""
        if self.backend.table_exists(cur, "ledger_meta"):
            row = cur.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
            if row and not str(row[0]).isdigit():
                raise LedgerError(ledger_location.one_line(
                    "The ledger at %s records schema version %r, not a number: the file is damaged or "
                    "not a gpufleet ledger; fix: pass the ledger path the controller uses, or restore "
                    "it as docs/reliability.md (Ledger recovery) describes" % (self.path, row[0])),
                    ledger=self.path)
            if row:
                return int(row[0])
        return self.backend.legacy_version(cur)

    def _prepare(self):
        """Bring the schema to this collection's version; in check mode only in memory."""
        cur = self.backend.begin(self._conn, write=not self.dry_run)
        try:
            version = self.found_version = self.schema_version(cur)
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    "The ledger at %s has schema version %d, newer than this collection's %d. "
                    "Upgrade the gpufleet.baremetal collection." % (self.path, version, SCHEMA_VERSION),
                    ledger=self.path)
            steps = migrations(version, self.backend.dialect)
            if not self.dry_run:
                self._migrate(cur, steps)
            # Check mode: the migrations run at the start of every transaction and are rolled
            # back with it, so the ledger on disk (or on the server) is never changed.
            self._pending = steps if self.dry_run else []
            self.backend.end(cur, commit=not self.dry_run)
        except BaseException:
            self.backend.end(cur, commit=False)
            raise
        finally:
            cur.close()

    def _migrate(self, cur, steps):
        for version, statements in steps:
            for statement in statements:
                cur.execute(statement)
            if version >= 2:
                cur.execute("DELETE FROM ledger_meta WHERE key = 'schema_version'")
                cur.execute("INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?)",
                            (str(version),))
            self.backend.stamp(cur, version)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @contextlib.contextmanager
    def transaction(self, commit=None, write=True):
        """One transaction; a write one takes the backend's write lock at BEGIN.

        Committed unless the ledger is in check mode (``dry_run``) or ``write`` is false.
        """
        commit = (not self.dry_run if commit is None else commit) and write
        try:
            cur = self.backend.begin(self._conn, write or bool(self._pending))
            self._migrate(cur, self._pending)
        except self.backend.errors as exc:
            raise LedgerError("Cannot lock the lifecycle ledger at %s: %s. %s"
                              % (self.path, self._scrub(exc), self.backend.lock_hint()),
                              ledger=self.path)
        try:
            yield cur
        except self.backend.errors as exc:
            # A write refused mid-transaction (disk full, damaged file): roll back, say why.
            self._finish(cur, False, failure=exc)
        except BaseException:
            self._finish(cur, False)
            raise
        else:
            self._finish(cur, commit)

    def _finish(self, cur, commit, failure=None):
        try:
            self.backend.end(cur, commit)
        except self.backend.errors as exc:
            failure = exc
        finally:
            cur.close()
        if failure is not None:
            raise LedgerError("The lifecycle ledger at %s refused to %s: %s. Nothing of this "
                              "change was recorded. %s"
                              % (self.path, "commit" if commit else "complete the transaction",
                                 self._scrub(failure), self.backend.failure_hint(failure)),
                              ledger=self.path)

    @contextlib.contextmanager
    def _reading(self, cur):
        if cur is not None:
            yield cur
        else:
            with self.transaction(write=False) as own:
                yield own

    # --- reads -----------------------------------------------------------------
    def get(self, node, cur=None):
        """The node's current record, or None when it was never enrolled."""
        with self._reading(cur) as source:
            row = source.execute("SELECT %s FROM nodes WHERE node = ?" % ", ".join(_NODE_COLUMNS),
                                 (node,)).fetchone()
        return _row(_NODE_COLUMNS, row) if row else None

    def nodes(self, sku=None, node_states=None, cur=None):
        """Current records, optionally of one SKU and in some states, sorted by name."""
        with self._reading(cur) as source:
            rows = source.execute("SELECT %s FROM nodes ORDER BY node"
                                  % ", ".join(_NODE_COLUMNS)).fetchall()
        records = [_row(_NODE_COLUMNS, r) for r in rows]
        return [r for r in records
                if (sku is None or r["sku"] == sku)
                and (node_states is None or r["state"] in node_states)]

    def history(self, node=None, cur=None):
        """Transitions in the order they happened, for one node or all."""
        query = "SELECT %s FROM transitions" % ", ".join(_TRANSITION_COLUMNS)
        with self._reading(cur) as source:
            if node is None:
                rows = source.execute(query + " ORDER BY id").fetchall()
            else:
                rows = source.execute(query + " WHERE node = ? ORDER BY seq", (node,)).fetchall()
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
        self._write(cur, node, current, target, who, why, dict(
            image_version=image_version, gate_report_id=gate_report_id, run_id=run_id,
            gang_id=gang_id, sku=sku))
        result.update(after=target, changed=True)
        return result

    def _write(self, cur, node, current, target, who, why, meta):
        now = self.clock()
        keep = current or {}
        seq = keep.get("seq", 0) + 1
        values = dict((key, meta[key] or keep.get(key))
                      for key in ("sku", "image_version", "gate_report_id"))
        cur.execute(
            "INSERT INTO transitions (node, seq, from_state, to_state, at, who, why, "
            "image_version, gate_report_id, run_id, gang_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (node, seq, keep.get("state"), target, now, who, why, values["image_version"],
             values["gate_report_id"], meta["run_id"], meta["gang_id"]))
        cur.execute(
            "INSERT INTO nodes (node, state, seq, sku, image_version, gate_report_id, reason, "
            "gang_id, updated_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(node) DO UPDATE SET "
            "state=excluded.state, seq=excluded.seq, sku=excluded.sku, "
            "image_version=excluded.image_version, gate_report_id=excluded.gate_report_id, "
            "reason=excluded.reason, updated_at=excluded.updated_at",
            (node, target, seq, values["sku"], values["image_version"],
             values["gate_report_id"], why, keep.get("gang_id"), now))

    def reserve(self, cur, node, gang_id):
        """Mark a node as held by a gang (None releases it back to the pool)."""
        cur.execute("UPDATE nodes SET gang_id = ? WHERE node = ?", (gang_id, node))
