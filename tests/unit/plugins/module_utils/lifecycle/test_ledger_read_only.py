"""Reading the ledger needs no write access, and what is no ledger is refused (SQLite).

A read-only open (``ledger_admin.open_existing``, the info modules) opens the file with
SQLite's ``mode=ro`` URI: it creates nothing where nothing is, never migrates, never
writes. Every open, writers included, refuses another program's SQLite database.
"""
import os
import sqlite3

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import (
    argspec, info, ledger_admin, ledger_sqlite)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import SCHEMA_VERSION, Ledger

from .test_ledger_migrate import make_v1
from .unprivileged import as_unprivileged, read_only_ledger


def _foreign(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cookies (host TEXT, value TEXT)")
    conn.commit()
    conn.close()
    return path


def _tree(folder):
    return dict((os.path.join(d, f), open(os.path.join(d, f), "rb").read())
                for d, _dirs, files in os.walk(str(folder)) for f in files)


def test_a_read_only_open_of_a_missing_path_creates_nothing(tmp_path):
    path = str(tmp_path / "sub" / "ledger.sqlite")
    with pytest.raises(LedgerError) as err:
        Ledger(path, read_only=True)
    assert err.value.msg == ("No lifecycle ledger at %s: nothing exists at that path; fix: %s"
                             % (path, ledger_sqlite.FIX_PATH))
    assert os.listdir(str(tmp_path)) == []


def test_check_mode_refuses_a_directory_instead_of_reading_an_empty_ledger(tmp_path):
    with pytest.raises(LedgerError) as err:
        Ledger(str(tmp_path), dry_run=True)
    assert "%s: it is a directory, not a ledger file; fix: " % tmp_path in err.value.msg


@pytest.mark.parametrize("dry_run", [False, True], ids=["writer", "check-mode"])
def test_no_open_adds_the_ledger_to_another_programs_database(tmp_path, dry_run):
    path = _foreign(str(tmp_path / "cookies.sqlite"))
    before = _tree(tmp_path)
    with pytest.raises(LedgerError) as err:
        Ledger(path, dry_run=dry_run)
    assert "not a gpufleet ledger: no table 'nodes' (it holds cookies); fix: " in err.value.msg
    assert _tree(tmp_path) == before  # not even its journal mode changed


def test_an_older_ledger_is_read_in_memory_and_left_as_it_is(tmp_path):
    path = make_v1(str(tmp_path / "v1.sqlite"))
    before = _tree(tmp_path)
    assert ledger_sqlite.identify(path) == 1
    book = ledger_admin.open_existing(path)
    assert book.found_version == 1 and book.get("n1")["state"] == "ready"
    assert ledger_admin.check(book) == [] and ledger_admin.table_summary(book)["decisions"]["rows"] == 0
    book.close()
    assert _tree(tmp_path) == before


def test_a_read_only_ledger_refuses_every_write(tmp_path):
    path = str(tmp_path / "l.sqlite")
    Ledger(path).transition("n1", "enrolled", "t", "new", sku="lab")
    book = Ledger(path, read_only=True)
    with pytest.raises(LedgerError) as err:
        with book.transaction(commit=True) as cur:
            cur.execute("DELETE FROM nodes")
    assert "readonly" in err.value.msg
    assert book.get("n1")["state"] == "enrolled"


def test_migrate_refuses_a_missing_path_and_creates_nothing(tmp_path):
    path = str(tmp_path / "sub" / "ledger.sqlite")
    with pytest.raises(LedgerError) as err:
        ledger_admin.migrate(path)
    assert "%s: nothing to migrate (a new ledger needs none: the first task that writes to it creates " \
           "it at schema version %d); fix: " % (path, SCHEMA_VERSION) in err.value.msg
    assert os.listdir(str(tmp_path)) == []


def test_copy_refuses_a_missing_source_and_creates_no_destination(tmp_path):
    with pytest.raises(LedgerError) as err:
        ledger_admin.copy(str(tmp_path / "nothere.sqlite"), str(tmp_path / "out" / "copy.sqlite"))
    assert "nothing exists at that path" in err.value.msg
    assert os.listdir(str(tmp_path)) == []


def test_the_failure_hint_of_a_schema_that_is_not_the_ledgers_says_so():
    backend = ledger_sqlite.SqliteBackend("/x/l.sqlite")
    assert "not a gpufleet ledger" in backend.failure_hint(sqlite3.OperationalError("no such column: gang_id"))
    assert "damaged" in backend.failure_hint(sqlite3.OperationalError("Could not decode to UTF-8 column 'node'"))


def _read(path):
    book = ledger_admin.open_existing(path)
    try:
        return [ledger_admin.check(book), [n["node"] for n in book.nodes()]]
    finally:
        book.close()


@pytest.mark.parametrize("folder_writable,build,nodes", [
    (False, None, ["n1"]), (False, make_v1, ["n1"]), (True, make_v1, ["n1"])],
    ids=["read-only-folder", "read-only-folder-older-ledger", "read-only-file-older-ledger"])
def test_reading_needs_no_write_access(folder_writable, build, nodes):
    with read_only_ledger(folder_writable=folder_writable, build=build) as path:
        before = open(path, "rb").read()
        assert as_unprivileged(lambda: _read(path)) == [[], nodes]
        assert open(path, "rb").read() == before


class _Module:
    """What ``open_ledger`` reads of an AnsibleModule."""

    def __init__(self, ledger):
        self.params = {"ledger": ledger, "ledger_password": None}
        self.check_mode = False
        self.no_log_values = set()

    def warn(self, _msg):
        raise AssertionError("no warning expected")


def test_the_info_modules_read_a_ledger_they_cannot_write():
    with read_only_ledger() as path:
        def read():
            book = argspec.open_ledger(_Module(path), read_only=True)
            try:
                return [r["node"] for r in info.read(book, nodes=None, sku=None, history=True, gang_id=None,
                                                      check=True, decisions=5, demand_pool="lab", lease="capacity",
                                                      rollouts="lab")["nodes"]]
            finally:
                book.close()
        assert as_unprivileged(read) == ["n1"]


def test_check_refuses_a_location_holding_no_ledger(ledger_url):
    # SQLite: nothing at the path; PostgreSQL: a database (schema) without the ledger's tables.
    with pytest.raises(LedgerError) as err:
        ledger_admin.open_existing(ledger_url)
    if ledger_url.startswith("postgresql://"):
        assert "No gpufleet ledger at " in err.value.msg and "no table 'nodes'; fix: " in err.value.msg
    else:
        assert "nothing exists at that path; fix: " in err.value.msg


def test_a_schema_version_that_is_not_a_number_is_refused(tmp_path):
    path = str(tmp_path / "l.sqlite")
    book = Ledger(path)
    with book.transaction() as cur:
        cur.execute("UPDATE ledger_meta SET value = 'x3' WHERE key = 'schema_version'")
    book.close()
    for read_only in (True, False):
        with pytest.raises(LedgerError) as err:
            Ledger(path, read_only=read_only)
        assert "records schema version 'x3', not a number: the file is damaged" in err.value.msg


def test_a_file_name_with_uri_characters_is_read(tmp_path):
    # The read-only open goes through a file: URI; "?", "#", "%" and spaces stay in the path.
    path = str(tmp_path / "we?ird #50% name.sqlite")
    Ledger(path).transition("n1", "enrolled", "t", "new", sku="lab")
    assert _read(path) == [[], ["n1"]]
