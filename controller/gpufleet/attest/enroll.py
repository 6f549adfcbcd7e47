"""Enrollment: bind a node's attestation key (AK) to its TPM's certified endorsement key (EK).

Controller side of credential activation: the controller encrypts a random secret to the EK
public key from the *verified certificate* (never a key the node sends) and to the AK's name,
which it computes from the AK public the node sends (``tpm2_makecredential -T none``, offline).
Only the TPM holding that EK, with that AK loaded, can decrypt it (``tpm2_activatecredential``
on the node). A returned secret equal to the one sent proves both keys live in one certified TPM.

Enrollments live in the lifecycle ledger (``enrollments`` table, module_utils/lifecycle/
enrollments.py): ak_pem, ak_name, ek_fingerprint, enrolled_at, enrolled_by, reason. A node
whose EK certificate fingerprint changed is refused until a person re-enrolls it explicitly
(``reenroll`` with a reason); the replaced enrollment stays in the ledger's history.

The two halves, ``challenge`` and ``finish``, are separate so a playbook can run the node's half
between them (``gpufleet attest enroll-challenge|enroll-finish``); ``ChallengeBook`` keeps the
secret between them (one 0600 file per node, usable once, for ``ttl_s`` seconds).
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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import enrollments
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import iso

__all__ = ["ENROLL", "KEEP", "REENROLL", "SECRET_BYTES", "ChallengeBook", "EnrollmentStore", "challenge",
           "check_activated", "check_node", "finish", "make_credential", "makecredential_argv"]

ENROLL, KEEP, REENROLL = "enroll", "keep", "reenroll"
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


def check_node(node):
    """EnrollmentError unless ``node`` is a name that can also name a file (the challenge book's)."""
    if not isinstance(node, str) or not _NODE.match(node):
        raise EnrollmentError("Node name %r is not usable: use letters, digits, '.', '_' or '-', starting with a "
                              "letter or digit." % (node,), node=node, reason="bad_node")
    return node


def _reenroll_hint(node):
    return ("gpufleet attest enroll-challenge %s ... --reenroll --reason '<what was checked>', then "
            "enroll-finish" % node)


class EnrollmentStore:
    """Enrollments in the lifecycle ledger ``ledger`` (an open ``Ledger``)."""

    def __init__(self, ledger):
        self.ledger = ledger

    @staticmethod
    def _shown(record):
        if record is None:
            return None
        return dict(record, enrolled_at=iso(record["enrolled_at"]), replaced_at=iso(record["replaced_at"]))

    def get(self, node):
        """The node's current enrollment dict, or None when it is not enrolled."""
        return self._shown(enrollments.current(self.ledger, check_node(node)))

    def history(self, node=None):
        """Every enrollment, oldest first (replaced ones carry replaced_at and replaced_by)."""
        return [self._shown(r) for r in enrollments.history(self.ledger, node)]

    def decide(self, node, ek_fingerprint, reenroll=False):
        """ENROLL for a new node, KEEP for the same EK, REENROLL when asked; EnrollmentError when the EK changed."""
        record = self.get(node)
        if record is None:
            return ENROLL
        if reenroll:
            return REENROLL
        if hmac.compare_digest(record["ek_fingerprint"], ek_fingerprint):
            return KEEP
        raise EnrollmentError(
            "Node %s presents a different TPM: EK certificate sha256 %s, enrolled %s on %s. Refusing it: the board "
            "or TPM was swapped, or the node is not the one enrolled. A person must check the hardware and "
            "re-enroll it: %s." % (node, ek_fingerprint, record["ek_fingerprint"], record["enrolled_at"],
                                   _reenroll_hint(node)),
            node=node, reason="ek_changed", enrolled_ek_fingerprint=record["ek_fingerprint"],
            ek_fingerprint=ek_fingerprint)

    def save(self, node, ak_pem, ak_name, ek_fingerprint, who, reason=None, reenroll=False):
        """Record the enrollment (a re-enrollment keeps the replaced one in history); return the record."""
        try:
            record = enrollments.record(self.ledger, check_node(node), ek_fingerprint, ak_pem, ak_name, who,
                                       reason=reason, reenroll=reenroll)
        except enrollments.EnrollmentConflict as exc:
            raise EnrollmentError("%s Refusing to replace it: %s." % (exc.msg, _reenroll_hint(node)),
                                  **dict(exc.details, reason="already_enrolled"))
        except LedgerError as exc:
            if "field" not in exc.details:  # the ledger itself failed: keep its own error and fix
                raise
            raise EnrollmentError(exc.msg, **dict(exc.details, reason="bad_record"))
        return self._shown(record)


def challenge(store, node, ek_cert, ca_bundle, ak_public, reenroll=False, reason=None, run=subprocess.run,
              now=None):
    """First half: verify the EK certificate, read the AK, decide, and for ENROLL/REENROLL make the credential.

    A re-enrollment (``reenroll``) needs ``reason``; it is decided here, before any credential is
    made. Returns {"decision", "ek", "ak_pem", "ak_name", "reason", "record" (the current one or
    None), and for ENROLL/REENROLL "secret" and "credential" (the blob for ``tpm2_activatecredential``)}.
    """
    check_node(node)
    if reenroll and not (reason or "").strip():
        raise EnrollmentError("Re-enrolling node %s needs a reason: say what a person checked (e.g. --reason 'TPM "
                              "replaced, ticket 1234')." % node, node=node, reason="no_reason")
    ek = verify_ek_certificate(ek_cert, ca_bundle, now=now)
    try:
        ak = parse_public(ak_public)
        check_ak_attributes(ak["attributes"], "the AK of node %s" % node)
    except AttestError as exc:
        raise EnrollmentError("Node %s: %s" % (node, exc.msg), **dict(exc.details, node=node))
    decision = store.decide(node, ek["fingerprint"], reenroll=reenroll)
    ak_pem = ak["key"].public_bytes(serialization.Encoding.PEM,
                                    serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    out = {"decision": decision, "ek": ek, "ak_pem": ak_pem, "ak_name": ak["name"], "record": store.get(node),
           "reason": (reason or "").strip() or None}
    if decision != KEEP:
        out["secret"], out["credential"] = make_credential(ek["public_key"], ak["name"], run=run)
    return out


def finish(store, node, pending, returned, who):
    """Second half: the node's activated secret -> the ledger enrollment (returned)."""
    check_activated(pending["secret"], returned, node)
    return store.save(node, pending["ak_pem"], pending["ak_name"], pending["ek"]["fingerprint"], who,
                      reason=pending.get("reason"), reenroll=pending["decision"] == REENROLL)


class ChallengeBook:
    """The secret of each node's open enrollment challenge: ``<folder>/<node>.json``, 0600, taken once."""

    def __init__(self, folder, ttl_s=600, clock=None):
        self.folder, self.ttl_s = folder, ttl_s
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc).timestamp())

    def path(self, node):
        return os.path.join(self.folder, check_node(node) + ".json")

    def put(self, node, pending):
        """Keep what ``finish`` needs (replacing an earlier open challenge of the node)."""
        state = {"node": node, "decision": pending["decision"], "secret": pending["secret"].hex(),
                 "ak_pem": pending["ak_pem"], "ak_name": pending["ak_name"],
                 "ek_fingerprint": pending["ek"]["fingerprint"], "reason": pending.get("reason"),
                 "issued_at": self.clock()}
        return write_private(self.path(node), (json.dumps(state, sort_keys=True) + "\n").encode("utf-8"))

    def take(self, node):
        """The node's open challenge as ``finish`` reads it, removed so it cannot be answered twice."""
        path = self.path(node)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            os.unlink(path)
        except FileNotFoundError:
            raise EnrollmentError("Node %s has no open enrollment challenge in %s (none issued, or already "
                                  "answered). Run enroll-challenge first." % (node, self.folder),
                                  node=node, reason="no_challenge")
        try:
            state = json.loads(data.decode("utf-8"))
            pending = {"decision": state["decision"], "secret": bytes.fromhex(state["secret"]),
                       "ak_pem": state["ak_pem"], "ak_name": state["ak_name"],
                       "ek": {"fingerprint": state["ek_fingerprint"]}, "reason": state.get("reason")}
            age = self.clock() - float(state["issued_at"])
        except (ValueError, KeyError, TypeError) as exc:
            raise EnrollmentError("The enrollment challenge %s of node %s is damaged (%s). Run enroll-challenge "
                                  "again." % (path, node, exc), node=node, reason="no_challenge")
        if age > self.ttl_s:
            raise EnrollmentError("The enrollment challenge of node %s is %.0f s old, past the %d s limit. Run "
                                  "enroll-challenge again." % (node, age, self.ttl_s), node=node, reason="expired")
        return pending
