"""A version 1 SQLite ledger (as shipped before PostgreSQL) is migrated forward, losing nothing."""
import sqlite3

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang, ledger_admin
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import SCHEMA_VERSION, Ledger

# The schema of collection 0.1.0 (ledger.py, SCHEMA_VERSION = 1), verbatim.
V1 = """
CREATE TABLE nodes (node TEXT PRIMARY KEY, state TEXT NOT NULL, seq INTEGER NOT NULL,
    sku TEXT, image_version TEXT, gate_report_id TEXT, reason TEXT, gang_id TEXT,
    updated_at REAL NOT NULL);
CREATE TABLE transitions (id INTEGER PRIMARY KEY AUTOINCREMENT, node TEXT NOT NULL,
    seq INTEGER NOT NULL, from_state TEXT, to_state TEXT NOT NULL, at REAL NOT NULL,
    who TEXT NOT NULL, why TEXT NOT NULL, image_version TEXT, gate_report_id TEXT,
    run_id TEXT, gang_id TEXT, UNIQUE (node, seq));
CREATE TABLE gangs (gang_id TEXT PRIMARY KEY, sku TEXT NOT NULL, size INTEGER NOT NULL,
    deadline REAL NOT NULL, status TEXT NOT NULL, reason TEXT, created_at REAL NOT NULL,
    updated_at REAL NOT NULL);
CREATE TABLE gang_members (gang_id TEXT NOT NULL, node TEXT NOT NULL, source TEXT NOT NULL,
    PRIMARY KEY (gang_id, node));
CREATE INDEX transitions_node ON transitions (node, seq);
INSERT INTO nodes VALUES ('n1', 'ready', 2, 'lab', 'v1', NULL, 'gate passed', 'g1', 1800000010.5);
INSERT INTO transitions VALUES (1, 'n1', 1, NULL, 'enrolled', 1800000000.25, 'ops', 'new', 'v1', NULL, 'r1', NULL);
INSERT INTO transitions VALUES (2, 'n1', 2, 'enrolled', 'ready', 1800000010.5, 'ops', 'gate passed', 'v1', NULL, 'r1', NULL);
INSERT INTO gangs VALUES ('g1', 'lab', 1, 1800003600.0, 'planned', NULL, 1800000000.0, 1800000000.0);
INSERT INTO gang_members VALUES ('g1', 'n1', 'pool');
PRAGMA user_version = 1;
"""


def make_v1(path):
    conn = sqlite3.connect(path)
    conn.executescript(V1)
    conn.close()
    return path


def test_a_version_1_ledger_is_migrated_with_its_records(tmp_path):
    path = make_v1(str(tmp_path / "v1.sqlite"))
    result = ledger_admin.migrate(path)
    assert result == {"ledger": path, "before": 1, "after": SCHEMA_VERSION, "changed": True}
    book = Ledger(path, clock=lambda: 1800000100.0)
    assert [h["to_state"] for h in book.history("n1")] == ["enrolled", "ready"]
    described = gang.status(book, "g1")
    assert described["pool"] == ["n1"] and described["substitutions"] == []
    assert ledger_admin.check(book) == []
    assert ledger_admin.migrate(path)["changed"] is False


def test_check_mode_reads_a_version_1_ledger_and_leaves_it_at_version_1(tmp_path):
    path = make_v1(str(tmp_path / "v1.sqlite"))
    book = Ledger(path, dry_run=True)
    assert book.get("n1")["state"] == "ready"
    assert book.transition("n1", "hot", "t", "hold")["after"] == "hot"
    book.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "ledger_meta" not in tables and "decisions" not in tables
    assert conn.execute("SELECT state FROM nodes").fetchone()[0] == "ready"


def test_a_version_3_ledger_gains_the_enrollments_table_and_keeps_its_records(ledger_url, monkeypatch):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import (
        enrollments, ledger as ledger_module, ledger_schema, ledger_sqlite, rollouts)

    # A ledger as the collection made it at schema version 3 (the migrations up to 3, stamped 3).
    with monkeypatch.context() as old:
        old.setattr(ledger_schema, "_MIGRATIONS", tuple(m for m in ledger_schema._MIGRATIONS if m[0] <= 3))
        old.setattr(ledger_module, "SCHEMA_VERSION", 3)
        old.setattr(ledger_sqlite, "SCHEMA_VERSION", 3)
        book = Ledger(ledger_url, clock=lambda: 1800000000.0)
        book.transition("n1", "enrolled", "ops", "new")
        rollouts.start_rollout(book, "lab", "v1", "v2", "ops", "new image")
        with book.transaction(write=False) as cur:
            assert book.schema_version(cur) == 3
            assert not book.backend.table_exists(cur, "enrollments")
        book.close()
    result = ledger_admin.migrate(ledger_url)
    assert (result["before"], result["after"], result["changed"]) == (3, SCHEMA_VERSION, True)
    book = Ledger(ledger_url, clock=lambda: 1800000100.0)
    assert [h["to_state"] for h in book.history("n1")] == ["enrolled"]
    assert rollouts.rollouts(book)[0]["to_version"] == "v2"
    enrollments.record(book, "n1", "ab" * 32, "PEM", "000b" + "01" * 32, "ops")
    assert enrollments.current(book, "n1")["ak_pem"] == "PEM"
    assert ledger_admin.check(book) == []
