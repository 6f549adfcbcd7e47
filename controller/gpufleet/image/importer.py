# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Import a verified rootfs artifact into docker (the lab's node image).

Verification comes first and cannot be skipped: an unsigned, altered or wrong-key
artifact raises VerificationError and docker is never called.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image

__all__ = ["DEFAULT_REPOSITORY", "docker_import_command", "import_verified"]

DEFAULT_REPOSITORY = "gpufleet/node"


def docker_import_command(artifact_path, tag, summary):
    """argv of ``docker import`` with labels that tie the image to its signed manifest."""
    labels = {
        "org.gpufleet.image.version": summary["version"],
        "org.gpufleet.image.build-id": summary["build_id"],
        "org.gpufleet.image.pins-sha256": summary["pins_sha256"],
        "org.gpufleet.image.artifact-sha256": summary["artifact_sha256"],
    }
    argv = ["docker", "import", "-c", 'CMD ["/bin/bash"]', "-c", "ENV LANG=C.UTF-8"]
    for key in sorted(labels):
        argv += ["-c", "LABEL %s=%s" % (key, labels[key])]
    return argv + [artifact_path, tag]


def _default_run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def import_verified(manifest_path, public_key_pem, tag=None, run=None, expected_version=None):
    """Verify, then ``docker import`` the artifact as ``tag`` (default ``gpufleet/node:<version>``).

    Returns the verification summary plus ``image_id`` and ``tag``.
    """
    summary = verify_image(manifest_path, public_key_pem, expected_version=expected_version)
    tag = tag or "%s:%s" % (DEFAULT_REPOSITORY, summary["version"])
    if not summary["artifact"].endswith(".tar.gz"):
        raise ImageError("Artifact %s is not a rootfs tarball (docker builder); only those can be docker-imported."
                         % summary["artifact"])
    rc, out, err = (run or _default_run)(docker_import_command(summary["artifact"], tag, summary))
    if rc != 0:
        raise ImageError("docker import of %s as %s failed (rc=%d): %s. Check that dockerd runs."
                         % (summary["artifact"], tag, rc, err.strip()[-500:]), tag=tag)
    summary["image_id"] = out.strip()
    summary["tag"] = tag
    return summary
