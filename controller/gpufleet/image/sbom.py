# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""SPDX 2.3 JSON SBOM of an image's Debian packages (deterministic for one build id)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

__all__ = ["spdx_document"]


def _spdx_id(name, version):
    return "SPDXRef-Package-deb-" + re.sub(r"[^A-Za-z0-9.-]", "-", "%s-%s" % (name, version))


def _purl(pkg, os_id, os_version_id):
    version = pkg["version"].replace(":", "%3A").replace("+", "%2B")
    return "pkg:deb/%s/%s@%s?arch=%s&distro=%s-%s" % (os_id, pkg["name"], version, pkg["arch"], os_id, os_version_id)


def _package(pkg, os_id, os_version_id):
    return {
        "SPDXID": _spdx_id(pkg["name"], pkg["version"]),
        "name": pkg["name"],
        "versionInfo": pkg["version"],
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "supplier": "NOASSERTION",
        "externalRefs": [{
            "referenceCategory": "PACKAGE-MANAGER",
            "referenceType": "purl",
            "referenceLocator": _purl(pkg, os_id, os_version_id),
        }],
    }


def spdx_document(image_version, build_id, artifact_name, packages, os_id, os_version_id, created_epoch):
    """The SBOM as a dict: one SPDX package per installed Debian package, all CONTAINED_BY the image."""
    image_id = "SPDXRef-Image"
    items = [_package(p, os_id, os_version_id) for p in packages]
    image = {
        "SPDXID": image_id, "name": "gpufleet-node-image", "versionInfo": image_version,
        "packageFileName": artifact_name, "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
        "licenseConcluded": "NOASSERTION", "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "OPERATING-SYSTEM",
    }
    relationships = [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": image_id}]
    relationships.extend({"spdxElementId": image_id, "relationshipType": "CONTAINS", "relatedSpdxElement": p["SPDXID"]}
                         for p in items)
    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": "gpufleet-node-image-%s" % image_version,
        "documentNamespace": "https://gpufleet.invalid/spdx/%s" % build_id,
        "creationInfo": {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created_epoch)),
            "creators": ["Tool: gpufleet-image"],
        },
        "packages": [image] + items,
        "relationships": relationships,
    }
