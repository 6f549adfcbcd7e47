# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The image manifest: what is inside an artifact and how it was built.

The manifest is canonical JSON (sorted keys, UTF-8, newline-terminated) so its bytes
are stable; the detached signature covers those bytes. The artifact sha256 is inside
the manifest, so one signature protects both. The manifest digest cannot be inside the
artifact it describes; the artifact instead carries BUILD_ID and PINS_SHA256 in
/etc/gpufleet/image-release, which the manifest repeats.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

__all__ = ["SCHEMA", "canonical_json", "expected_release", "build_manifest", "parse_manifest"]

SCHEMA = "gpufleet.image-manifest/v1"
REQUIRED = ("schema", "version", "build_id", "pins_sha256", "artifact", "signer", "release")


def canonical_json(document):
    """Stable bytes for a JSON document: sorted keys, 2-space indent, trailing newline."""
    return (json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def expected_release(manifest):
    """The image-release values a node running this manifest's artifact must carry."""
    return dict(manifest["release"])


def build_manifest(pins, build, artifact, packages, kernels, release, sbom_ref, provenance, signer):
    """Assemble the manifest dict. ``build``: {build_id, builder, started, finished, packer_version}."""
    requested = pins.packages
    installed = dict((p["name"], p["version"]) for p in packages)
    return {
        "schema": SCHEMA,
        "version": pins.version,
        "build_id": build["build_id"],
        "builder": build["builder"],
        "pins_sha256": pins.sha256,
        "profile": pins.data["profile"],
        "os": dict(pins.data["os"]),
        "kernel": {"installed": list(kernels)},
        "components": dict((name, {"version": comp["version"], "packages": sorted(comp["packages"])})
                           for name, comp in pins.data["components"].items()),
        "pins": {"requested": requested, "installed": dict((n, installed.get(n)) for n in sorted(requested))},
        "packages": packages,
        "artifact": artifact,
        "release": release,
        "sbom": sbom_ref,
        "provenance": provenance,
        "signer": signer,
    }


def parse_manifest(data, where="manifest"):
    """Bytes -> manifest dict, with the fields verification relies on checked."""
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError("%s is not valid JSON: %s. It is damaged or not a gpufleet manifest; refuse it."
                            % (where, exc))
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise ManifestError("%s is not a %s document. Give the manifest.json written by `gpufleet image build`."
                            % (where, SCHEMA))
    missing = [k for k in REQUIRED if k not in manifest]
    artifact = manifest.get("artifact") or {}
    if missing or not all(k in artifact for k in ("name", "sha256", "size")):
        raise ManifestError("%s lacks %s. Rebuild the image." % (where, ", ".join(missing) or "artifact name/sha256/size"))
    return manifest
