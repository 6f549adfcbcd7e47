"""Signed PCR reference files: signed with the image key, loaded fail-closed."""
import json

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
