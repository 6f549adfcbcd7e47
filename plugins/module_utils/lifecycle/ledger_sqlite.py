# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The SQLite backend: one file on the controller, the embedded default.

WAL journal with ``synchronous=FULL``; a write transaction starts with ``BEGIN IMMEDIATE``
so the write lock is taken before the first read (every writer serialises, and what it
read stays true until it commits). In check mode nothing touches the disk: a missing
file is replaced by an empty in-memory ledger, and no directory or file is created.

A read-only open (``read_only``: ``gpufleet ledger check``, the source of ``copy``, the info
modules) needs no write access: the file is opened with SQLite's ``mode=ro`` URI, a missing
path, a directory, an empty file, a file that is not SQLite and another program's database
are refused, and a ledger at an older schema version is migrated in a private in-memory
copy, never in the file. Any open refuses another program's SQLite database, so no writer
adds the ledger's tables to it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sqlite3

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported by the ledger
    from urllib import quote

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_cursor import Cursor
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_location import one_line
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_schema import SCHEMA_VERSION

__all__ = ["SqliteBackend", "identify", "FIX_PATH"]

FIX_PATH = ("pass the ledger path the controller uses (the gpufleet_ledger variable, the modules' "
            "ledger option or $GPUFLEET_LEDGER)")
# What a file that is not SQLite, or a damaged one, raises; a damaged schema's error message
# may hold bytes that are not UTF-8, and Python then raises UnicodeDecodeError instead.
_DAMAGE = (sqlite3.DatabaseError, UnicodeDecodeError)
_FIX_DAMAGED = ("%s, or restore a damaged ledger as docs/reliability.md (Ledger recovery) describes"
                % FIX_PATH)


def _refused(path, what, fix=FIX_PATH):
    return LedgerError(one_line("Cannot open the lifecycle ledger at %s: %s; fix: %s" % (path, what, fix)),
                       ledger=path)


def _refuse_non_file(path):
    """Something other than a regular file at ``path`` (a directory, a device) is no ledger."""
    if os.path.exists(path) and not os.path.isfile(path):
        kind = "a directory" if os.path.isdir(path) else "not a regular file"
        raise _refused(path, "it is %s, not a ledger file" % kind,
                       "pass the path of the ledger file itself (the gpufleet_ledger variable, the "
                       "modules' ledger option or $GPUFLEET_LEDGER)")


def _read_only_uri(path, immutable=False):
    # Quoted so a "?" or "#" in a file name stays part of the path.
    return "file:%s?mode=ro%s" % (quote(os.path.abspath(path)), "&immutable=1" if immutable else "")


def _open_read_only(path, busy_timeout):
    """A connection that can never write ``path`` nor create a file where none is."""
    if not os.path.exists(path):
        raise LedgerError(one_line("No lifecycle ledger at %s: nothing exists at that path; fix: %s"
                                   % (path, FIX_PATH)), ledger=path)
    _refuse_non_file(path)
    try:
        return _probed(path, sqlite3.connect(_read_only_uri(path), uri=True, timeout=busy_timeout,
                                             isolation_level=None))
    except sqlite3.OperationalError as exc:
        # A WAL ledger in a folder this user cannot write, with no -wal file left: SQLite
        # cannot create its shared-memory file, and with no -wal file the main file holds
        # every committed change, so it is read as immutable.
        if not _wal_needs_a_writable_folder(path, exc):
            raise
    return _probed(path, sqlite3.connect(_read_only_uri(path, immutable=True), uri=True,
                                         isolation_level=None))


def _wal_needs_a_writable_folder(path, exc):
    folder = os.path.dirname(os.path.abspath(path))
    return ("readonly" in str(exc) and not os.path.exists(path + "-wal")
            and not os.access(folder, os.W_OK))


def _probed(path, conn):
    """``conn`` once its schema has been read; a file that is not SQLite is refused."""
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        raise
    except _DAMAGE as exc:
        conn.close()
        raise _refused(path, "not a readable SQLite database (%s)" % exc, _FIX_DAMAGED)


def _user_tables(conn, path, read_only):
    try:
        return sorted(r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"))
    except _DAMAGE as exc:
        if not read_only:
            raise  # a writer keeps its message: "Cannot open ...: file is not a database. ..."
        raise _refused(path, "not a readable SQLite database (%s)" % exc, _FIX_DAMAGED)


def _refuse_foreign(path, tables, version):
    """Another program's database: tables, but not the ledger's (no 'nodes', no version)."""
    if not tables:
        return
    if "nodes" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        what = "no table 'nodes' (it holds %s)" % shown
    elif version < 1:
        what = "its table 'nodes' carries no ledger schema version"
    else:
        return
    raise _refused(path, "not a gpufleet ledger: %s" % what,
                   "%s; gpufleet never adds its tables to another program's database" % FIX_PATH)


def _schema_version(conn, tables):
    if "ledger_meta" in tables:
        row = conn.execute("SELECT value FROM ledger_meta WHERE key = 'schema_version'").fetchone()
        if row and str(row[0]).isdigit():
            return int(row[0])
    return conn.execute("PRAGMA user_version").fetchone()[0]


def _check_identity(conn, path, read_only):
    """The schema version of the ledger behind ``conn``; refuses what is no ledger."""
    tables = _user_tables(conn, path, read_only)
    version = _schema_version(conn, tables) if tables else 0
    _refuse_foreign(path, tables, version)
    if read_only and not tables:
        what = "an empty file" if os.path.getsize(path) == 0 else "an SQLite database with no tables"
        raise _refused(path, "%s, not a gpufleet ledger" % what, FIX_PATH)
    return version


def identify(path, busy_timeout=60.0):
    """The schema version of the ledger file at ``path``, read without writing anything.

    Raises LedgerError, naming the path and the fix, for a missing path, a directory, an
    empty file, a file that is not SQLite and another program's SQLite database.
    """
    try:
        conn = _open_read_only(path, busy_timeout)
        try:
            return _check_identity(conn, path, read_only=True)
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise _refused(path, str(exc), _FIX_DAMAGED)


def _in_memory_copy(conn):
    # Readers of an older ledger run the migrations (rolled back) on this copy, not the file.
    memory = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.backup(memory)
    except BaseException:
        memory.close()
        raise
    finally:
        conn.close()
    return memory


class SqliteBackend:
    name = "sqlite"
    dialect = {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "bigint": "INTEGER"}
    errors = (sqlite3.Error, OSError, UnicodeDecodeError)

    def __init__(self, path, busy_timeout=60.0, dry_run=False, read_only=False):
        self.path = path
        self.display = path
        self.secrets = ()
        self.busy_timeout = busy_timeout
        self.read_only = read_only
        self.dry_run = dry_run or read_only
        self.exists = os.path.isfile(path)

    def connect(self):
        """The connection; in check mode a missing file becomes an empty in-memory ledger."""
        if self.read_only:
            return self._connect_read_only()
        _refuse_non_file(self.path)
        if self.dry_run and not self.exists:
            return sqlite3.connect(":memory:", isolation_level=None)
        if not self.dry_run:
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o750)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            _check_identity(conn, self.path, read_only=False)  # before anything is written
            if not self.dry_run:
                # Persistent settings: WAL lets readers run beside the one writer.
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_read_only(self):
        conn = _open_read_only(self.path, self.busy_timeout)
        try:
            version = _check_identity(conn, self.path, read_only=True)
        except BaseException:
            conn.close()
            raise
        return _in_memory_copy(conn) if version < SCHEMA_VERSION else conn

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
        if self.read_only:
            return ("Check that this user can read the file (reading needs no write access, except "
                    "to a WAL ledger whose -wal file a run left behind: read it as the controller "
                    "user); a damaged file is restored as docs/reliability.md (Ledger recovery) "
                    "describes.")
        return ("Check that the directory is writable by the controller user and the file is "
                "an SQLite database; a damaged file is restored as docs/reliability.md "
                "(Ledger recovery) describes.")

    def failure_hint(self, exc):
        """The fix for a write the file refused (a full disk reads as EFBIG, ENOSPC or I/O error)."""
        text = str(exc).lower()
        if "full" in text or "disk i/o" in text:
            return ("The disk holding %s is full or failing: free space there (df -h %s), then "
                    "re-run the task." % (self.path, os.path.dirname(os.path.abspath(self.path))))
        # Text that is not UTF-8 (SQLite's "Could not decode" or Python's decode error) is damage too.
        if "malformed" in text or "not a database" in text or "decode" in text \
                or isinstance(exc, UnicodeDecodeError):
            return ("The file is damaged: stop every run and restore it as docs/reliability.md "
                    "(Ledger recovery) describes.")
        if "no such column" in text or "no such table" in text:
            return ("The file's tables are not the ledger's: it is damaged or not a gpufleet ledger; "
                    "pass the ledger path the controller uses, or restore it as docs/reliability.md "
                    "(Ledger recovery) describes.")
        return "Re-run the task, and run `gpufleet ledger check` if it repeats."
