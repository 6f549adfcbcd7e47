"""The lab's installer: what a node boots from virtual media to write its disk.

A node powered on with its boot override on ``Cd`` and media inserted "boots the
installer": the installer downloads the media (the signed rootfs artifact) and its
manifest and signature from the same location, verifies them with the collection's
``image.verify`` (signature by the trusted key, artifact sha256 and size), and only
then writes the node's disk: the docker image the node's container starts from. An
artifact that does not verify is refused and the disk is left as it was.
"""
import os
import posixpath
import shutil
import threading
import urllib.parse

import requests

from lab.twin.errors import LabError

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from gpufleet.image.importer import docker_import_command
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image

__all__ = ["Installer", "MANIFEST", "SIGNATURE", "verify_built"]

MANIFEST = "manifest.json"
SIGNATURE = MANIFEST + ".sig"
_CHUNK = 1 << 20


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


class Installer:
    """Download, verify, and write a node's disk (a docker image) from virtual media."""

    def __init__(self, docker, public_key_path, work_dir, repository, http=None):
        self.docker = docker
        self.public_key_path = public_key_path
        self.work_dir = work_dir
        self.repository = repository
        self.http = http or requests.Session()
        # Nodes install in parallel (one worker thread each); the import of one artifact
        # into docker must happen once, not once per node.
        self._import_lock = threading.Lock()

    def _download(self, url, dest):
        try:
            with self.http.get(url, stream=True, timeout=60) as rsp:
                if rsp.status_code != 200:
                    raise LabError("Installer: GET %s answered HTTP %d. Check the virtual media URL."
                                   % (url, rsp.status_code), url=url, status=rsp.status_code)
                with open(dest, "wb") as handle:
                    for block in rsp.iter_content(_CHUNK):
                        handle.write(block)
        except requests.RequestException as exc:
            raise LabError("Installer: cannot download %s: %s. Is the lab's artifact server up "
                           "(`gpufleet lab status`)?" % (url, exc), url=url)

    def fetch(self, node, media_url):
        """Copy the media and its manifest + signature into a per-node work folder."""
        parsed = urllib.parse.urlsplit(media_url)
        if parsed.scheme not in ("http", "https"):
            raise LabError("Installer on %s: virtual media URL %s is not http(s)." % (node, media_url))
        name = posixpath.basename(parsed.path)
        folder = os.path.join(self.work_dir, node)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        base = media_url[:media_url.rindex("/") + 1]
        for item in (MANIFEST, SIGNATURE, name):
            self._download(urllib.parse.urljoin(base, item), os.path.join(folder, item))
        return folder, os.path.join(folder, name)

    def _public_key(self):
        try:
            with open(self.public_key_path, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise LabError("Installer: cannot read the trusted image key %s: %s. Build the lab image "
                           "(`make image-lab`) so its public key exists." % (self.public_key_path, exc))

    def _disk_image(self, summary):
        """Docker image for a verified artifact; imported once per artifact digest."""
        tag = "%s:sha256-%s" % (self.repository, summary["artifact_sha256"][:20])
        with self._import_lock:
            if not self.docker.exists("image", tag):
                argv = docker_import_command(summary["artifact"], tag, summary)
                self.docker(*argv[1:])
        return tag

    def install(self, node, media_url):
        """Verify the media and return the disk record; raises LabError when refused."""
        folder, artifact = self.fetch(node, media_url)
        try:
            summary = verify_image(os.path.join(folder, MANIFEST), self._public_key(),
                                   artifact_path=artifact, key_where=self.public_key_path)
            disk = self._disk_image(summary)
        except GpufleetError as exc:
            raise LabError("Installer on %s refused virtual media %s: %s" % (node, media_url, exc.msg),
                           node=node, media=media_url)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return {"disk": disk, "version": summary["version"], "artifact_sha256": summary["artifact_sha256"],
                "media": media_url, "key_id": summary["key_id"]}
