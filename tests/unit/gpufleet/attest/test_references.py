"""Signed PCR reference files: signed with the image key, loaded fail-closed."""
import json
import os

import pytest

from gpufleet.attest import references
from gpufleet.attest.errors import PcrReferenceError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing

PCRS = {"sha256": {"0": "11" * 32, "7": "22" * 32}}
ENTRIES = [{"image_version": "2026.05.1", "firmware_version": "1.4.2", "pcrs": PCRS},
           {"image_version": "2026.05.1", "firmware_version": "1.5.0", "pcrs": {"sha256": {"0": "33" * 32}}}]


@pytest.fixture(params=signing.ALGORITHMS)
def signed(request, tmp_path):
    key = signing.generate_key(request.param)
    data, signature = references.build_references(ENTRIES, key)
    path = tmp_path / "pcr-references.json"
    path.write_bytes(data)
    (tmp_path / "pcr-references.json.sig").write_bytes(signature)
    return {"path": str(path), "key": key, "pem": signing.public_pem(key.public_key())}


def test_signed_file_gives_the_entry_of_the_versions(signed):
    assert references.load_references(signed["path"], signed["pem"], "2026.05.1", "1.4.2") == PCRS
    assert references.load_references(signed["path"], signed["pem"], "2026.05.1", "1.5.0") == ENTRIES[1]["pcrs"]


def test_unknown_version_pair_is_refused(signed):
    with pytest.raises(PcrReferenceError, match="no entry for image 2026.05.1 with firmware 9.9"):
        references.load_references(signed["path"], signed["pem"], "2026.05.1", "9.9")


def test_altered_file_is_refused(signed):
    with open(signed["path"], "rb") as handle:
        data = handle.read()
    with open(signed["path"], "wb") as handle:
        handle.write(data.replace(b"11" * 32, b"44" * 32))
    with pytest.raises(PcrReferenceError, match="does not verify"):
        references.load_references(signed["path"], signed["pem"], "2026.05.1", "1.4.2")


def test_file_signed_by_another_key_is_refused(signed):
    other = signing.public_pem(signing.generate_key("ed25519").public_key())
    with pytest.raises(PcrReferenceError, match="not by the trusted image key"):
        references.load_references(signed["path"], other, "2026.05.1", "1.4.2")


def test_unsigned_file_is_refused(signed, tmp_path):
    (tmp_path / "pcr-references.json.sig").unlink()
    with pytest.raises(PcrReferenceError, match="unsigned"):
        references.load_references(signed["path"], signed["pem"], "2026.05.1", "1.4.2")


def test_bad_public_key_is_a_clear_error(signed):
    with pytest.raises(PcrReferenceError, match="Cannot load the public key"):
        references.load_references(signed["path"], b"not a key", "2026.05.1", "1.4.2")


@pytest.mark.parametrize("entry, field", [
    ({"image_version": "1", "pcrs": PCRS}, "firmware_version"),
    ({"image_version": "1", "firmware_version": "2", "pcrs": {"md5": {"0": "00"}}}, "pcrs.md5"),
    ({"image_version": "1", "firmware_version": "2", "pcrs": {"sha256": {"24": "00" * 32}}}, "not a PCR index"),
    ({"image_version": "1", "firmware_version": "2", "pcrs": {"sha256": {"0": "AB" * 32}}}, "pcrs.sha256.0"),
    ({"image_version": "1", "firmware_version": "2", "pcrs": {"sha256": {"0": "00" * 31}}}, "pcrs.sha256.0"),
])
def test_malformed_entries_name_the_field(entry, field):
    data = json.dumps({"schema": references.SCHEMA, "signer": {}, "references": [entry]}).encode()
    with pytest.raises(PcrReferenceError, match=field):
        references.parse_references(data, "refs.json")


def test_duplicate_entry_is_refused():
    data = json.dumps({"schema": references.SCHEMA, "references": [ENTRIES[0], ENTRIES[0]]}).encode()
    with pytest.raises(PcrReferenceError, match="twice"):
        references.parse_references(data, "refs.json")


def test_image_manifest_is_not_a_reference_file():
    with pytest.raises(PcrReferenceError, match="field schema"):
        references.parse_references(b'{"schema": "gpufleet.image-manifest/v1"}', "manifest.json")


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tpm2_pcrread")


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_pcrread_output_gives_lowercase_values_per_bank():
    pcrs = references.parse_pcrread(_fixture("5.4-sha256-0-7.txt"), "pcrs.txt")
    assert sorted(pcrs) == ["sha256"] and sorted(pcrs["sha256"], key=int) == [str(i) for i in range(8)]
    assert pcrs["sha256"]["4"] == "c05ddae9b2bcc23fbba457c2323c2dfb9075f170de2e0ac49d7da63546bc6d35"
    assert pcrs["sha256"]["0"] == "00" * 32


def test_a_bank_the_tpm_does_not_keep_is_left_out():
    # swtpm made with active_pcr_banks = sha256 prints an empty sha1 bank
    assert sorted(references.parse_pcrread(_fixture("5.4-sha1-sha256-0-1.txt"), "pcrs.txt")["sha256"]) == ["0", "1"]


@pytest.mark.parametrize("text, match", [
    ("", "holds no PCR values"),
    ("  sha1:\n", "holds no PCR values"),
    ("    0 : 0x" + "00" * 32 + "\n", "line 1 is not tpm2_pcrread output"),
    ("  sha256:\n    0 : 0x" + "00" * 32 + "\nERROR: Esys_PCR_Read\n", "line 3 is not tpm2_pcrread output"),
    ("  sha256:\n    0 : 0x" + "00" * 31 + "\n", "must be 64 lowercase hex digits"),
    ("  sha256:\n    24 : 0x" + "00" * 32 + "\n", "is not a PCR index"),
])
def test_anything_but_pcrread_output_is_refused(text, match):
    with pytest.raises(PcrReferenceError, match=match):
        references.parse_pcrread(text, "pcrs.txt")


def test_merge_adds_an_entry_and_refuses_to_overwrite_one_unless_told():
    new = {"image_version": "2026.06.1", "firmware_version": "1.4.2", "pcrs": PCRS}
    merged = references.merge_entry(ENTRIES, new)
    assert merged[-1] == new and merged[:2] == ENTRIES
    changed = dict(ENTRIES[0], pcrs={"sha256": {"0": "55" * 32}})
    with pytest.raises(PcrReferenceError, match="already has an entry for image 2026.05.1 with firmware 1.4.2"):
        references.merge_entry(ENTRIES, changed)
    assert references.merge_entry(ENTRIES, changed, replace=True) == [changed, ENTRIES[1]]


def test_read_verified_gives_the_whole_document(signed):
    assert references.read_verified(signed["path"], signed["pem"])["references"] == ENTRIES
