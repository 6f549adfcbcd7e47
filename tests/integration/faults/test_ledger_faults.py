"""Ledger faults without the lab (docs/reliability.md, "Node and controller faults", "Ledger recovery").

- disk full: the controller process may not grow any file (RLIMIT_FSIZE, what a full disk
  answers: EFBIG/ENOSPC) while it records transitions: a LedgerError naming the ledger and
  the cause, and no partial record (the ledger checks clean, the failed transition is absent);
- a corrupted ledger file (its header or a page overwritten): a LedgerError naming the file
  and pointing at the recovery procedure, never a traceback, and the procedure works.
"""
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_admin import check

pytestmark = [pytest.mark.integration]

BRINGUP = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]
# Records transitions of many nodes with the file size limit at what the ledger holds now;
# prints what it managed and the error it got, as JSON.
WRITER = r"""
import json, resource, signal, sys
import gpufleet
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
path, limit = sys.argv[1], int(sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full disk answers EFBIG/ENOSPC, it does not kill
book = Ledger(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
done = []
try:
    for index in range(100000):
        node = "n%05d" % index
        book.transition(node, "enrolled", "test", "disk full test " + "x" * 200)
        done.append(node)
    print(json.dumps({"done": done, "error": None}))
except GpufleetError as exc:
    print(json.dumps({"done": done, "error": str(exc), "type": type(exc).__name__}))
"""


def _ledger(tmp_path, nodes=3):
    path = str(tmp_path / "ledger.sqlite")
    book = Ledger(path)
    for index in range(nodes):
        for state in BRINGUP:
            book.transition("node%d" % index, state, "test", "set up " + state)
    book.close()
    return path


def _problems(path):
    book = Ledger(path)
    try:
        return check(book)
    finally:
        book.close()


def test_disk_full_is_a_clear_error_and_leaves_no_partial_record(tmp_path):
    path = _ledger(tmp_path)
    limit = max(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) + 8192
    proc = subprocess.run([sys.executable, "-c", WRITER, path, str(limit)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["type"] == "LedgerError", result
    assert path in result["error"] and "full" in result["error"].lower(), result["error"]
    assert "free" in result["error"].lower(), result["error"]  # the fix: free space, then re-run
    assert _problems(path) == []
    recorded = [r[0] for r in sqlite3.connect(path).execute("SELECT node FROM nodes WHERE node LIKE 'n0%' ORDER BY node")]
    assert recorded == result["done"]  # every reported success is there, the failed one is not
    history = sqlite3.connect(path).execute("SELECT count(*) FROM transitions WHERE node LIKE 'n0%'").fetchone()[0]
    assert history == len(result["done"])


def _corrupt(path, offset, length=4096):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(b"\xde\xad\xbe\xef" * (length // 4))


def _checkpoint(path):
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _read_everything(path):
    """Open, read and check the ledger; a LedgerError or the check's problems, as text."""
    try:
        book = Ledger(path)
        try:
            book.history()
            return " ".join("%s %s" % (p["object"], p["problem"]) for p in check(book))
        finally:
            book.close()
    except LedgerError as exc:
        return "LedgerError: " + str(exc)


@pytest.mark.parametrize("where", ["header", "page"])
def test_corrupted_ledger_is_a_clear_error_naming_the_file_and_the_recovery(tmp_path, where):
    path = _ledger(tmp_path, nodes=60)
    _checkpoint(path)
    _corrupt(path, 0 if where == "header" else os.path.getsize(path) // 2)
    message = _read_everything(path)
    assert path in message and "docs/reliability.md" in message and "Ledger recovery" in message, message


def test_the_documented_recovery_restores_a_ledger_that_checks_clean(tmp_path):
    """docs/reliability.md, "Ledger recovery": keep a backup (sqlite3 .backup), and when the
    file is damaged move it aside, restore the backup, check it, re-run enroll."""
    path = _ledger(tmp_path, nodes=60)
    backup = str(tmp_path / "ledger-backup.sqlite")
    subprocess.run(["sqlite3", path, ".backup '%s'" % backup], check=True)
    _checkpoint(path)
    _corrupt(path, os.path.getsize(path) // 2)
    assert "damaged" in _read_everything(path) or "LedgerError" in _read_everything(path)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.rename(path + suffix, path + ".damaged" + suffix)
    subprocess.run(["cp", backup, path], check=True)
    assert _read_everything(path) == ""
    book = Ledger(path)
    try:
        assert len(book.nodes()) == 60 and book.get("node59")["state"] == "ready"
    finally:
        book.close()
