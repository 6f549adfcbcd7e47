"""The lab's installer: what a node boots from virtual media to write its disk.

A node powered on with its boot override on ``Cd`` and media inserted "boots the
installer": the installer downloads the media (the signed rootfs artifact) and its
manifest and signature from the same location with the deploy agent's code, verifies them
with the collection's ``image.verify`` (signature by the trusted key, artifact sha256 and
size), and only then writes the node's disk: the docker image the node's container starts from. An
artifact that does not verify is refused and the disk is left as it was.
"""
import os
import shutil
import threading
import urllib.parse

from lab.twin.errors import LabError

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from gpufleet.deploy.fetch import MANIFEST, SIGNATURE, Fetcher
from gpufleet.image.importer import docker_import_command
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image

__all__ = ["Installer", "MANIFEST", "SIGNATURE", "disk_tag", "import_disk", "verify_built"]


def verify_built(manifest_path, public_key_path, version=None):
    """Verify a built image on disk (signature, artifact digest, version) or raise LabError."""
    try:
        with open(public_key_path, "rb") as handle:
            key = handle.read()
    except OSError as exc:
        raise LabError("Cannot read the trusted image key %s: %s. Build the lab image (`make image-lab`)."
                       % (public_key_path, exc))
    try:
        return verify_image(manifest_path, key, expected_version=version, key_where=public_key_path)
    except GpufleetError as exc:
        raise LabError("The lab refuses image %s: %s" % (manifest_path, exc.msg))


def disk_tag(repository, summary):
    """The docker image (the lab's "disk") of a verified artifact: one per artifact digest."""
    return "%s:sha256-%s" % (repository, summary["artifact_sha256"][:20])


def import_disk(docker, repository, summary):
    """Import a verified artifact as its disk image unless that digest's image exists; the tag.

    LAB SIMULATION: a real installer writes the machine's disk and has no such step. ``lab
    publish`` calls it for the image it has just verified, so the first bring-up of a fresh lab
    does not wait for the import (seconds on 2 cores); the installer still downloads and
    verifies the media of every install before it boots the disk.
    """
    tag = disk_tag(repository, summary)
    if not docker.exists("image", tag):
        argv = docker_import_command(summary["artifact"], tag, summary)
        docker(*argv[1:])
    return tag


class Installer:
    """Download, verify, and write a node's disk (a docker image) from virtual media.

    Download and verification are the deploy agent's (``gpufleet.deploy.fetch``): the signed
    manifest is checked before the artifact is requested, and the artifact is streamed with its
    length bounded by the manifest. Only the last step differs from a real machine: the "disk"
    is a docker image instead of an NVMe namespace.
    """

    def __init__(self, docker, public_key_path, work_dir, repository, fetcher=None):
        self.docker = docker
        self.public_key_path = public_key_path
        self.work_dir = work_dir
        self.repository = repository
        # The lab's artifact server is plain http on loopback: the signature protects the bytes.
        self.fetcher = fetcher or Fetcher(allow_http=True)
        # Nodes install in parallel (one worker thread each); the import of one artifact
        # into docker must happen once, not once per node.
        self._import_lock = threading.Lock()

    def fetch(self, node, media_url):
        """Verify the manifest, then copy it, its signature and the media into a per-node folder."""
        parsed = urllib.parse.urlsplit(media_url)
        if parsed.scheme not in ("http", "https"):
            raise LabError("Installer on %s: virtual media URL %s is not http(s)." % (node, media_url))
        folder = os.path.join(self.work_dir, node)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        manifest, manifest_bytes, signature = self.fetcher.verified_manifest(
            media_url, self._public_key(), key_where=self.public_key_path)
        for name, body in ((MANIFEST, manifest_bytes), (SIGNATURE, signature)):
            with open(os.path.join(folder, name), "wb") as handle:
                handle.write(body)
        artifact = os.path.join(folder, manifest["artifact"]["name"])
        self.fetcher.download(media_url, artifact, manifest["artifact"]["size"])
        return folder, artifact

    def _public_key(self):
        try:
            with open(self.public_key_path, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise LabError("Installer: cannot read the trusted image key %s: %s. Build the lab image "
                           "(`make image-lab`) so its public key exists." % (self.public_key_path, exc))

    def _disk_image(self, summary):
        """Docker image for a verified artifact; imported once per artifact digest."""
        with self._import_lock:
            return import_disk(self.docker, self.repository, summary)

    def install(self, node, media_url):
        """Verify the media and return the disk record; raises LabError when refused."""
        try:
            folder, artifact = self.fetch(node, media_url)
            summary = verify_image(os.path.join(folder, MANIFEST), self._public_key(),
                                   artifact_path=artifact, key_where=self.public_key_path)
            disk = self._disk_image(summary)
        except GpufleetError as exc:
            raise LabError("Installer on %s refused virtual media %s: %s" % (node, media_url, exc.msg),
                           node=node, media=media_url)
        finally:
            shutil.rmtree(os.path.join(self.work_dir, node), ignore_errors=True)
        return {"disk": disk, "version": summary["version"], "artifact_sha256": summary["artifact_sha256"],
                "media": media_url, "key_id": summary["key_id"]}
