"""Check mode (dry_run) writes nothing at all, on either backend."""
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions, gang, lease
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import GangError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

from .conftest import walk


def _tables(location):
    """Tables in the PostgreSQL schema of ``location`` (psycopg directly, not the ledger)."""
    import psycopg

    with psycopg.connect(location, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]


def _nothing_stored(location, before_files):
    if location.startswith("postgresql://"):
        return _tables(location) == []
    return sorted(os.listdir(before_files)) == []


def test_check_mode_on_a_missing_ledger_creates_no_directory_file_or_schema(ledger_url, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    location = ledger_url if ledger_url.startswith("postgresql://") else str(scratch / "sub" / "l.sqlite")
    book = Ledger(location, dry_run=True)
    assert book.nodes() == [] and book.history() == [] and book.get("n1") is None
    result = book.transition("n1", "enrolled", "t", "new", sku="lab")
    assert result["changed"] is True and result["after"] == "enrolled"
    assert book.get("n1") is None  # rolled back
    decisions.record_decision(book, "c1", "lab", "wake", ["n1"], "demand")
    assert decisions.decisions(book) == [] and lease.acquire_lease(book, "c", "me", 30, 1.0)[0]
    with pytest.raises(GangError) as err:
        gang.plan(book, "g1", "lab", 1, 60)
    assert "only 0 are free" in err.value.msg
    book.close()
    assert _nothing_stored(location, scratch)


def test_check_mode_on_an_existing_ledger_changes_nothing(ledger, ledger_url, clock):
    walk(ledger, "n1", ["enrolled"])
    dry = Ledger(ledger_url, clock=clock, dry_run=True)
    assert dry.transition("n1", "inspected", "t", "r")["changed"] is True
    planned, changed = gang.plan(dry, "g1", "lab", 1, 60)
    assert changed and planned["provision"] == ["n1"]
    assert dry.get("n1")["state"] == "enrolled" and dry.get("n1")["gang_id"] is None
    assert ledger.history("n1")[-1]["to_state"] == "enrolled" and len(ledger.history()) == 1
