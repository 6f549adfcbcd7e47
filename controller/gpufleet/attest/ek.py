"""Endorsement key (EK) certificates: parse, check the chain against a CA bundle, fingerprint.

The EK certificate is what ties a TPM to its manufacturer: the TPM vendor (or, for swtpm,
``swtpm_localca``) signs it, and the site trusts the vendor's CA bundle. The chain is walked by
hand (issuer name -> a bundle certificate of that subject whose key verifies the signature)
because EK certificates carry TCG extensions (a critical directoryName SAN, subject directory
attributes) that general TLS path validators reject. The chain must end at a self-signed
certificate in the bundle; every certificate on it must be inside its validity period and every
issuer must be a CA. Any failure raises EkCertError with the reason; nothing is returned for a
certificate that did not verify.
"""
import datetime
import hashlib

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gpufleet.attest.errors import EkCertError

__all__ = ["EK_CERT_OID", "TPM_MANUFACTURER_OID", "load_certificate", "load_bundle", "verify_ek_certificate"]

# TCG EK Credential Profile: the EKU of an EK certificate, and the SAN attribute naming the TPM vendor.
EK_CERT_OID = "2.23.133.8.1"
TPM_MANUFACTURER_OID = "2.23.133.2.1"
_MAX_CHAIN = 8


def load_certificate(data, where):
    """One certificate from DER or PEM bytes; EkCertError naming ``where`` when it does not parse."""
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return x509.load_pem_x509_certificate(data)
        return x509.load_der_x509_certificate(data)
    except ValueError as exc:
        raise EkCertError("The EK certificate %s does not parse: %s. Read it from the TPM's NV index "
                          "(tpm2_getekcertificate, or tpm2_nvread 0x1c00002 for RSA) as DER or PEM." % (where, exc),
                          path=where)


def load_bundle(data, where):
    """Every certificate of a PEM CA bundle (intermediates and roots); EkCertError when it holds none."""
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise EkCertError("The EK CA bundle %s is not a PEM file of certificates: %s. Give the TPM vendor's "
                          "root and intermediate CA certificates, PEM, in one file." % (where, exc), path=where)
    if not certs:
        raise EkCertError("The EK CA bundle %s holds no certificate. Give the TPM vendor's CA certificates." % where,
                          path=where)
    return certs


def _subject(cert):
    return cert.subject.rfc4514_string() or "(empty name)"


def _fingerprint(cert):
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def _check_validity(cert, now, role):
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if now < start:
        raise EkCertError("The %s certificate %s is not valid before %s; check the controller's clock or the "
                          "certificate." % (role, _subject(cert), start.isoformat()), reason="not_yet_valid")
    if now > end:
        raise EkCertError("The %s certificate %s expired on %s. Refusing it; get a current certificate (or CA "
                          "bundle) from the TPM vendor." % (role, _subject(cert), end.isoformat()), reason="expired")


def _is_ca(cert):
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _signed_by(cert, issuer):
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _issuer_of(cert, bundle, where):
    named = [c for c in bundle if c.subject == cert.issuer]
    if not named:
        raise EkCertError("The certificate %s was issued by %s, which is not in the EK CA bundle %s. Refusing it: "
                          "the TPM is not from a vendor this site trusts (add the vendor's CA to the bundle only "
                          "if it should be)." % (_subject(cert), cert.issuer.rfc4514_string(), where),
                          reason="wrong_issuer")
    for candidate in named:
        if _signed_by(cert, candidate):
            return candidate
    raise EkCertError("The signature of the certificate %s does not verify with any CA named %s in the bundle %s. "
                      "Refusing it: it was signed by another key of the same name (a different CA) or altered."
                      % (_subject(cert), cert.issuer.rfc4514_string(), where), reason="bad_signature")


def _check_ek_profile(cert):
    key = cert.public_key()
    if not isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
        raise EkCertError("The certificate %s carries a %s key, not an RSA or ECC endorsement key. Give the TPM's "
                          "EK certificate." % (_subject(cert), type(key).__name__), reason="not_ek")
    if _is_ca(cert):
        raise EkCertError("The certificate %s is a CA certificate, not an EK certificate. Give the TPM's EK "
                          "certificate (NV index 0x1c00002 for RSA)." % _subject(cert), reason="not_ek")
    marks = []
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        marks.extend(oid.dotted_string for oid in eku)
    except x509.ExtensionNotFound:
        pass
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        for name in san.get_values_for_type(x509.DirectoryName):
            marks.extend(attr.oid.dotted_string for attr in name)
    except x509.ExtensionNotFound:
        pass
    if EK_CERT_OID not in marks and TPM_MANUFACTURER_OID not in marks:
        raise EkCertError("The certificate %s is not an EK certificate: it has neither the TCG EK extended key "
                          "usage (%s) nor a TPM manufacturer name (%s). Give the TPM's EK certificate."
                          % (_subject(cert), EK_CERT_OID, TPM_MANUFACTURER_OID), reason="not_ek")
    return key


def verify_ek_certificate(cert_bytes, bundle_bytes, where="EK certificate", bundle_where="EK CA bundle", now=None):
    """Verify an EK certificate against the CA bundle.

    Returns {"fingerprint": sha256 hex of the certificate's DER, "public_key": key object,
    "public_pem": SPKI PEM bytes, "subject", "issuer", "chain": [subjects up to the root]}.
    """
    now = now or datetime.datetime.now(datetime.timezone.utc)
    cert = load_certificate(cert_bytes, where)
    bundle = load_bundle(bundle_bytes, bundle_where)
    key = _check_ek_profile(cert)
    _check_validity(cert, now, "EK")
    chain, current = [_subject(cert)], cert
    for _step in range(_MAX_CHAIN):
        issuer = _issuer_of(current, bundle, bundle_where)
        _check_validity(issuer, now, "CA")
        if not _is_ca(issuer):
            raise EkCertError("The certificate %s in the bundle %s signed %s but is not a CA (basicConstraints "
                              "CA:FALSE or missing). Refusing the chain." % (_subject(issuer), bundle_where,
                                                                             _subject(current)),
                              reason="wrong_issuer")
        chain.append(_subject(issuer))
        if issuer.subject == issuer.issuer and _signed_by(issuer, issuer):
            return {
                "fingerprint": _fingerprint(cert),
                "public_key": key,
                "public_pem": key.public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo),
                "subject": _subject(cert),
                "issuer": cert.issuer.rfc4514_string(),
                "chain": chain,
            }
        current = issuer
    raise EkCertError("The chain of %s does not reach a self-signed root in the bundle %s within %d certificates. "
                      "Add the vendor's root CA to the bundle." % (where, bundle_where, _MAX_CHAIN),
                      reason="wrong_issuer")
