# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Build provenance: an in-toto Statement v1 with a SLSA provenance v1 predicate."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

__all__ = ["BUILD_TYPE", "STATEMENT_TYPE", "PREDICATE_TYPE", "provenance_statement"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://gpufleet.invalid/image-build/v1"


def _rfc3339(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def provenance_statement(artifact, build, inputs, builder_id):
    """``artifact``: {name, sha256}; ``build``: {version, builder, build_id, started, finished, packer_version};
    ``inputs``: [{uri, sha256}] (templates, scripts, pin file, base image)."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": artifact["name"], "digest": {"sha256": artifact["sha256"]}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"image_version": build["version"], "builder": build["builder"]},
                "internalParameters": {"packer_version": build["packer_version"]},
                "resolvedDependencies": [{"uri": i["uri"], "digest": {"sha256": i["sha256"]}} for i in inputs],
            },
            "runDetails": {
                "builder": {"id": builder_id},
                "metadata": {
                    "invocationId": build["build_id"],
                    "startedOn": _rfc3339(build["started"]),
                    "finishedOn": _rfc3339(build["finished"]),
                },
            },
        },
    }
