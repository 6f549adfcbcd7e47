# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Detached signatures over manifest bytes with Ed25519 or ECDSA P-256 PEM keys.

Signatures are what standard tools read: Ed25519 signs the raw bytes (64-byte
signature, ``openssl pkeyutl -verify -rawin``); ECDSA P-256 signs SHA-256 of the bytes
(DER signature, ``openssl dgst -sha256 -verify``; base64 of it is what
``cosign verify-blob --key`` takes). A key id is the sha256 of the public key's DER
SubjectPublicKeyInfo: ``openssl pkey -pubin -in key.pub -outform DER | sha256sum``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    HAS_CRYPTOGRAPHY = True
except ImportError:  # reported by the caller with missing_required_lib
    HAS_CRYPTOGRAPHY = False

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import SignatureError, VerificationError

__all__ = ["ALGORITHMS", "HAS_CRYPTOGRAPHY", "algorithm_of", "generate_key", "key_id", "load_private_key",
           "load_public_key", "public_pem", "sign", "verify_signature", "write_keypair"]

ALGORITHMS = ("ed25519", "ecdsa-p256")


def algorithm_of(key):
    """'ed25519' or 'ecdsa-p256' for a private or public key object."""
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "ed25519"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) and key.curve.name == "secp256r1":
        return "ecdsa-p256"
    raise SignatureError("Key type %s is not supported. Use an Ed25519 or ECDSA P-256 key (gpufleet image keygen)."
                         % type(key).__name__)


def generate_key(algorithm):
    """A new private key of ``algorithm``."""
    if algorithm == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if algorithm == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    raise SignatureError('Key algorithm "%s" is unknown. Use one of: %s.' % (algorithm, ", ".join(ALGORITHMS)))


def write_keypair(key, private_path, public_path, passphrase=None):
    """Write PKCS#8 private (mode 0600, encrypted when ``passphrase``) and SPKI public PEM files."""
    encryption = (serialization.BestAvailableEncryption(passphrase) if passphrase
                  else serialization.NoEncryption())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    with open(public_path, "wb") as handle:
        handle.write(public_pem(key.public_key()))


def public_pem(public_key):
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(public_key):
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def load_private_key(pem, where, passphrase=None):
    try:
        key = serialization.load_pem_private_key(pem, password=passphrase)
    except (ValueError, TypeError) as exc:
        raise SignatureError("Cannot load the signing key %s: %s. Give an unencrypted PKCS#8 PEM key, or its "
                             "passphrase in GPUFLEET_SIGNING_KEY_PASSPHRASE." % (where, exc))
    algorithm_of(key)
    return key


def load_public_key(pem, where):
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise VerificationError("Cannot load the public key %s: %s. Give the PEM public key (BEGIN PUBLIC KEY) "
                                "that matches the signing key." % (where, exc))
    algorithm_of(key)
    return key


def sign(private_key, data):
    if algorithm_of(private_key) == "ed25519":
        return private_key.sign(data)
    return private_key.sign(data, ec.ECDSA(hashes.SHA256()))


def verify_signature(public_key, data, signature):
    """True when ``signature`` over ``data`` verifies with ``public_key``."""
    try:
        if algorithm_of(public_key) == "ed25519":
            public_key.verify(signature, data)
        else:
            public_key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True
