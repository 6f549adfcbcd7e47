"""redfish.trusted_components.tpm_certificates against the DMTF rackmount mockup (a TPM with the
``TPM`` object, TrustedComponent v1.4) and fixtures/trusted-components (a v1.0 TPM known by its
ComponentIntegrity link, a PEM and a PEMchain certificate), and every fail-closed refusal."""
import base64
import copy
import hashlib
import re

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import inventory, trusted_components
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError, DiscoveryError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.trusted_components import (
    pem_blocks, tpm_certificates,
)

TC = "/redfish/v1/Chassis/Board/TrustedComponents"
EK_RSA = TC + "/TPM0/Certificates/EK-RSA"
EK_ECC = TC + "/TPM0/Certificates/EK-ECC"


def _sha256(pem):
    body = re.search(r"-----BEGIN CERTIFICATE-----(.*?)-----END", pem, re.S).group(1)
    return hashlib.sha256(base64.b64decode("".join(body.split()))).hexdigest()


def _read(rf, tree, system="/redfish/v1/Systems/Node1"):
    return tpm_certificates(rf.make_client(rf.FakeTransport(tree)), system)


def test_rackmount_mockup_gives_the_tpm_and_its_ek_certificate(rf):
    tree = rf.load_mockup("public-rackmount1")
    system = tree["/redfish/v1/Systems"]["Members"][0]["@odata.id"]
    chassis = tree[system]["Links"]["Chassis"][0]["@odata.id"]
    components = tree[tree[chassis]["TrustedComponents"]["@odata.id"]]["Members"]
    tpm_paths = [c["@odata.id"] for c in components if "TPM" in tree[c["@odata.id"]]]
    got = _read(rf, tree, system)
    assert [t["path"] for t in got] == tpm_paths and len(tpm_paths) == 1   # the RoTs are left out
    tpm = tree[tpm_paths[0]]
    assert (got[0]["id"], got[0]["type"], got[0]["chassis"], got[0]["vendor_id"]) == (
        tpm["Id"], tpm["TrustedComponentType"], chassis, tpm["TPM"]["CapabilitiesVendorID"])
    cert_path = tree[tpm["Certificates"]["@odata.id"]]["Members"][0]["@odata.id"]
    cert = tree[cert_path]
    ek = got[0]["certificates"][0]
    assert (ek["id"], ek["path"], ek["usage_types"], ek["certificate_type"], ek["chain"]) == (
        cert["Id"], cert_path, cert["CertificateUsageTypes"], cert["CertificateType"], [])
    assert ek["pem"].strip() == cert["CertificateString"].strip()
    assert ek["sha256"] == _sha256(cert["CertificateString"])


def test_v1_0_tpm_found_by_its_component_integrity_with_pem_and_pemchain(rf):
    tree = rf.load_tree("trusted-components")
    got = _read(rf, tree)
    assert [(t["id"], t["type"], t["manufacturer"], t["firmware_version"], t["vendor_id"]) for t in got] == [
        ("TPM0", "Discrete", "Example TPM Vendor", "7.85", None)]
    rsa, ecc = got[0]["certificates"]
    assert (rsa["id"], rsa["usage_types"], rsa["chain"]) == ("EK-RSA", ["EK"], [])
    assert rsa["sha256"] == _sha256(tree[EK_RSA]["CertificateString"])
    assert ecc["certificate_type"] == "PEMchain" and len(ecc["chain"]) == 1
    assert ecc["sha256"] == _sha256(tree[EK_ECC]["CertificateString"])   # the leaf, first in the chain


def test_without_links_chassis_every_chassis_is_read(rf):
    tree = rf.load_tree("trusted-components")
    del tree["/redfish/v1/Systems/Node1"]["Links"]
    assert [t["id"] for t in _read(rf, tree)] == ["TPM0"]


def test_a_bmc_without_trusted_components_is_unsupported_not_empty(rf):
    tree = rf.load_mockup("public-tower")
    system = tree["/redfish/v1/Systems"]["Members"][0]["@odata.id"]
    facts = inventory.gather(rf.make_client(rf.FakeTransport(tree)), None, ("system", "tpm"))
    assert facts["tpm"] is None and "tpm" in facts["unsupported"]
    assert _read(rf, tree, system) is None


def _set(path, key, value):
    def change(tree):
        if value is _DROP:
            del tree[path][key]
        else:
            tree[path][key] = value
    return change


_DROP = object()
_GARBLED = "-----BEGIN CERTIFICATE-----\nMIIB!!notbase64\n-----END CERTIFICATE-----\n"
_NOT_X509 = "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n" % base64.b64encode(
    b"\x04\x03abc").decode()


def _two_for_pem(tree):
    tree[EK_RSA]["CertificateString"] += tree[EK_RSA]["CertificateString"]


@pytest.mark.parametrize("change, error, reason", [
    (_set(EK_RSA, "CertificateString", "not a certificate"), BmcResponseError, "bad_certificate"),
    (_set(EK_RSA, "CertificateString", _GARBLED), BmcResponseError, "bad_certificate"),
    (_set(EK_RSA, "CertificateString", _NOT_X509), BmcResponseError, "bad_certificate"),
    (_two_for_pem, BmcResponseError, "bad_certificate"),
    (_set(EK_RSA, "CertificateType", "PKCS7"), BmcResponseError, "unsupported_type"),
    (_set(EK_RSA, "CertificateString", _DROP), BmcResponseError, "no_certificate"),
    (_set(TC + "/TPM0/Certificates", "Members", []), DiscoveryError, "no_certificate"),
    (_set(TC + "/TPM0", "Certificates", _DROP), DiscoveryError, "no_certificate"),
    (_set("/redfish/v1/ComponentIntegrity/TPM0", "ComponentIntegrityType", "SPDM"), DiscoveryError, "no_tpm"),
], ids=["not-pem", "bad-base64", "not-x509", "two-for-pem", "pkcs7", "no-string", "empty-collection",
        "no-certificates-link", "no-tpm"])
def test_refusals_name_their_reason(rf, change, error, reason):
    tree = copy.deepcopy(rf.load_tree("trusted-components"))
    change(tree)
    with pytest.raises(error) as caught:
        _read(rf, tree)
    assert caught.value.details["reason"] == reason and str(caught.value).endswith("(reason: %s)" % reason)
    assert "node-1" in str(caught.value) and "tpm2_getekcertificate" in str(caught.value)


def test_a_certificate_string_of_the_wrong_type_is_a_named_error(rf):
    tree = rf.load_tree("trusted-components")
    tree[EK_RSA]["CertificateString"] = 42
    with pytest.raises(BmcResponseError, match="CertificateString"):
        _read(rf, tree)


def test_pem_blocks_keeps_every_block_in_order(rf):
    tree = rf.load_tree("trusted-components")
    text = tree[EK_ECC]["CertificateString"]
    blocks = pem_blocks(text, EK_ECC)
    assert [hashlib.sha256(der).hexdigest() for _pem, der in blocks][0] == _sha256(text)
    assert "".join(pem for pem, _der in blocks).split() == text.split()


def test_without_the_cryptography_library_the_tpm_part_names_it_and_reads_nothing_as_valid(rf, monkeypatch):
    monkeypatch.setattr(trusted_components, "HAS_CRYPTOGRAPHY", False)
    with pytest.raises(DiscoveryError) as caught:
        _read(rf, rf.load_tree("trusted-components"))
    assert caught.value.details["reason"] == "missing_library"
    assert "pip install cryptography" in str(caught.value)
