"""Enrollment against real swtpms: credential activation, the EK pin, the store file."""
import json
import os
import stat
import subprocess

import pytest

from gpufleet.attest import enroll
from gpufleet.attest.errors import EkCertError, EnrollmentError
from gpufleet.attest.tpm_public import parse_public


def _enroll(store, node, tpm, ca, folder, activate_tpm=None, algorithm="ecc"):
    ak_public = tpm.create_ak(folder, algorithm)
    activate_tpm = activate_tpm or tpm
    return enroll.enroll_node(store, node, tpm.ek_certificate(), ca.bundle, ak_public,
                              lambda blob: activate_tpm.activate(folder, blob))


@pytest.mark.parametrize("algorithm", ["rsa", "ecc"])
def test_new_node_is_enrolled_and_stored_0600(tmp_path, node_tpm, vendor_ca, algorithm):
    store = enroll.EnrollmentStore(str(tmp_path / "enrolled"))
    result = _enroll(store, "gpu-001", node_tpm, vendor_ca, str(tmp_path / "node"), algorithm=algorithm)
    assert result["decision"] == enroll.ENROLL
    path = tmp_path / "enrolled" / "gpu-001.json"
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["ek_fingerprint"] == result["ek"]["fingerprint"]
    assert saved["enrolled_at"] and saved["ak_pem"].startswith("-----BEGIN PUBLIC KEY-----")
    # the stored PEM is the AK tpm2-tools reports, and the name is the TPM's own name for it
    assert saved["ak_pem"] == (tmp_path / "node" / "ak.pem").read_text()
    assert bytes.fromhex(saved["ak_name"]) == (tmp_path / "node" / "ak.name").read_bytes()


def test_same_ek_keeps_the_enrolled_ak(tmp_path, node_tpm, vendor_ca):
    store = enroll.EnrollmentStore(str(tmp_path))
    first = _enroll(store, "gpu-002", node_tpm, vendor_ca, str(tmp_path / "one"))["record"]
    again = _enroll(store, "gpu-002", node_tpm, vendor_ca, str(tmp_path / "two"))
    assert again["decision"] == enroll.KEEP
    assert again["record"] == first


def test_swapped_tpm_is_refused_after_enrollment(tmp_path, node_tpm, swapped_tpm, vendor_ca):
    store = enroll.EnrollmentStore(str(tmp_path))
    first = _enroll(store, "gpu-003", node_tpm, vendor_ca, str(tmp_path / "one"))["record"]
    with pytest.raises(EnrollmentError) as info:
        _enroll(store, "gpu-003", swapped_tpm, vendor_ca, str(tmp_path / "two"))
    assert info.value.details["reason"] == "ek_changed"
    assert "rm %s" % store.path("gpu-003") in info.value.msg
    assert store.get("gpu-003") == first


def test_ek_certificate_of_another_ca_is_not_enrolled(tmp_path, foreign_tpm, vendor_ca):
    store = enroll.EnrollmentStore(str(tmp_path))
    with pytest.raises(EkCertError):
        _enroll(store, "gpu-004", foreign_tpm, vendor_ca, str(tmp_path / "node"))
    assert store.get("gpu-004") is None


def test_ak_of_another_tpm_cannot_activate_the_credential(tmp_path, node_tpm, swapped_tpm, vendor_ca):
    # The node shows node_tpm's EK certificate but an AK made in swapped_tpm: the secret is
    # encrypted to node_tpm's EK, so swapped_tpm cannot return it.
    store = enroll.EnrollmentStore(str(tmp_path))
    folder = str(tmp_path / "node")
    ak_public = swapped_tpm.create_ak(folder)
    with pytest.raises(EnrollmentError) as info:
        enroll.enroll_node(store, "gpu-005", node_tpm.ek_certificate(), vendor_ca.bundle, ak_public,
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
    store = enroll.EnrollmentStore(str(tmp_path))
    with pytest.raises(EnrollmentError, match="lacks restricted"):
        enroll.enroll_node(store, "gpu-006", node_tpm.ek_certificate(), vendor_ca.bundle, bytes(ak_public),
                           lambda blob: node_tpm.activate(folder, blob))
    assert store.get("gpu-006") is None


@pytest.mark.parametrize("node", ["../etc/passwd", "", ".hidden", "a/b", None])
def test_unsafe_node_names_are_refused(tmp_path, node):
    with pytest.raises(EnrollmentError, match="cannot name an enrollment file"):
        enroll.EnrollmentStore(str(tmp_path)).path(node)


def test_damaged_enrollment_refuses_the_node(tmp_path):
    (tmp_path / "gpu-007.json").write_text("{not json")
    with pytest.raises(EnrollmentError, match="re-enroll"):
        enroll.EnrollmentStore(str(tmp_path)).decide("gpu-007", "ab" * 32)


def test_truncated_ak_public_is_a_clear_error(tmp_path, node_tpm, vendor_ca):
    store = enroll.EnrollmentStore(str(tmp_path))
    with pytest.raises(EnrollmentError, match="truncated|not one TPM2B_PUBLIC"):
        enroll.enroll_node(store, "gpu-008", node_tpm.ek_certificate(), vendor_ca.bundle, b"\x01\x18\x00\x01",
                           lambda blob: None)
