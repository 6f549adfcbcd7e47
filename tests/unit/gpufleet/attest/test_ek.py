"""EK certificates: real swtpm EK certificates against their CA, and crafted ones for each refusal."""
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from gpufleet.attest import ek
from gpufleet.attest.errors import EkCertError

NOW = datetime.datetime(2026, 6, 1, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def _name(common):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(subject, issuer, key, signer, ca, start=NOW - DAY, end=NOW + 365 * DAY, ek_marks=True):
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ek_marks and not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([x509.ObjectIdentifier(ek.EK_CERT_OID)]),
                                        critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(*certs):
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


@pytest.fixture(scope="module")
def pki():
    keys = dict((n, ec.generate_private_key(ec.SECP256R1())) for n in ("root", "inter", "other"))
    keys["ek"] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    root = _cert("Vendor Root", "Vendor Root", keys["root"], keys["root"], True)
    inter = _cert("Vendor EK CA", "Vendor Root", keys["inter"], keys["root"], True)
    return {"keys": keys, "root": root, "inter": inter, "bundle": _pem(inter, root)}


def _ek(pki, **kwargs):
    cert = _cert("tpm-1", "Vendor EK CA", pki["keys"]["ek"], kwargs.pop("signer", pki["keys"]["inter"]), False,
                 **kwargs)
    return cert.public_bytes(serialization.Encoding.DER)


def test_crafted_chain_verifies_and_returns_fingerprint_and_key(pki):
    found = ek.verify_ek_certificate(_ek(pki), pki["bundle"], now=NOW)
    assert found["chain"] == ["CN=tpm-1", "CN=Vendor EK CA", "CN=Vendor Root"]
    assert found["public_key"].public_numbers() == pki["keys"]["ek"].public_key().public_numbers()
    assert len(found["fingerprint"]) == 64


def test_pem_and_der_give_the_same_fingerprint(pki):
    der = _ek(pki)
    pem = x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)
    assert (ek.verify_ek_certificate(der, pki["bundle"], now=NOW)["fingerprint"]
            == ek.verify_ek_certificate(pem, pki["bundle"], now=NOW)["fingerprint"])


@pytest.mark.parametrize("case, reason, words", [
    ("expired", "expired", "expired on"),
    ("not_yet", "not_yet_valid", "not valid before"),
    ("other_signer", "bad_signature", "does not verify"),
    ("no_marks", "not_ek", "not an EK certificate"),
])
def test_crafted_refusals_name_their_reason(pki, case, reason, words):
    kwargs = {"expired": {"start": NOW - 30 * DAY, "end": NOW - DAY},
              "not_yet": {"start": NOW + DAY},
              "other_signer": {"signer": pki["keys"]["other"]},
              "no_marks": {"ek_marks": False}}[case]
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(_ek(pki, **kwargs), pki["bundle"], now=NOW)
    assert info.value.details["reason"] == reason
    assert words in info.value.msg


def test_issuer_missing_from_bundle_is_a_wrong_issuer(pki):
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(_ek(pki), _pem(pki["root"]), now=NOW)
    assert info.value.details["reason"] == "wrong_issuer"
    assert "CN=Vendor EK CA" in info.value.msg


def test_chain_without_its_root_is_refused(pki):
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(_ek(pki), _pem(pki["inter"]), now=NOW)
    assert info.value.details["reason"] == "wrong_issuer"


def test_expired_intermediate_is_refused(pki):
    old = _cert("Vendor EK CA", "Vendor Root", pki["keys"]["inter"], pki["keys"]["root"], True,
                start=NOW - 30 * DAY, end=NOW - DAY)
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(_ek(pki), _pem(old, pki["root"]), now=NOW)
    assert info.value.details["reason"] == "expired"
    assert "CA certificate" in info.value.msg


def test_a_ca_certificate_is_not_an_ek(pki):
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(pki["inter"].public_bytes(serialization.Encoding.DER), pki["bundle"], now=NOW)
    assert info.value.details["reason"] == "not_ek"


@pytest.mark.parametrize("data", [b"", b"not a certificate", b"-----BEGIN CERTIFICATE-----\nAAAA\n"])
def test_garbage_certificate_is_a_clear_error(pki, data):
    with pytest.raises(EkCertError, match="does not parse"):
        ek.verify_ek_certificate(data, pki["bundle"], now=NOW)


def test_empty_bundle_is_a_clear_error(pki):
    with pytest.raises(EkCertError, match="bundle"):
        ek.verify_ek_certificate(_ek(pki), b"", now=NOW)


def test_swtpm_ek_certificate_verifies_against_its_ca(node_tpm, vendor_ca):
    found = ek.verify_ek_certificate(node_tpm.ek_certificate(), vendor_ca.bundle)
    assert found["issuer"] == "CN=swtpm-localca"
    assert len(found["chain"]) == 3


def test_swtpm_ek_certificate_of_another_ca_is_refused(foreign_tpm, vendor_ca):
    # Both CAs are named CN=swtpm-localca: only the signature tells them apart.
    with pytest.raises(EkCertError) as info:
        ek.verify_ek_certificate(foreign_tpm.ek_certificate(), vendor_ca.bundle)
    assert info.value.details["reason"] == "bad_signature"
