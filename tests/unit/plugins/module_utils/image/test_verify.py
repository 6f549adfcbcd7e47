import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import VerificationError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image
from tests.unit.plugins.module_utils.image.image_factory import RELEASE, make_image, public_pem


@pytest.mark.parametrize("algorithm", ["ed25519", "ecdsa-p256"])
def test_verifies_a_signed_image_and_returns_attestation_values(tmp_path, algorithm):
    manifest, key = make_image(tmp_path, algorithm=algorithm)
    summary = verify_image(manifest, public_pem(key), expected_version="lab")
    assert summary["build_id"] == RELEASE["BUILD_ID"]
    assert summary["release"]["PINS_SHA256"] == RELEASE["PINS_SHA256"]
    assert summary["key_id"] == signing.key_id(key.public_key())
    assert summary["artifact"].endswith("lab.rootfs.tar.gz")


def _tamper_artifact(path, manifest):
    with open(os.path.join(os.path.dirname(manifest), "lab.rootfs.tar.gz"), "ab") as handle:
        handle.write(b"\0")


def _tamper_manifest(path, manifest):
    with open(manifest, "rb") as handle:
        data = handle.read()
    with open(manifest, "wb") as handle:
        handle.write(data.replace(b'"3.33-3"', b'"3.33-4"', 1))


def _unsign(path, manifest):
    os.remove(manifest + ".sig")


def _garbage(path, manifest):
    with open(manifest, "wb") as handle:
        handle.write(b"not json")


@pytest.mark.parametrize("tamper, message", [
    (_tamper_artifact, "was altered: sha256"),
    (_tamper_manifest, "the manifest was altered after signing"),
    (_unsign, "is unsigned"),
    (_garbage, "is not valid JSON"),
])
def test_refuses_altered_or_unsigned_images(tmp_path, tamper, message):
    manifest, key = make_image(tmp_path)
    tamper(tmp_path, manifest)
    with pytest.raises(VerificationError) as err:
        verify_image(manifest, public_pem(key))
    assert message in err.value.msg


def test_refuses_a_different_signer_naming_both_keys(tmp_path):
    manifest, key = make_image(tmp_path)
    other = signing.generate_key("ed25519")
    with pytest.raises(VerificationError) as err:
        verify_image(manifest, public_pem(other))
    assert signing.key_id(key.public_key()) in err.value.msg
    assert signing.key_id(other.public_key()) in err.value.msg
    assert err.value.details["trusted_key_id"] == signing.key_id(other.public_key())


def test_refuses_a_forged_signer_field(tmp_path):
    # The attacker re-signs with their key but keeps the trusted key id in the manifest.
    manifest, key = make_image(tmp_path)
    forger = signing.generate_key("ed25519")
    with open(manifest, "rb") as handle:
        data = handle.read()
    with open(manifest + ".sig", "wb") as handle:
        handle.write(signing.sign(forger, data))
    with pytest.raises(VerificationError, match="altered after signing"):
        verify_image(manifest, public_pem(key))


def test_refuses_unexpected_version(tmp_path):
    manifest, key = make_image(tmp_path)
    with pytest.raises(VerificationError, match="not the expected 2026.03.1"):
        verify_image(manifest, public_pem(key), expected_version="2026.03.1")


def test_refuses_missing_artifact_and_bad_public_key(tmp_path):
    manifest, key = make_image(tmp_path)
    with pytest.raises(VerificationError, match="Cannot load the public key"):
        verify_image(manifest, b"-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----\n")
    os.remove(str(tmp_path / "lab.rootfs.tar.gz"))
    with pytest.raises(VerificationError, match="does not exist"):
        verify_image(manifest, public_pem(key))
