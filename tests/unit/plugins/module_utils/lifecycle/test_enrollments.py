"""Attestation enrollments in the ledger: one current per node, explicit re-enrollment, nothing lost."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import enrollments
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

EK_A, EK_B = "ab" * 32, "cd" * 32
NAME_A, NAME_B = "000b" + "01" * 32, "000b" + "02" * 32


def test_first_enrollment_is_current(ledger, clock):
    assert enrollments.current(ledger, "n1") is None
    record = enrollments.record(ledger, "n1", EK_A, "PEM-A", NAME_A, "alice")
    assert record == dict(id=record["id"], node="n1", ek_fingerprint=EK_A, ak_pem="PEM-A", ak_name=NAME_A,
                          enrolled_at=clock.now, enrolled_by="alice", reason="first enrollment",
                          replaced_at=None, replaced_by=None)
    assert enrollments.current(ledger, "n1") == record
    assert enrollments.history(ledger) == [record]


def test_a_second_enrollment_without_reenroll_is_refused(ledger):
    first = enrollments.record(ledger, "n1", EK_A, "PEM-A", NAME_A, "alice")
    with pytest.raises(enrollments.EnrollmentConflict) as info:
        enrollments.record(ledger, "n1", EK_B, "PEM-B", NAME_B, "bob")
    assert info.value.details["enrolled_ek_fingerprint"] == EK_A
    assert enrollments.history(ledger, "n1") == [first]


def test_reenrollment_needs_a_reason_and_keeps_the_replaced_record(ledger, clock):
    first = enrollments.record(ledger, "n1", EK_A, "PEM-A", NAME_A, "alice")
    with pytest.raises(LedgerError, match="needs a reason") as info:
        enrollments.record(ledger, "n1", EK_B, "PEM-B", NAME_B, "bob", reason="  ", reenroll=True)
    assert info.value.details["field"] == "reason"
    clock.advance(60)
    second = enrollments.record(ledger, "n1", EK_B, "PEM-B", NAME_B, "bob", reason="board replaced", reenroll=True)
    assert (second["ek_fingerprint"], second["enrolled_by"], second["reason"]) == (EK_B, "bob", "board replaced")
    old, new = enrollments.history(ledger, "n1")
    assert new == second == enrollments.current(ledger, "n1")
    assert dict(old, replaced_at=None, replaced_by=None) == first
    assert (old["replaced_at"], old["replaced_by"]) == (clock.now, second["id"])


def test_enrollments_of_other_nodes_are_independent(ledger):
    enrollments.record(ledger, "n1", EK_A, "PEM-A", NAME_A, "alice")
    enrollments.record(ledger, "n2", EK_B, "PEM-B", NAME_B, "alice")
    assert [r["node"] for r in enrollments.history(ledger)] == ["n1", "n2"]
    assert enrollments.current(ledger, "n2")["ak_pem"] == "PEM-B"


@pytest.mark.parametrize("field", ["ek_fingerprint", "ak_pem", "ak_name", "enrolled_by"])
def test_a_record_without_a_field_is_refused(ledger, field):
    values = dict(ek_fingerprint=EK_A, ak_pem="PEM-A", ak_name=NAME_A, enrolled_by="alice")
    values[field] = ""
    with pytest.raises(LedgerError, match=field):
        enrollments.record(ledger, "n1", values["ek_fingerprint"], values["ak_pem"], values["ak_name"],
                           values["enrolled_by"])
    assert enrollments.history(ledger) == []


def test_one_current_enrollment_per_node_is_enforced_by_the_schema(ledger):
    enrollments.record(ledger, "n1", EK_A, "PEM-A", NAME_A, "alice")
    with pytest.raises(LedgerError):
        with ledger.transaction() as cur:
            cur.execute("INSERT INTO enrollments (node, ek_fingerprint, ak_pem, ak_name, enrolled_at, enrolled_by, "
                        "reason) VALUES ('n1', ?, 'PEM-B', ?, 1, 'x', 'y')", (EK_B, NAME_B))
    assert len(enrollments.history(ledger, "n1")) == 1


def test_check_mode_writes_no_enrollment(ledger_url, clock):
    Ledger(ledger_url).close()
    dry = Ledger(ledger_url, dry_run=True, clock=clock)
    assert enrollments.record(dry, "n1", EK_A, "PEM-A", NAME_A, "alice")["ak_pem"] == "PEM-A"
    dry.close()
    assert enrollments.history(Ledger(ledger_url)) == []
