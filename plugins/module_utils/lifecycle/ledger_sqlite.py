# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The SQLite backend: one file on the controller, the embedded default.

WAL journal with ``synchronous=FULL``; a write transaction starts with ``BEGIN IMMEDIATE``
so the write lock is taken before the first read (every writer serialises, and what it
read stays true until it commits). In check mode nothing touches the disk: a missing
file is replaced by an empty in-memory ledger, and no directory or file is created.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sqlite3

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_cursor import Cursor

__all__ = ["SqliteBackend"]


class SqliteBackend:
    name = "sqlite"
    dialect = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "bigint": "INTEGER"}
    errors = (sqlite3.Error, OSError)

    def __init__(self, path, busy_timeout=60.0, dry_run=False):
        self.path = path
        self.display = path
        self.secrets = ()
        self.busy_timeout = busy_timeout
        self.dry_run = dry_run
        self.exists = os.path.isfile(path)

    def connect(self):
        """The connection; in check mode a missing file becomes an empty in-memory ledger."""
        if self.dry_run and not self.exists:
            return sqlite3.connect(":memory:", isolation_level=None)
        if not self.dry_run:
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o750)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        if not self.dry_run:
            # Persistent settings: WAL lets readers run beside the one writer.
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def begin(self, conn, write):
        cur = Cursor(conn.cursor())
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        return cur

    def end(self, cur, commit):
        cur.execute("COMMIT" if commit else "ROLLBACK")

    def table_exists(self, cur, table):
        row = cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                          (table,)).fetchone()
        return row is not None

    def legacy_version(self, cur):
        """Version 1 ledgers kept their schema version in ``PRAGMA user_version``."""
        return cur.execute("PRAGMA user_version").fetchone()[0]

    def stamp(self, cur, version):
        # Kept for sqlite3-CLI users and older collections reading a newer file.
        cur.execute("PRAGMA user_version=%d" % int(version))

    def after_copy(self, cur, table):
        """Nothing to do: AUTOINCREMENT follows the largest id inserted."""

    def lock_hint(self):
        return ("Another writer held the ledger's write lock longer than %ss; re-run the task."
                % self.busy_timeout)

    def open_hint(self):
        return ("Check that the directory is writable by the controller user and the file is "
                "an SQLite database.")
