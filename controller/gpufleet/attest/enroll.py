"""Enrollment: bind a node's attestation key (AK) to its TPM's certified endorsement key (EK).

Controller side of credential activation: the controller encrypts a random secret to the EK
public key from the *verified certificate* (never a key the node sends) and to the AK's name,
which it computes from the AK public the node sends (``tpm2_makecredential -T none``, offline).
Only the TPM holding that EK, with that AK loaded, can decrypt it (``tpm2_activatecredential``
on the node). A returned secret equal to the one sent proves both keys live in one certified TPM.

The store keeps one JSON file per node, ``<dir>/<node>.json`` (ak_pem, ak_name, ek_fingerprint,
enrolled_at), written atomically with mode 0600. A node whose EK certificate fingerprint changed
is refused until a person removes its enrollment file and enrolls it again.
"""
import datetime
import hmac
import json
import os
import re
import shutil
import subprocess
import tempfile

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gpufleet.attest.ek import verify_ek_certificate
from gpufleet.attest.errors import AttestError, EnrollmentError
from gpufleet.attest.tpm_public import (
    check_ak_attributes, parse_public)
from gpufleet.deploy.orders import write_private   # the controller's one 0600 atomic writer

__all__ = ["ENROLL", "KEEP", "SECRET_BYTES", "EnrollmentStore", "check_activated", "enroll_node",
           "make_credential", "makecredential_argv"]

ENROLL, KEEP = "enroll", "keep"
SECRET_BYTES = 32
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def makecredential_argv(ek_pem_path, ek_algorithm, ak_name_hex, secret_path, out_path):
    """The offline ``tpm2_makecredential`` call: EK public key as PEM with the default TCG EK template."""
    return ["tpm2_makecredential", "-T", "none", "-G", ek_algorithm, "-u", ek_pem_path, "-s", secret_path,
            "-n", ak_name_hex, "-o", out_path]


def make_credential(ek_public_key, ak_name_hex, run=subprocess.run, secret=None):
    """(secret, credential blob for the node). ``run`` is subprocess.run's shape (tests may wrap it)."""
    if not re.match(r"^[0-9a-f]{68}$|^[0-9a-f]{44}$|^[0-9a-f]{100}$|^[0-9a-f]{132}$", ak_name_hex or ""):
        raise EnrollmentError("The AK name %r is not a TPM name (hash algorithm id + digest, hex). Compute it with "
                              "parse_public from the AK's TPM2B_PUBLIC." % (ak_name_hex,))
    secret = secret if secret is not None else os.urandom(SECRET_BYTES)
    algorithm = "rsa" if isinstance(ek_public_key, rsa.RSAPublicKey) else "ecc"
    folder = tempfile.mkdtemp(prefix="gpufleet-makecred-")
    try:
        ek_path, secret_path, out_path = (os.path.join(folder, n) for n in ("ek.pem", "secret.bin", "cred.out"))
        with open(ek_path, "wb") as handle:
            handle.write(ek_public_key.public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secret)
        argv = makecredential_argv(ek_path, algorithm, ak_name_hex, secret_path, out_path)
        try:
            done = run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnrollmentError("tpm2_makecredential could not run: %s. Install tpm2-tools on the controller."
                                  % exc)
        if done.returncode != 0 or not os.path.isfile(out_path):
            stderr = (done.stderr or b"").decode("utf-8", "replace").strip()[-300:]
            raise EnrollmentError("tpm2_makecredential exited %s: %s" % (done.returncode, stderr))
        with open(out_path, "rb") as handle:
            return secret, handle.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_activated(expected, returned, node):
    """EnrollmentError unless the node returned the secret (constant-time compare)."""
    if not isinstance(returned, bytes) or not hmac.compare_digest(expected, returned):
        raise EnrollmentError("Node %s did not return the credential's secret: its AK is not in the TPM whose EK "
                              "certificate was verified (or activation failed). Refusing to enroll it." % node,
                              node=node, reason="activation_failed")


class EnrollmentStore:
    """One JSON file per enrolled node under ``folder``."""

    def __init__(self, folder, clock=None):
        self.folder = folder
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))

    def path(self, node):
        if not isinstance(node, str) or not _NODE.match(node):
            raise EnrollmentError("Node name %r cannot name an enrollment file: use letters, digits, '.', '_' or "
                                  "'-', starting with a letter or digit." % (node,), node=node)
        return os.path.join(self.folder, node + ".json")

    def get(self, node):
        """The node's enrollment dict, or None when it was never enrolled."""
        path = self.path(node)
        try:
            with open(path, "rb") as handle:
                record = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise EnrollmentError("The enrollment %s cannot be read: %s. Refusing node %s; a person must check the "
                                  "file and re-enroll it (rm %s, then enroll)." % (path, exc, node, path), node=node)
        if not isinstance(record, dict) or not all(record.get(k) for k in ("ak_pem", "ek_fingerprint", "ak_name")):
            raise EnrollmentError("The enrollment %s lacks ak_pem, ak_name or ek_fingerprint. Refusing node %s; "
                                  "re-enroll it (rm %s, then enroll)." % (path, node, path), node=node)
        return record

    def decide(self, node, ek_fingerprint):
        """ENROLL for a new node, KEEP for the same EK; EnrollmentError when the EK changed."""
        record = self.get(node)
        if record is None:
            return ENROLL
        if hmac.compare_digest(record["ek_fingerprint"], ek_fingerprint):
            return KEEP
        path = self.path(node)
        raise EnrollmentError(
            "Node %s presents a different TPM: EK certificate sha256 %s, enrolled %s on %s. Refusing it: the board "
            "or TPM was swapped, or the node is not the one enrolled. A person must check the hardware and "
            "re-enroll it: rm %s, then enroll the node again." % (
                node, ek_fingerprint, record["ek_fingerprint"], record.get("enrolled_at", "?"), path),
            node=node, reason="ek_changed", enrolled_ek_fingerprint=record["ek_fingerprint"],
            ek_fingerprint=ek_fingerprint)

    def save(self, node, ak_pem, ak_name, ek_fingerprint):
        """Write the enrollment atomically, mode 0600; return the record."""
        record = {"node": node, "ak_pem": ak_pem, "ak_name": ak_name, "ek_fingerprint": ek_fingerprint,
                  "enrolled_at": self.clock().isoformat()}
        write_private(self.path(node), (json.dumps(record, sort_keys=True, indent=2) + "\n").encode("utf-8"))
        return record


def enroll_node(store, node, ek_cert, ca_bundle, ak_public, activate, run=subprocess.run, now=None):
    """Verify the EK certificate, decide, and for a new node run credential activation and store the AK.

    ``ak_public``: the AK's TPM2B_PUBLIC bytes from the node. ``activate(credential_blob) -> secret``
    runs ``tpm2_activatecredential`` on the node. Returns {"decision", "record", "ek"}.
    """
    ek = verify_ek_certificate(ek_cert, ca_bundle, now=now)
    decision = store.decide(node, ek["fingerprint"])
    if decision == KEEP:
        return {"decision": KEEP, "record": store.get(node), "ek": ek}
    try:
        ak = parse_public(ak_public)
        check_ak_attributes(ak["attributes"], "the AK of node %s" % node)
    except AttestError as exc:
        raise EnrollmentError("Node %s: %s" % (node, exc.msg), **dict(exc.details, node=node))
    secret, blob = make_credential(ek["public_key"], ak["name"], run=run)
    check_activated(secret, activate(blob), node)
    ak_pem = ak["key"].public_bytes(serialization.Encoding.PEM,
                                    serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    return {"decision": ENROLL, "record": store.save(node, ak_pem, ak["name"], ek["fingerprint"]), "ek": ek}
