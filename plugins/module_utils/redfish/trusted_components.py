# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""A TPM's certificates as the BMC reports them: Chassis -> TrustedComponents -> Certificates.

The DMTF path (TrustedComponent v1.0, Redfish 2022.2) is
``/redfish/v1/Chassis/{id}/TrustedComponents/{id}/Certificates/{id}``, each certificate a PEM
``CertificateString``. A trusted component is a TPM when it carries the ``TPM`` object
(TrustedComponent v1.1, 2023.1) or links a ``ComponentIntegrity`` of type ``TPM`` (2021.4).
The chassis read are those of the system (``Links.Chassis``), else every chassis.

Fail-closed: a BMC without TrustedComponents gives ``None`` (the part is not offered; the
caller lists it as unsupported). Trusted components without a TPM, a TPM without
certificates, and a certificate that is not a readable PEM X.509 certificate are errors
whose ``details["reason"]`` says which, never an empty list. The PEM is only checked for
shape here; its chain is checked by ``gpufleet attest`` against the site's EK CA bundle.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

try:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    HAS_CRYPTOGRAPHY = True
except ImportError:  # the tpm part says so when it is asked for
    HAS_CRYPTOGRAPHY = False

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError, DiscoveryError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["HAS_CRYPTOGRAPHY", "tpm_certificates", "certificate_facts", "pem_blocks"]

CERTIFICATE_TYPES = ("PEM", "PEMchain")
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)
_IN_BAND = "Read it on the node instead (tpm2_getekcertificate; see docs/attestation-fleets.md)."


def _refuse(cls, msg, reason, **details):
    """The error ``cls`` with ``reason`` in its details and at the end of its message (a failed
    node of a fan-out keeps only the message)."""
    return cls("%s (reason: %s)" % (msg, reason), reason=reason, **details)


def _der_certificate(pem):
    """The DER bytes of one PEM certificate block, parsed as X.509 by ``cryptography`` (ValueError
    when it is not one)."""
    return x509.load_pem_x509_certificate(pem.encode("ascii")).public_bytes(Encoding.DER)


def pem_blocks(text, where, node=""):
    """The certificates of a PEM string as [(pem, der)]; BmcResponseError when there is none or
    one does not decode to an X.509 certificate's DER shape."""
    blocks = list(_PEM.finditer(text))
    if not blocks or _PEM.sub("", text).strip():
        why = "no BEGIN CERTIFICATE block" if not blocks else "text outside the PEM blocks"
        raise _refuse(BmcResponseError, "BMC of node %s answered %s with a CertificateString that is "
                      "not PEM certificates (%s). Check the BMC firmware, or report it. %s"
                      % (node, where, why, _IN_BAND), "bad_certificate",
                      node=node, url=where, field="CertificateString")
    if not HAS_CRYPTOGRAPHY:
        raise _refuse(DiscoveryError, "Reading the TPM certificates of node %s needs the Python library "
                      "cryptography on the controller: pip install cryptography" % node, "missing_library",
                      node=node, url=where)
    found = []
    for index, block in enumerate(blocks):
        try:
            der = _der_certificate(block.group(0))
        except (ValueError, UnicodeEncodeError) as exc:
            raise _refuse(BmcResponseError, "BMC of node %s answered %s with PEM block %d that is not "
                          "an X.509 certificate (%s). Check the BMC firmware, or report it. %s"
                          % (node, where, index + 1, exc, _IN_BAND), "bad_certificate",
                          node=node, url=where, field="CertificateString")
        found.append((block.group(0) + "\n", der))
    return found


def _checked_blocks(cert):
    """The PEM blocks of one Certificate (Fields), refused unless its type and count fit."""
    kind = cert.text("CertificateType")
    if kind is not None and kind not in CERTIFICATE_TYPES:
        raise _refuse(BmcResponseError, "BMC of node %s answered %s with CertificateType %s; only %s "
                      "can be read. %s" % (cert.node, cert.where, kind, " or ".join(CERTIFICATE_TYPES),
                                           _IN_BAND), "unsupported_type",
                      node=cert.node, url=cert.where, field="CertificateType")
    text = cert.text("CertificateString")
    if not text:
        raise _refuse(BmcResponseError, "BMC of node %s answered %s without a CertificateString. %s"
                      % (cert.node, cert.where, _IN_BAND), "no_certificate",
                      node=cert.node, url=cert.where, field="CertificateString")
    blocks = pem_blocks(text, cert.where, cert.node)
    if kind == "PEM" and len(blocks) != 1:
        raise _refuse(BmcResponseError, "BMC of node %s answered %s with %d certificates for "
                      "CertificateType PEM (one expected). %s"
                      % (cert.node, cert.where, len(blocks), _IN_BAND), "bad_certificate",
                      node=cert.node, url=cert.where, field="CertificateString")
    return kind, blocks


def certificate_facts(cert):
    """One Certificate (Fields) as a dict: the leaf PEM, its chain, usages and SHA-256 of the DER."""
    kind, blocks = _checked_blocks(cert)
    return dict(id=cert.text("Id", required=True), path=cert.where, certificate_type=kind,
                usage_types=cert.texts("CertificateUsageTypes") or [], pem=blocks[0][0],
                chain=[pem for pem, _der in blocks[1:]], sha256=hashlib.sha256(blocks[0][1]).hexdigest())


def _chassis_paths(client, system_path):
    system = Fields(client.get(system_path), client.node, system_path)
    paths = [c.text("@odata.id", required=True) for c in system.sub("Links").objects("Chassis")]
    if paths:
        return paths
    chassis = discovery.link(client.get(discovery.ROOT), "Chassis", node=client.node)
    return discovery.members(client, chassis) if chassis else []


def _is_tpm(client, component):
    if component.get("TPM", "object") is not None:
        return True
    for ref in component.sub("Links").objects("ComponentIntegrity"):
        path = ref.text("@odata.id", required=True)
        integrity = discovery.optional(client, path)
        if integrity is not None and Fields(integrity, client.node, path).text(
                "ComponentIntegrityType") == "TPM":
            return True
    return False


def _certificates(client, component):
    path = component.link("Certificates")
    if not path or discovery.optional(client, path) is None:
        found = []
    else:
        found = [certificate_facts(Fields(client.get(p), client.node, p))
                 for p in discovery.members(client, path)]
    if not found:
        why = "no Certificates link" if not path else path + " is empty or absent"
        raise _refuse(DiscoveryError, "BMC of node %s reports TPM %s without certificates (%s). %s"
                      % (client.node, component.where, why, _IN_BAND), "no_certificate",
                      node=client.node, url=component.where)
    return found


def _component_facts(client, component, chassis_path):
    tpm = component.sub("TPM")
    return dict(id=component.text("Id", required=True), path=component.where, chassis=chassis_path,
                type=component.text("TrustedComponentType", choices=("Discrete", "Integrated")),
                manufacturer=component.text("Manufacturer"), model=component.text("Model"),
                firmware_version=component.text("FirmwareVersion"),
                vendor_id=tpm.text("CapabilitiesVendorID"), certificates=_certificates(client, component))


def tpm_certificates(client, system_path):
    """The TPMs of the system's chassis with their certificates, or None without TrustedComponents."""
    seen, tpms = [], []
    for chassis_path in _chassis_paths(client, system_path):
        chassis = discovery.optional(client, chassis_path)
        collection = discovery.link(chassis or {}, "TrustedComponents", node=client.node)
        if not collection or discovery.optional(client, collection) is None:
            continue
        for path in discovery.members(client, collection):
            component = Fields(client.get(path), client.node, path)
            seen.append(path)
            if _is_tpm(client, component):
                tpms.append(_component_facts(client, component, chassis_path))
    if not seen:
        return None
    if not tpms:
        ids = discovery.member_ids(seen)
        raise _refuse(DiscoveryError, "BMC of node %s lists trusted components (%s) but none is a TPM. %s"
                      % (client.node, ", ".join(ids), _IN_BAND), "no_tpm", node=client.node, available=ids)
    return tpms
