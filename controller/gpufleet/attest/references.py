"""Reference PCR values per image version and firmware version, signed with the image key.

The file is canonical JSON like an image manifest, with a detached signature beside it
(``<file>.sig``) made by the same code and key (plugins/module_utils/image/signing.py):

    {"schema": "gpufleet.pcr-references/v1", "signer": {"key_id": ..., "algorithm": ...},
     "references": [{"image_version": "2024.06.1", "firmware_version": "1.2.3",
                     "pcrs": {"sha256": {"0": "<hex>", "7": "<hex>"}}}]}

Loading fails closed: unsigned, another signer, altered, malformed or no entry for the node's
versions all raise PcrReferenceError; nothing is returned for a file that did not verify.
"""
import json
import re

from gpufleet.attest.errors import PcrReferenceError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import VerificationError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import canonical_json

__all__ = ["SCHEMA", "build_references", "load_references", "merge_entry", "parse_pcrread", "parse_references",
           "read_verified"]

SCHEMA = "gpufleet.pcr-references/v1"
_BANKS = {"sha1": 40, "sha256": 64, "sha384": 96, "sha512": 128}


def build_references(entries, private_key):
    """(document bytes, signature bytes) for ``entries`` [{image_version, firmware_version, pcrs}]."""
    public = private_key.public_key()
    document = {"schema": SCHEMA, "signer": {"key_id": signing.key_id(public),
                                             "algorithm": signing.algorithm_of(public)},
                "references": list(entries)}
    data = canonical_json(document)
    parse_references(data, "the new reference file")
    return data, signing.sign(private_key, data)


def parse_pcrread(text, where):
    """What ``tpm2_pcrread sha256:0,1,...`` printed -> {bank: {index (str): hex}}; PcrReferenceError otherwise.

    Every line must be a bank (``  sha256:``) or a PCR of the bank above it (``    0 : 0x3D...``);
    anything else is refused rather than skipped, so a truncated or foreign capture cannot make
    a reference file with PCRs missing.
    """
    pcrs, bank = {}, None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        bank_line = re.match(r"^\s*(sha1|sha256|sha384|sha512)\s*:\s*$", line)
        pcr_line = re.match(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$", line)
        if bank_line:
            bank = bank_line.group(1)
            pcrs.setdefault(bank, {})
        elif pcr_line and bank is not None:
            pcrs[bank][str(int(pcr_line.group(1)))] = pcr_line.group(2).lower()
        else:
            raise PcrReferenceError("%s line %d is not tpm2_pcrread output (expected '  sha256:' or '    0 : 0x<hex>'): "
                                    "%r. Pass what tpm2_pcrread printed, unchanged." % (where, number, line[:80]),
                                    path=where)
    pcrs = dict((name, values) for name, values in pcrs.items() if values)
    if not pcrs:
        raise PcrReferenceError("%s holds no PCR values. Pass what tpm2_pcrread sha256:0,1,2,3,4,5,6,7 printed."
                                % where, path=where)
    _check_pcrs(pcrs, where, 0)
    return pcrs


def merge_entry(entries, entry, replace=False):
    """``entries`` with ``entry`` added; one for the same image and firmware version is refused unless ``replace``."""
    key = (entry["image_version"], entry["firmware_version"])
    kept = [e for e in entries if (e["image_version"], e["firmware_version"]) != key]
    if len(kept) != len(entries) and not replace:
        raise PcrReferenceError("The reference file already has an entry for image %s with firmware %s. Pass "
                                "--replace to record the new values instead." % key)
    return sorted(kept + [entry], key=lambda e: (e["image_version"], e["firmware_version"]))


def _check_pcrs(pcrs, where, number):
    if not isinstance(pcrs, dict) or not pcrs:
        raise PcrReferenceError("%s references[%d].pcrs must map a bank (sha256) to {PCR index: hex value}."
                                % (where, number))
    for bank, values in pcrs.items():
        if bank not in _BANKS or not isinstance(values, dict) or not values:
            raise PcrReferenceError("%s references[%d].pcrs.%s: the bank must be one of %s and hold {PCR index: "
                                    "hex value}." % (where, number, bank, ", ".join(sorted(_BANKS))))
        for index, value in values.items():
            if not re.match(r"^([0-9]|1[0-9]|2[0-3])$", str(index)):
                raise PcrReferenceError("%s references[%d].pcrs.%s: %r is not a PCR index (0-23)."
                                        % (where, number, bank, index))
            if not isinstance(value, str) or not re.match(r"^[0-9a-f]{%d}$" % _BANKS[bank], value):
                raise PcrReferenceError("%s references[%d].pcrs.%s.%s must be %d lowercase hex digits."
                                        % (where, number, bank, index, _BANKS[bank]))


def parse_references(data, where):
    """Bytes -> the document, with every field verification relies on checked."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PcrReferenceError("%s is not valid JSON: %s. It is damaged or not a reference file; refusing it."
                                % (where, exc), path=where)
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise PcrReferenceError("%s is not a %s document (field schema)." % (where, SCHEMA), path=where)
    entries = document.get("references")
    if not isinstance(entries, list) or not entries:
        raise PcrReferenceError("%s has no references list. Add one entry per image and firmware version."
                                % where, path=where)
    seen = set()
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry.get(k)
                                                  for k in ("image_version", "firmware_version")):
            raise PcrReferenceError("%s references[%d] needs image_version and firmware_version (strings)."
                                    % (where, number), path=where)
        key = (entry["image_version"], entry["firmware_version"])
        if key in seen:
            raise PcrReferenceError("%s lists image %s with firmware %s twice; keep one entry." % ((where,) + key),
                                    path=where)
        seen.add(key)
        _check_pcrs(entry.get("pcrs"), where, number)
    return document


def read_verified(path, public_key_pem, signature_path=None, key_where="image public key"):
    """The document of the reference file at ``path`` once its signature verifies; PcrReferenceError otherwise."""
    signature_path = signature_path or path + ".sig"
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise PcrReferenceError("Cannot read the reference file %s: %s. Give the signed PCR reference file."
                                % (path, exc.strerror or exc), path=path)
    try:
        with open(signature_path, "rb") as handle:
            signature = handle.read()
    except (IOError, OSError) as exc:
        raise PcrReferenceError("The reference file %s is unsigned: cannot read %s (%s). Refusing it; sign it with "
                                "the image key." % (path, signature_path, exc.strerror or exc), path=signature_path)
    try:
        public_key = signing.load_public_key(public_key_pem, key_where)
    except VerificationError as exc:
        raise PcrReferenceError(exc.msg, path=key_where)
    document = parse_references(data, path)
    trusted, signer = signing.key_id(public_key), (document.get("signer") or {}).get("key_id")
    if signer != trusted:
        raise PcrReferenceError("The reference file %s was signed by key %s, not by the trusted image key %s (%s). "
                                "Refusing it." % (path, signer, trusted, key_where), path=path)
    if not signing.verify_signature(public_key, data, signature):
        raise PcrReferenceError("The signature of %s does not verify with key %s: the file was altered after "
                                "signing. Refusing it." % (path, trusted), path=path)
    return document


def load_references(path, public_key_pem, image_version, firmware_version, signature_path=None,
                    key_where="image public key"):
    """The verified {bank: {index: hex}} for one image and firmware version; PcrReferenceError otherwise."""
    document = read_verified(path, public_key_pem, signature_path, key_where)
    for entry in document["references"]:
        if entry["image_version"] == image_version and entry["firmware_version"] == firmware_version:
            return entry["pcrs"]
    raise PcrReferenceError("The reference file %s has no entry for image %s with firmware %s. Refusing the node: "
                            "measure a known-good node of that image and firmware and add its PCRs."
                            % (path, image_version, firmware_version), path=path)
