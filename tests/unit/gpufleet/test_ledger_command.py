"""``gpufleet ledger migrate|copy|check`` on SQLite and PostgreSQL ledgers, and on what is no ledger."""
import argparse
import contextlib
import io
import json
import os
import shutil
import sqlite3
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpufleet import main as cli_main
from gpufleet.commands import ledger as ledger_command

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import SCHEMA_VERSION, Ledger
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)
from tests.unit.plugins.module_utils.lifecycle.test_ledger_migrate import make_v1
from tests.unit.plugins.module_utils.lifecycle.unprivileged import as_unprivileged, read_only_ledger


def test_migrate_copy_check_round_trip(capsys, tmp_path, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    src = make_v1(str(tmp_path / "v1.sqlite"))
    assert cli_main.main(["ledger", "migrate", src]) == 0
    assert "from version 1 to %d" % SCHEMA_VERSION in capsys.readouterr().out
    assert cli_main.main(["ledger", "copy", src, ledger_url, "--json"]) == 0
    copied = json.loads(capsys.readouterr().out)
    assert copied["tables"]["transitions"]["rows"] == 2
    assert cli_main.main(["ledger", "check", ledger_url]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
    assert cli_main.main(["ledger", "copy", src, ledger_url]) == 1  # destination not empty
    assert "not empty" in capsys.readouterr().err


def test_check_exits_1_naming_each_problem(capsys, tmp_path):
    path = str(tmp_path / "l.sqlite")
    book = Ledger(path)
    book.transition("n1", "enrolled", "t", "new")
    with book.transaction() as cur:
        cur.execute("UPDATE nodes SET seq = 5 WHERE node = 'n1'")
    book.close()
    assert cli_main.main(["ledger", "check", path]) == 1
    assert "node n1: current state enrolled (seq 5) differs" in capsys.readouterr().out


def _foreign(path):
    """Another program's SQLite database: valid, but without the ledger's tables."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cookies (host TEXT, value TEXT)")
    conn.commit()
    conn.close()


def _nodes_without_version(path):
    """A database with a table called nodes that is not the ledger's (user_version 0)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE nodes (hostname TEXT)")
    conn.commit()
    conn.close()


def _bad_ledgers(tmp_path):
    """Each bad location, made on disk, with the words its error must carry."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "empty.sqlite").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("ledger: /var/lib/gpufleet/ledger.sqlite\n")
    _foreign(str(tmp_path / "cookies.sqlite"))
    _nodes_without_version(str(tmp_path / "hosts.sqlite"))
    return [
        (tmp_path / "missing" / "ledger.sqlite", "nothing exists at that path"),
        (folder, "it is a directory"),
        (tmp_path / "empty.sqlite", "an empty file, not a gpufleet ledger"),
        (tmp_path / "notes.txt", "not a readable SQLite database"),
        (tmp_path / "cookies.sqlite", "not a gpufleet ledger: no table 'nodes' (it holds cookies)"),
        (tmp_path / "hosts.sqlite", "not a gpufleet ledger: its table 'nodes' carries no ledger schema version"),
    ]


def _one_line_error(err, path, what):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gpufleet ledger: error: ") and str(path) in lines[0], err
    assert what in lines[0] and "; fix: " in lines[0], err
    assert "Traceback" not in err


def _snapshot(tmp_path):
    return dict((str(p), p.read_bytes() if p.is_file() else None) for p in sorted(tmp_path.rglob("*")))


def test_check_refuses_what_is_not_a_ledger_naming_path_and_fix(capsys, tmp_path):
    for path, what in _bad_ledgers(tmp_path):
        before = _snapshot(tmp_path)
        assert cli_main.main(["ledger", "check", str(path)]) == 1, path
        out, err = capsys.readouterr()
        assert "problem(s)" not in out
        _one_line_error(err, path, what)
        assert _snapshot(tmp_path) == before  # nothing created, migrated or written


def test_migrate_refuses_what_is_not_a_ledger_and_writes_nothing(capsys, tmp_path):
    for path, what in _bad_ledgers(tmp_path):
        before = _snapshot(tmp_path)
        assert cli_main.main(["ledger", "migrate", str(path)]) == 1, path
        _one_line_error(capsys.readouterr().err, path,
                        "nothing to migrate" if "missing" in str(path) else what)
        assert _snapshot(tmp_path) == before


def test_copy_refuses_a_bad_source_and_creates_no_destination(capsys, tmp_path):
    destination = tmp_path / "out" / "copy.sqlite"
    for path, what in _bad_ledgers(tmp_path):
        assert cli_main.main(["ledger", "copy", str(path), str(destination)]) == 1, path
        _one_line_error(capsys.readouterr().err, path, what)
        assert not (tmp_path / "out").exists()


def test_copy_refuses_another_programs_database_as_destination(capsys, tmp_path):
    src, dst = make_v1(str(tmp_path / "v1.sqlite")), str(tmp_path / "cookies.sqlite")
    _foreign(dst)
    before = _snapshot(tmp_path)
    assert cli_main.main(["ledger", "copy", src, dst]) == 1
    _one_line_error(capsys.readouterr().err, dst, "no table 'nodes' (it holds cookies)")
    assert _snapshot(tmp_path) == before


def test_check_reads_an_older_ledger_without_migrating_it(capsys, tmp_path):
    path = make_v1(str(tmp_path / "v1.sqlite"))
    before = _snapshot(tmp_path)
    assert cli_main.main(["ledger", "check", path]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
    assert _snapshot(tmp_path) == before  # still version 1, not a byte changed


def _run(*argv):
    """(exit code, stdout, stderr) of ``gpufleet ARGV``, captured in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("folder_writable,build", [(False, None), (True, make_v1)],
                         ids=["read-only-folder", "read-only-file-of-an-older-ledger"])
def test_check_needs_no_write_access(folder_writable, build):
    with read_only_ledger(folder_writable=folder_writable, build=build) as path:
        _run("ledger", "check", path)  # imports everything the unprivileged reader needs
        before = open(path, "rb").read()
        code, out, err = as_unprivileged(lambda: _run("ledger", "check", path, "--json"))
        assert (code, err) == (0, ""), err
        assert json.loads(out)["problems"] == []
        assert open(path, "rb").read() == before


# --- arbitrary bytes as a ledger file (hypothesis) ----------------------------------------
EXAMPLES = 250
TRIED = {"bytes": 0, "damaged ledger": 0}
OUTCOMES = {"refused": 0, "problems listed": 0, "clean": 0}


def _real_ledger_bytes():
    folder = tempfile.mkdtemp(prefix="gpufleet-ledger-")
    try:
        path = os.path.join(folder, "l.sqlite")
        book = Ledger(path)
        for node in ("n1", "n2"):
            book.transition(node, "enrolled", "t", "new", sku="lab")
            book.transition(node, "inspected", "t", "inventory read")
        book.close()
        with open(path, "rb") as handle:
            return handle.read()
    finally:
        shutil.rmtree(folder)


REAL = _real_ledger_bytes()


def _check_quickly(path):
    """``gpufleet ledger check PATH`` as ``main`` runs it, without building the whole parser."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = ledger_command.run_check(argparse.Namespace(ledger=path, json=False))
        except GpufleetError as exc:  # what main() prints for every error of the collection
            print("gpufleet ledger: error: %s" % exc, file=sys.stderr)
            code = 1
    return code, out.getvalue(), err.getvalue()


def _holds_the_ledger(path):
    """Independently of the ledger code: the file has the ledger's tables and a schema version."""
    conn = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        tables = set(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        return "nodes" in tables and "transitions" in tables and conn.execute(
            "PRAGMA user_version").fetchone()[0] >= 1
    finally:
        conn.close()


def _check_bytes(content):
    """``ledger check`` on ``content``: a clean error, problems, or success for a real ledger."""
    folder = tempfile.mkdtemp(prefix="gpufleet-ledger-")
    try:
        path = os.path.join(folder, "ledger.sqlite")
        with open(path, "wb") as handle:
            handle.write(content)
        code, out, err = _check_quickly(path)
        with open(path, "rb") as handle:
            assert handle.read() == content  # check never writes the file
        assert set(os.listdir(folder)) <= {"ledger.sqlite", "ledger.sqlite-wal", "ledger.sqlite-shm"}
        real = code == 0 and _holds_the_ledger(path)
    finally:
        shutil.rmtree(folder)
    assert code in (0, 1), (code, out, err)
    if err:
        assert code == 1 and out == "", (out, err)
        assert len(err.strip().splitlines()) == 1 and path in err and "Traceback" not in err, err
        assert err.startswith("gpufleet ledger: error: ") and ("fix: " in err or "restore" in err), err
        OUTCOMES["refused"] += 1
        return
    assert out.strip().splitlines()[-1].startswith("%s: " % path), out
    if code == 0:  # success only for a real ledger
        assert real and "0 problem(s)" in out, out
    OUTCOMES["clean" if code == 0 else "problems listed"] += 1


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=2048),
                 st.binary(max_size=2048).map(lambda tail: b"SQLite format 3\x00" + tail)))
def test_arbitrary_bytes_are_refused_cleanly(content):
    TRIED["bytes"] += 1
    _check_bytes(content)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(REAL) - 1), st.binary(min_size=1, max_size=64)),
                min_size=1, max_size=4),
       st.one_of(st.none(), st.integers(0, len(REAL))))
def test_a_damaged_ledger_is_refused_or_reported_cleanly(writes, cut):
    content = bytearray(REAL)
    for offset, data in writes:
        content[offset:offset + len(data)] = data
    TRIED["damaged ledger"] += 1
    _check_bytes(bytes(content[:cut] if cut is not None else content))


def test_zz_report_counts():
    print("\nledger check bad-input counts: %s; outcomes: %s" % (TRIED, OUTCOMES))
    assert all(TRIED.values()), TRIED
