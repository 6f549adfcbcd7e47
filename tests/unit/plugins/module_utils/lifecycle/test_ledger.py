import multiprocessing
import os
import sqlite3

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import (
    IllegalTransition, LedgerError)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import SCHEMA_VERSION, Ledger

from .conftest import walk

BRINGUP = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]


def test_transition_records_who_when_why_image_and_gate_report(ledger, clock):
    walk(ledger, "n1", BRINGUP[:-1])
    clock.advance(5)
    result = ledger.transition("n1", "ready", "ops@ctl", "gate passed", image_version="2026.06.2",
                               gate_report_id="gate-n1-001", run_id="run-7")
    assert result == {"node": "n1", "before": "validating", "after": "ready", "changed": True,
                      "skipped_past": False}
    last = ledger.history("n1")[-1]
    assert last["who"] == "ops@ctl" and last["why"] == "gate passed"
    assert last["image_version"] == "2026.06.2" and last["gate_report_id"] == "gate-n1-001"
    assert last["run_id"] == "run-7" and last["from_state"] == "validating"
    assert last["at"].endswith("Z") and last["seq"] == 6
    assert ledger.get("n1")["state"] == "ready"


def test_same_state_is_a_noop_without_a_duplicate_record(ledger):
    walk(ledger, "n1", BRINGUP[:3])
    again = ledger.transition("n1", "imaging", "t", "re-run")
    assert again["changed"] is False and again["after"] == "imaging"
    assert [h["to_state"] for h in ledger.history("n1")] == BRINGUP[:3]


def test_skip_if_past_leaves_a_node_further_along_alone(ledger):
    walk(ledger, "n1", BRINGUP[:4])
    result = ledger.transition("n1", "imaging", "t", "re-run", skip_if_past=True)
    assert result["skipped_past"] is True and result["after"] == "configuring"
    assert len(ledger.history("n1")) == 4


def test_illegal_transition_is_refused_and_nothing_is_written(ledger):
    walk(ledger, "n1", BRINGUP[:2])
    with pytest.raises(IllegalTransition):
        ledger.transition("n1", "joined", "t", "skip the gate")
    assert ledger.get("n1")["state"] == "inspected" and len(ledger.history("n1")) == 2


def test_unknown_node_must_be_enrolled_first(ledger):
    with pytest.raises(IllegalTransition) as err:
        ledger.transition("ghost", "imaging", "t", "why")
    assert "Enroll it first" in err.value.msg


def test_reason_is_required(ledger):
    with pytest.raises(LedgerError):
        ledger.transition("n1", "enrolled", "t", "")


def test_metadata_is_carried_forward(ledger):
    ledger.transition("n1", "enrolled", "t", "enroll", sku="h100", image_version="v1")
    ledger.transition("n1", "inspected", "t", "inspect")
    record = ledger.get("n1")
    assert record["sku"] == "h100" and record["image_version"] == "v1"
    assert record["reason"] == "inspect"


def test_sqlite_ledger_is_wal_and_stamped(tmp_path):
    path = str(tmp_path / "wal.sqlite")
    Ledger(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_schema_version_is_recorded(ledger):
    with ledger.transaction(write=False) as cur:
        assert ledger.schema_version(cur) == SCHEMA_VERSION == 4


def test_newer_schema_is_refused(ledger, ledger_url):
    with ledger.transaction() as cur:
        cur.execute("UPDATE ledger_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(LedgerError) as err:
        Ledger(ledger_url)
    assert "newer" in err.value.msg


def test_unwritable_location_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LedgerError) as err:
        Ledger(str(blocker / "ledger.sqlite"))
    assert "Cannot open the lifecycle ledger" in err.value.msg


def test_a_failed_transaction_rolls_back_every_write(ledger):
    walk(ledger, "n1", BRINGUP[:1])
    with pytest.raises(IllegalTransition):
        with ledger.transaction() as cur:
            ledger.apply(cur, "n1", "inspected", "t", "ok")
            ledger.apply(cur, "n1", "joined", "t", "illegal")
    assert ledger.get("n1")["state"] == "enrolled" and len(ledger.history()) == 1


def _writer(location, node):
    book = Ledger(location)
    for target in BRINGUP:
        book.transition(node, target, "proc", "step")
    book.close()


def test_concurrent_writers_from_separate_processes_lose_nothing(ledger_url):
    Ledger(ledger_url).close()
    procs = [multiprocessing.Process(target=_writer, args=(ledger_url, "n%d" % i)) for i in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    book = Ledger(ledger_url)
    assert len(book.history()) == 4 * len(BRINGUP)
    assert {n["state"] for n in book.nodes()} == {"ready"}


def _killed_midway(location):
    book = Ledger(location)
    for target in BRINGUP[:4]:
        book.transition("n1", target, "proc", "step")
    with book.transaction() as cur:
        book.apply(cur, "n1", "validating", "proc", "step")
        os._exit(9)  # the controller dies inside the transaction, before COMMIT


def test_a_controller_killed_mid_transaction_rerun_converges(ledger_url):
    proc = multiprocessing.Process(target=_killed_midway, args=(ledger_url,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 9
    book = Ledger(ledger_url)
    assert book.get("n1")["state"] == "configuring"  # the uncommitted step is gone, whole
    for target in BRINGUP:  # the re-run asks for every step again
        book.transition("n1", target, "rerun", "step", skip_if_past=True)
    seqs = [h["seq"] for h in book.history("n1")]
    assert [h["to_state"] for h in book.history("n1")] == BRINGUP
    assert seqs == list(range(1, len(BRINGUP) + 1))


def test_a_database_error_is_a_ledger_error_and_rolls_back(ledger):
    walk(ledger, "n1", BRINGUP[:1])
    with pytest.raises(LedgerError) as err:
        with ledger.transaction() as cur:
            ledger.apply(cur, "n1", "inspected", "t", "ok")
            cur.execute("INSERT INTO transitions (node, seq, to_state, at, who, why) "
                        "VALUES ('n1', 2, 'imaging', 0, 't', 'duplicate seq')")
    assert "Nothing of this change was recorded" in err.value.msg
    assert ledger.get("n1")["state"] == "enrolled" and len(ledger.history("n1")) == 1
