"""Enrollment against real swtpms: credential activation, the EK pin, the ledger records, re-enrollment."""
import os
import stat
import subprocess

import pytest

from gpufleet.attest import enroll
from gpufleet.attest.errors import EkCertError, EnrollmentError
from gpufleet.attest.tpm_public import parse_public

from tests.unit.gpufleet.attest.swtpm_support import enroll_node, ledger_store


def _enroll(store, node, tpm, ca, folder, activate_tpm=None, algorithm="ecc", **kwargs):
    ak_public = tpm.create_ak(folder, algorithm)
    activate_tpm = activate_tpm or tpm
    return enroll_node(store, node, tpm.ek_certificate(), ca.bundle, ak_public,
                              lambda blob: activate_tpm.activate(folder, blob), **kwargs)


@pytest.mark.parametrize("algorithm", ["rsa", "ecc"])
def test_new_node_is_enrolled_in_the_ledger(tmp_path, node_tpm, vendor_ca, algorithm):
    store = ledger_store(tmp_path / "enrolled")
    result = _enroll(store, "gpu-001", node_tpm, vendor_ca, str(tmp_path / "node"), algorithm=algorithm,
                     who="ops-alice")
    assert result["decision"] == enroll.ENROLL
    # read back through a new ledger connection: the record is committed, not held in memory
    saved = ledger_store(tmp_path / "enrolled").get("gpu-001")
    assert saved == result["record"]
    assert saved["ek_fingerprint"] == result["ek"]["fingerprint"]
    assert saved["enrolled_by"] == "ops-alice" and saved["reason"] == "first enrollment"
    assert saved["enrolled_at"] and saved["ak_pem"].startswith("-----BEGIN PUBLIC KEY-----")
    # the stored PEM is the AK tpm2-tools reports, and the name is the TPM's own name for it
    assert saved["ak_pem"] == (tmp_path / "node" / "ak.pem").read_text()
    assert bytes.fromhex(saved["ak_name"]) == (tmp_path / "node" / "ak.name").read_bytes()


def test_same_ek_keeps_the_enrolled_ak(tmp_path, node_tpm, vendor_ca):
    store = ledger_store(tmp_path)
    first = _enroll(store, "gpu-002", node_tpm, vendor_ca, str(tmp_path / "one"))["record"]
    again = _enroll(store, "gpu-002", node_tpm, vendor_ca, str(tmp_path / "two"))
    assert again["decision"] == enroll.KEEP
    assert again["record"] == first


def test_swapped_tpm_is_refused_after_enrollment(tmp_path, node_tpm, swapped_tpm, vendor_ca):
    store = ledger_store(tmp_path)
    first = _enroll(store, "gpu-003", node_tpm, vendor_ca, str(tmp_path / "one"))["record"]
    with pytest.raises(EnrollmentError) as info:
        _enroll(store, "gpu-003", swapped_tpm, vendor_ca, str(tmp_path / "two"))
    assert info.value.details["reason"] == "ek_changed"
    assert "--reenroll --reason" in info.value.msg
    assert store.get("gpu-003") == first
    assert store.history("gpu-003") == [first]


def test_reenrollment_replaces_the_ek_and_keeps_the_old_record(tmp_path, node_tpm, swapped_tpm, vendor_ca):
    store = ledger_store(tmp_path)
    first = _enroll(store, "gpu-009", node_tpm, vendor_ca, str(tmp_path / "one"))["record"]
    with pytest.raises(EnrollmentError, match="needs a reason"):
        _enroll(store, "gpu-009", swapped_tpm, vendor_ca, str(tmp_path / "two"), reenroll=True, who="bob")
    assert store.history("gpu-009") == [first]
    result = _enroll(store, "gpu-009", swapped_tpm, vendor_ca, str(tmp_path / "three"), reenroll=True,
                     who="bob", reason="TPM replaced, ticket 42")
    assert result["decision"] == enroll.REENROLL
    now = store.get("gpu-009")
    assert now["ek_fingerprint"] != first["ek_fingerprint"]
    assert (now["enrolled_by"], now["reason"]) == ("bob", "TPM replaced, ticket 42")
    old, new = store.history("gpu-009")
    assert new == now
    assert old["ak_pem"] == first["ak_pem"] and old["ek_fingerprint"] == first["ek_fingerprint"]
    assert old["replaced_by"] == now["id"] and old["replaced_at"]


def test_saving_over_an_enrollment_without_reenroll_is_refused(tmp_path):
    store = ledger_store(tmp_path)
    first = store.save("gpu-010", "PEM-A", "000b" + "aa" * 32, "ab" * 32, "t")
    with pytest.raises(EnrollmentError) as info:
        store.save("gpu-010", "PEM-B", "000b" + "bb" * 32, "cd" * 32, "t")
    assert info.value.details["reason"] == "already_enrolled"
    assert store.history("gpu-010") == [first]


def test_ek_certificate_of_another_ca_is_not_enrolled(tmp_path, foreign_tpm, vendor_ca):
    store = ledger_store(tmp_path)
    with pytest.raises(EkCertError):
        _enroll(store, "gpu-004", foreign_tpm, vendor_ca, str(tmp_path / "node"))
    assert store.get("gpu-004") is None


def test_ak_of_another_tpm_cannot_activate_the_credential(tmp_path, node_tpm, swapped_tpm, vendor_ca):
    # The node shows node_tpm's EK certificate but an AK made in swapped_tpm: the secret is
    # encrypted to node_tpm's EK, so swapped_tpm cannot return it.
    store = ledger_store(tmp_path)
    folder = str(tmp_path / "node")
    ak_public = swapped_tpm.create_ak(folder)
    with pytest.raises(EnrollmentError) as info:
        enroll_node(store, "gpu-005", node_tpm.ek_certificate(), vendor_ca.bundle, ak_public,
                           lambda blob: swapped_tpm.activate(folder, blob))
    assert info.value.details["reason"] == "activation_failed"
    assert store.get("gpu-005") is None


def test_wrong_secret_is_refused():
    with pytest.raises(EnrollmentError, match="did not return"):
        enroll.check_activated(b"a" * 32, b"b" * 32, "n1")
    with pytest.raises(EnrollmentError):
        enroll.check_activated(b"a" * 32, None, "n1")
    enroll.check_activated(b"a" * 32, b"a" * 32, "n1")


def test_makecredential_call_is_offline_and_binds_the_name():
    argv = enroll.makecredential_argv("ek.pem", "rsa", "000b" + "00" * 32, "s.bin", "c.out")
    assert argv[:3] == ["tpm2_makecredential", "-T", "none"]
    assert argv[argv.index("-n") + 1] == "000b" + "00" * 32
    assert argv[argv.index("-G") + 1] == "rsa"


def test_makecredential_failure_is_an_enrollment_error(node_tpm, vendor_ca):
    from gpufleet.attest.ek import verify_ek_certificate
    key = verify_ek_certificate(node_tpm.ek_certificate(), vendor_ca.bundle)["public_key"]

    def failing(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 3, b"", b"ERROR: boom")
    with pytest.raises(EnrollmentError, match="exited 3: ERROR: boom"):
        enroll.make_credential(key, "000b" + "11" * 32, run=failing)
    with pytest.raises(EnrollmentError, match="not a TPM name"):
        enroll.make_credential(key, "zz")


def test_ak_without_restricted_sign_attributes_is_refused(tmp_path, node_tpm, vendor_ca):
    folder = str(tmp_path / "node")
    ak_public = bytearray(node_tpm.create_ak(folder))
    # TPM2B size (2) + type (2) + nameAlg (2): objectAttributes start at offset 6; clear "restricted".
    attributes = int.from_bytes(ak_public[6:10], "big") & ~(1 << 16)
    ak_public[6:10] = attributes.to_bytes(4, "big")
    assert not parse_public(bytes(ak_public))["attributes"] & (1 << 16)
    store = ledger_store(tmp_path)
    with pytest.raises(EnrollmentError, match="lacks restricted"):
        enroll_node(store, "gpu-006", node_tpm.ek_certificate(), vendor_ca.bundle, bytes(ak_public),
                           lambda blob: node_tpm.activate(folder, blob))
    assert store.get("gpu-006") is None


@pytest.mark.parametrize("node", ["../etc/passwd", "", ".hidden", "a/b", None])
def test_unsafe_node_names_are_refused(tmp_path, node):
    with pytest.raises(EnrollmentError, match="is not usable"):
        ledger_store(tmp_path).get(node)
    with pytest.raises(EnrollmentError, match="is not usable"):
        enroll.ChallengeBook(str(tmp_path)).path(node)


def test_challenge_is_kept_0600_taken_once_and_expires(tmp_path):
    now = [1000.0]
    book = enroll.ChallengeBook(str(tmp_path / "challenges"), ttl_s=60, clock=lambda: now[0])
    pending = {"decision": enroll.ENROLL, "secret": b"s" * 32, "ak_pem": "PEM", "ak_name": "000b" + "aa" * 32,
               "ek": {"fingerprint": "ab" * 32}}
    path = book.put("gpu-007", pending)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    taken = book.take("gpu-007")
    assert taken["secret"] == b"s" * 32 and taken["ek"] == {"fingerprint": "ab" * 32}
    with pytest.raises(EnrollmentError) as info:
        book.take("gpu-007")
    assert info.value.details["reason"] == "no_challenge"
    book.put("gpu-007", pending)
    now[0] += 61
    with pytest.raises(EnrollmentError) as info:
        book.take("gpu-007")
    assert info.value.details["reason"] == "expired"


def test_truncated_ak_public_is_a_clear_error(tmp_path, node_tpm, vendor_ca):
    store = ledger_store(tmp_path)
    with pytest.raises(EnrollmentError, match="truncated|not one TPM2B_PUBLIC"):
        enroll_node(store, "gpu-008", node_tpm.ek_certificate(), vendor_ca.bundle, b"\x01\x18\x00\x01",
                           lambda blob: None)
