import hashlib

import pytest
from cryptography.hazmat.primitives import serialization

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import SignatureError


@pytest.mark.parametrize("algorithm", signing.ALGORITHMS)
def test_sign_and_verify_round_trip(algorithm):
    key = signing.generate_key(algorithm)
    sig = signing.sign(key, b"manifest")
    assert signing.verify_signature(key.public_key(), b"manifest", sig)
    assert not signing.verify_signature(key.public_key(), b"manifest!", sig)
    assert signing.algorithm_of(key.public_key()) == algorithm


def test_key_id_is_sha256_of_der_spki():
    key = signing.generate_key("ed25519")
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert signing.key_id(key.public_key()) == hashlib.sha256(der).hexdigest()


def test_keypair_files_private_is_0600_and_passphrase_works(tmp_path):
    priv, pub = str(tmp_path / "k.key"), str(tmp_path / "k.pub")
    signing.write_keypair(signing.generate_key("ecdsa-p256"), priv, pub, passphrase=b"s3cret")
    assert oct((tmp_path / "k.key").stat().st_mode & 0o777) == "0o600"
    pem = (tmp_path / "k.key").read_bytes()
    with pytest.raises(SignatureError, match="GPUFLEET_SIGNING_KEY_PASSPHRASE"):
        signing.load_private_key(pem, priv)
    key = signing.load_private_key(pem, priv, b"s3cret")
    assert signing.key_id(key.public_key()) == signing.key_id(signing.load_public_key((tmp_path / "k.pub").read_bytes(), pub))


def test_rejects_unsupported_curves_and_algorithms():
    from cryptography.hazmat.primitives.asymmetric import ec
    with pytest.raises(SignatureError, match="Ed25519 or ECDSA P-256"):
        signing.algorithm_of(ec.generate_private_key(ec.SECP384R1()))
    with pytest.raises(SignatureError, match="unknown"):
        signing.generate_key("rsa")
