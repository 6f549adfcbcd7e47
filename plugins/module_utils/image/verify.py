# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Verify an image before anything images a node from it (fail closed).

Order: signature present -> manifest parses -> signer key id matches the trusted key ->
signature verifies over the manifest bytes -> artifact size and sha256 match the
manifest -> optional expected version. Any failure raises VerificationError naming
the file and the fix; nothing is returned for an artifact that did not verify.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import artifact as artifact_mod
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError, VerificationError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import expected_release, parse_manifest

__all__ = ["verify_manifest_bytes", "verify_image"]


def _read(path, what, fix):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise VerificationError("Cannot read the %s %s: %s. %s" % (what, path, exc.strerror or exc, fix), path=path)


def verify_manifest_bytes(manifest_bytes, signature, public_key_pem, where="manifest", key_where="public key"):
    """Check the signature over manifest bytes; return the parsed manifest."""
    public_key = signing.load_public_key(public_key_pem, key_where)
    try:
        manifest = parse_manifest(manifest_bytes, where)
    except ManifestError as exc:
        raise VerificationError(exc.msg, path=where)
    trusted = signing.key_id(public_key)
    signer = (manifest.get("signer") or {}).get("key_id")
    if signer != trusted:
        raise VerificationError("Image %s was signed by key %s, not by the trusted key %s (%s). Refusing it: use the "
                                "public key of the image's signer, or re-sign the image with your key."
                                % (where, signer, trusted, key_where), signer_key_id=signer, trusted_key_id=trusted)
    if not signing.verify_signature(public_key, manifest_bytes, signature):
        raise VerificationError("The signature of %s does not verify with key %s: the manifest was altered after "
                                "signing. Refusing it; rebuild or re-download the image." % (where, trusted),
                                trusted_key_id=trusted)
    return manifest


def _check_artifact(manifest, artifact_path):
    expected = manifest["artifact"]
    if not os.path.isfile(artifact_path):
        raise VerificationError("Artifact %s named by the manifest does not exist. Copy it beside the manifest or "
                                "pass its path." % artifact_path, path=artifact_path)
    size = os.path.getsize(artifact_path)
    digest = artifact_mod.sha256_file(artifact_path)
    if size != expected["size"] or digest != expected["sha256"]:
        raise VerificationError("Artifact %s was altered: sha256 %s (%d bytes), the signed manifest says %s (%d bytes). "
                                "Refusing it; rebuild or re-download the image."
                                % (artifact_path, digest, size, expected["sha256"], expected["size"]),
                                path=artifact_path, sha256=digest, expected_sha256=expected["sha256"])
    return digest


def verify_image(manifest_path, public_key_pem, signature_path=None, artifact_path=None, expected_version=None,
                 key_where="public key"):
    """Verify manifest, signature and artifact; return a summary dict of what verified."""
    signature_path = signature_path or manifest_path + ".sig"
    manifest_bytes = _read(manifest_path, "manifest", "Give the manifest.json of a gpufleet image build.")
    if not os.path.isfile(signature_path):
        raise VerificationError("Image %s is unsigned: no signature at %s. Refusing it; sign it with `gpufleet image "
                                "sign` or pass the signature path." % (manifest_path, signature_path),
                                path=signature_path)
    signature = _read(signature_path, "signature", "Pass the detached signature of the manifest.")
    manifest = verify_manifest_bytes(manifest_bytes, signature, public_key_pem, manifest_path, key_where)
    artifact_path = artifact_path or os.path.join(os.path.dirname(manifest_path), manifest["artifact"]["name"])
    digest = _check_artifact(manifest, artifact_path)
    if expected_version is not None and manifest["version"] != expected_version:
        raise VerificationError("Image %s is version %s, not the expected %s. Pick the manifest of version %s."
                                % (manifest_path, manifest["version"], expected_version, expected_version))
    return {
        "version": manifest["version"],
        "build_id": manifest["build_id"],
        "pins_sha256": manifest["pins_sha256"],
        "artifact": artifact_path,
        "artifact_sha256": digest,
        "key_id": manifest["signer"]["key_id"],
        "release": expected_release(manifest),
        "manifest": manifest_path,
    }
