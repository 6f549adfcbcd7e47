#!/usr/bin/env python3
"""Lab credentials for the Kubernetes API simulation: a throw-away CA, the API server's
certificate, an admin bearer token, a kubeadm bootstrap token and a kubeconfig.

Writes into DIR (mode 0600 files): ca.crt, server.crt, server.key, admin.token,
bootstrap.token (``[a-z0-9]{6}.[a-z0-9]{16}``), ca-cert-hash (``sha256:`` + hex of the CA's
SubjectPublicKeyInfo, what ``kubeadm join --discovery-token-ca-cert-hash`` pins) and
kubeconfig (server ``https://<first --ip>:<port>``, token auth, CA embedded). Reuses an existing
DIR unchanged. Lab only; runs on the host (needs ``cryptography``).
Usage: k8s_pki.py DIR [--ip 127.0.30.1] [--dns k8s-api] [--port 6443]
"""
import argparse
import base64
import datetime
import hashlib
import ipaddress
import json
import os
import secrets
import string

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ensure_pki", "ca_cert_hash", "bootstrap_token"]

_ALPHABET = string.ascii_lowercase + string.digits


def bootstrap_token():
    pick = lambda n: "".join(secrets.choice(_ALPHABET) for _ in range(n))  # noqa: E731
    return "%s.%s" % (pick(6), pick(16))


def ca_cert_hash(cert_pem):
    cert = x509.load_pem_x509_certificate(cert_pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def _write(path, data):
    with open(path, "wb") as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, 0o600)


def _cert(subject, issuer, public_key, signing_key, ca=False, sans=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = lambda cn: x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])  # noqa: E731
    builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                        critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def ensure_pki(directory, ips=("127.0.30.1",), dns=("k8s-api",), port=6443):
    """Create the lab credentials in ``directory`` unless present; return their paths and values."""
    os.makedirs(directory, exist_ok=True)
    paths = {n: os.path.join(directory, n) for n in ("ca.crt", "server.crt", "server.key", "admin.token",
                                                      "bootstrap.token", "ca-cert-hash", "kubeconfig")}
    if not all(os.path.exists(p) for p in paths.values()):
        ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        ca = _cert("gpufleet-lab-k8s-ca", "gpufleet-lab-k8s-ca", ca_key.public_key(), ca_key, ca=True)
        sans = [x509.DNSName(d) for d in list(dns) + ["localhost"]]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in list(ips) + ["127.0.0.1"]]
        server = _cert("kube-apiserver (gpufleet lab simulation)", "gpufleet-lab-k8s-ca", server_key.public_key(),
                       ca_key, sans=sans)
        ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        admin = secrets.token_hex(24)
        _write(paths["ca.crt"], ca_pem)
        _write(paths["server.crt"], server.public_bytes(serialization.Encoding.PEM))
        _write(paths["server.key"], server_key.private_bytes(serialization.Encoding.PEM,
                                                             serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption()))
        _write(paths["admin.token"], admin + "\n")
        _write(paths["bootstrap.token"], bootstrap_token() + "\n")
        _write(paths["ca-cert-hash"], ca_cert_hash(ca_pem) + "\n")
        # JSON is YAML: the kubernetes client reads this as a kubeconfig.
        _write(paths["kubeconfig"], json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "gpufleet-lab",
            "clusters": [{"name": "gpufleet-lab", "cluster": {"server": "https://%s:%d" % (ips[0], port),
                                                              "certificate-authority-data":
                                                                  base64.b64encode(ca_pem).decode()}}],
            "users": [{"name": "gpufleet-lab-admin", "user": {"token": admin}}],
            "contexts": [{"name": "gpufleet-lab", "context": {"cluster": "gpufleet-lab",
                                                              "user": "gpufleet-lab-admin"}}]}, indent=2) + "\n")
    values = {}
    for name in ("admin.token", "bootstrap.token", "ca-cert-hash"):
        with open(paths[name], encoding="utf-8") as handle:
            values[name] = handle.read().strip()
    return paths, values


def main(argv=None):
    parser = argparse.ArgumentParser(description="lab credentials for the Kubernetes API simulation")
    parser.add_argument("directory")
    parser.add_argument("--ip", action="append", help="API address the host uses (first one goes in kubeconfig)")
    parser.add_argument("--dns", action="append", help="API host name the nodes use (network alias)")
    parser.add_argument("--port", type=int, default=6443)
    args = parser.parse_args(argv)
    paths, _ = ensure_pki(args.directory, tuple(args.ip or ["127.0.30.1"]), tuple(args.dns or ["k8s-api"]),
                          args.port)
    print(paths["kubeconfig"])


if __name__ == "__main__":
    main()
