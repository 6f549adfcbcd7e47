"""Lab PKI and credentials: a throw-away CA, one server certificate for every rack address,
and an htpasswd file (bcrypt, the only digest sushy-tools accepts).

bcrypt cost is 4 (the minimum): the emulator checks basic auth on every request, and at the
usual cost 12 one check takes about 0.2 s of CPU, which would make the emulator, not the
client, the thing a 1,000-node benchmark measures. Lab only.
"""
import datetime
import ipaddress
import os

import bcrypt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["ensure_pki", "write_htpasswd"]


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path, data, mode=0o600):
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ensure_pki(directory, addresses):
    """Create ca.pem, server.pem, server.key in ``directory`` (once); return their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = dict((n, os.path.join(directory, n)) for n in ("ca.pem", "server.pem", "server.key"))
    stamp = os.path.join(directory, "addresses")
    wanted = "\n".join(sorted(set(addresses)))
    if all(os.path.exists(p) for p in paths.values()) and os.path.exists(stamp) \
            and open(stamp).read() == wanted:
        return paths
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = _key()
    ca = (x509.CertificateBuilder().subject_name(_name("gpufleet lab BMC CA"))
          .issuer_name(_name("gpufleet lab BMC CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                         critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = _key()
    sans = [x509.DNSName("localhost")] + [x509.IPAddress(ipaddress.ip_address(a))
                                          for a in sorted(set(addresses))]
    cert = (x509.CertificateBuilder().subject_name(_name("gpufleet lab BMC"))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(paths["ca.pem"], ca.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(paths["server.pem"], cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(paths["server.key"], _pem_key(key))
    with open(stamp, "w") as handle:
        handle.write(wanted)
    return paths


def write_htpasswd(path, username, password, rounds=4):
    """One-user htpasswd with a bcrypt ($2b$) digest, as sushy-tools' auth expects."""
    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=rounds)).decode()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write(path, ("%s:%s\n" % (username, digest)).encode())
    return path
