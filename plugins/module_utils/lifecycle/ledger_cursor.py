# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""One cursor shape over both drivers, so every ledger query is written once.

Queries use ``?`` placeholders (sqlite3's style); the PostgreSQL cursor rewrites them to
psycopg's ``%s``. No ledger query contains a literal ``?`` or ``%``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["Cursor", "PostgresCursor"]


class Cursor:
    """A DB-API cursor that returns itself from ``execute`` (sqlite3 style chaining)."""

    def __init__(self, raw):
        self.raw = raw

    def _sql(self, sql):
        return sql

    def execute(self, sql, params=()):
        self.raw.execute(self._sql(sql), tuple(params))
        return self

    def fetchone(self):
        return self.raw.fetchone()

    def fetchall(self):
        return self.raw.fetchall()

    def __iter__(self):
        return iter(self.raw.fetchall())

    @property
    def rowcount(self):
        return self.raw.rowcount

    def insert(self, sql, params=()):
        """Run an INSERT into a table with a generated ``id``; return that id."""
        self.execute(sql, params)
        return self.raw.lastrowid

    def close(self):
        self.raw.close()


class PostgresCursor(Cursor):
    """psycopg placeholders and ``RETURNING id`` for generated ids."""

    def _sql(self, sql):
        return sql.replace("?", "%s")

    def insert(self, sql, params=()):
        self.execute(sql + " RETURNING id", params)
        return self.raw.fetchone()[0]
