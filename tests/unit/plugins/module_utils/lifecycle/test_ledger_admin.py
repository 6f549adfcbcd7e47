"""copy (SQLite -> SQLite or PostgreSQL) without loss, and the consistency check."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import (
    decisions, enrollments, gang, ledger_admin, lease, rollouts)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

from .conftest import FakeClock, walk

TO_READY = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]


def _fleet(path):
    """A small fleet's history in an SQLite file: every table holds rows."""
    book = Ledger(path, clock=FakeClock())
    for name in ("n1", "n2", "n3"):
        walk(book, name, TO_READY)
    book.transition("n3", "parked", "t", "idle")
    gang.plan(book, "g1", "lab", 2, 600)
    gang.substitute(book, "g1", "n1", "gate failed: nvlink", "t", spare="n3")
    decisions.record_decision(book, "ctl-a", "lab", "wake", ["n3"], "gang g1 short",
                              demand={"pending": 16}, supply={"parked": 1})
    decisions.record_demand(book, "lab", 1800000000, 8, 16, 8)
    decisions.record_node_sample(book, 1800000000.125, "n1", "idle+drain", "gpufleet: held")
    lease.acquire_lease(book, "capacity", "ctl-a", 30, 1800000000.0)
    decisions.replace_tracks(book, [dict(node="n1", source="slurm", kind="slurm_drain",
                                         reason="NHC: GPU lost", first_seen=1800000000.0,
                                         seen=(1800000000.0,), run_start=1800000000.0)])
    rollouts.set_canaries(book, rollouts.start_rollout(book, "lab", "v1", "v2", "ops", "new image"), ["n1"])
    enrollments.record(book, "n1", "ab" * 32, "PEM-1", "000b" + "01" * 32, "ops")
    enrollments.record(book, "n1", "cd" * 32, "PEM-2", "000b" + "02" * 32, "ops", reason="TPM swapped",
                       reenroll=True)
    book.close()
    return path


def test_copy_moves_every_record_and_compares_checksums(ledger_url, tmp_path):
    src = _fleet(str(tmp_path / "src.sqlite"))
    result = ledger_admin.copy(src, ledger_url)
    assert all(t["rows"] > 0 for t in result["tables"].values()), result["tables"]
    source, target = Ledger(src), Ledger(ledger_url, clock=FakeClock(1800000500.0))
    assert ledger_admin.table_summary(target) == ledger_admin.table_summary(source)
    assert target.history() == source.history()
    assert ledger_admin.check(target) == []
    # ids continue after the copied ones (PostgreSQL's identity sequence was moved)
    new_id = decisions.record_decision(target, "ctl-b", "lab", "park", ["n2"], "idle")
    assert new_id == max(d["id"] for d in decisions.decisions(source)) + 1
    target.transition("n2", "hot", "t", "hold")
    assert target.history("n2")[-1]["seq"] == 7
    assert enrollments.history(target, "n1") == enrollments.history(source, "n1")
    assert enrollments.current(target, "n1")["ak_pem"] == "PEM-2"


def test_copy_refuses_a_non_empty_destination_unless_forced(ledger_url, tmp_path):
    src = _fleet(str(tmp_path / "src.sqlite"))
    Ledger(ledger_url).transition("other", "enrolled", "t", "new")
    with pytest.raises(LedgerError) as err:
        ledger_admin.copy(src, ledger_url)
    assert "not empty" in err.value.msg and err.value.details["rows"]["nodes"] == 1
    assert [n["node"] for n in Ledger(ledger_url).nodes()] == ["other"]
    ledger_admin.copy(src, ledger_url, force=True)
    assert [n["node"] for n in Ledger(ledger_url).nodes()] == ["n1", "n2", "n3"]


def test_check_reports_gaps_mismatches_and_dangling_members(ledger):
    walk(ledger, "n1", TO_READY[:3])
    walk(ledger, "n2", TO_READY[:2])
    walk(ledger, "n3", TO_READY[:1])
    with ledger.transaction() as cur:
        cur.execute("DELETE FROM transitions WHERE node = 'n1' AND seq = 2")
        cur.execute("UPDATE nodes SET state = 'ready' WHERE node = 'n2'")
        cur.execute("INSERT INTO gang_members (gang_id, node, source, status) "
                    "VALUES ('ghost', 'nx', 'pool', 'member')")
    problems = ledger_admin.check(ledger)
    text = "\n".join("%s: %s" % (p["object"], p["problem"]) for p in problems)
    assert "node n1: transition sequence is [1, 3], expected 1..2" in text
    assert "node n2: current state ready (seq 2) differs from its last transition inspected" in text
    assert "gang ghost: member nx is not a node in the ledger" in text
    assert "gang ghost: member rows exist but the gang does not" in text
    assert "n3" not in text


def test_check_of_a_sound_ledger_is_empty(ledger):
    walk(ledger, "n1", TO_READY)
    assert ledger_admin.check(ledger) == []


def test_check_reports_a_broken_enrollment_chain(ledger):
    enrollments.record(ledger, "n1", "ab" * 32, "PEM-1", "000b" + "01" * 32, "ops")
    enrollments.record(ledger, "n1", "cd" * 32, "PEM-2", "000b" + "02" * 32, "ops", reason="swap", reenroll=True)
    enrollments.record(ledger, "n2", "ef" * 32, "PEM-3", "000b" + "03" * 32, "ops")
    assert ledger_admin.check(ledger) == []
    with ledger.transaction() as cur:
        cur.execute("DELETE FROM enrollments WHERE node = 'n1' AND replaced_at IS NULL")
    text = "\n".join("%s: %s" % (p["object"], p["problem"]) for p in ledger_admin.check(ledger))
    assert "enrollment 1 of node n1: was replaced, but its successor 2 is not a later enrollment" in text
    assert "node n1: has enrollments but no current one" in text
    assert "n2" not in text
