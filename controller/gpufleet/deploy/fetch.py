"""Download the signed manifest, its signature and the image, trusting only what was pinned.

HTTPS is checked against the CA the installer was built with (or handed), never the system's
CA store: a machine being imaged trusts its controller's CA and nothing else. Plain http is
refused unless the caller says ``allow_http`` (the lab's artifact server); the signature is
what protects the bytes either way, TLS adds privacy and a pinned server.

The manifest's signature is verified (``module_utils.image.verify.verify_manifest_bytes``,
the code ``image_verify`` runs) before a single image byte is requested, so a wrong key or an
altered manifest never reaches the disk. The image's own digest is checked as it streams
(``write.write_image``), before the disk is made bootable.
"""
import posixpath
import ssl
import urllib.error
import urllib.parse
import urllib.request

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_manifest_bytes

from gpufleet.deploy.errors import DeployError

__all__ = ["MANIFEST", "SIGNATURE", "MAX_MANIFEST_BYTES", "Fetcher", "image_urls"]

MANIFEST = "manifest.json"
SIGNATURE = MANIFEST + ".sig"
MAX_MANIFEST_BYTES = 16 << 20  # a manifest with a full package list is ~200 KiB
_BLOCK = 1 << 20


def image_urls(image_url):
    """(manifest URL, signature URL, artifact name) for an artifact URL: all three sit together."""
    parts = urllib.parse.urlsplit(image_url)
    name = posixpath.basename(parts.path)
    if not name:
        raise DeployError("download", "image URL %r names no file; fix: give the URL of the "
                          "whole-disk artifact" % image_url)
    base = image_url[:image_url.rindex("/") + 1]
    return base + MANIFEST, base + SIGNATURE, name


class Fetcher:
    """HTTP(S) downloads with a pinned CA, bounded sizes and timeouts."""

    def __init__(self, ca_file=None, allow_http=False, timeout=60, opener=None):
        self.allow_http = allow_http
        self.timeout = timeout
        try:
            self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        except (OSError, ssl.SSLError) as exc:
            raise DeployError("config", "cannot load the pinned CA %s (%s); fix: build the installer "
                              "with a PEM CA certificate" % (ca_file, exc))
        self._open = opener or self._urlopen

    def _urlopen(self, url):
        return urllib.request.urlopen(url, timeout=self.timeout, context=self.context)  # noqa: S310 - scheme checked

    def _check(self, url):
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme == "https":
            if self.context is None:
                raise DeployError("download", "no CA pinned for %s; fix: build the installer with "
                                  "--ca (the controller's CA certificate)" % url)
        elif scheme != "http" or not self.allow_http:
            raise DeployError("download", "refusing %s: only https is allowed; fix: serve the image "
                              "over https" % url)

    def open(self, url):
        """An open response for ``url`` (status 200) or DeployError naming the URL."""
        self._check(url)
        try:
            response = self._open(url)
        except urllib.error.HTTPError as exc:
            raise DeployError("download", "GET %s answered HTTP %d; fix: check that the image is "
                              "published there" % (url, exc.code), url=url, status=exc.code)
        except ssl.SSLError as exc:
            raise DeployError("download", "TLS to %s failed (%s); fix: the server's certificate "
                              "must chain to the pinned CA" % (url, exc.reason or exc), url=url)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DeployError("download", "cannot reach %s (%s); fix: check the management network "
                              "and the artifact server" % (url, reason), url=url)
        status = getattr(response, "status", 200)
        if status != 200:
            response.close()
            raise DeployError("download", "GET %s answered HTTP %d" % (url, status), url=url, status=status)
        return response

    def get(self, url, limit):
        """The whole body of ``url``, at most ``limit`` bytes."""
        with self.open(url) as response:
            try:
                body = response.read(limit + 1)
            except (OSError, ValueError) as exc:
                raise DeployError("download", "reading %s failed (%s); fix: re-run" % (url, exc), url=url)
        if len(body) > limit:
            raise DeployError("download", "%s is larger than %d bytes; fix: check the URL" % (url, limit), url=url)
        return body

    def blocks(self, url):
        """The body of ``url`` as an iterator of blocks (the caller bounds the total)."""
        response = self.open(url)
        try:
            while True:
                try:
                    block = response.read(_BLOCK)
                except (OSError, ValueError) as exc:
                    raise DeployError("download", "the download of %s broke off (%s); the disk is "
                                      "left unbootable; fix: re-run" % (url, exc), url=url)
                if not block:
                    return
                yield block
        finally:
            response.close()

    def verified_manifest(self, image_url, public_key_pem, expected_version=None, key_where="image key"):
        """Download and verify the manifest that names ``image_url``'s artifact.

        Returns (manifest, manifest bytes, signature bytes); raises DeployError before any
        artifact byte is requested when the signature, the signer, the name or the version is wrong.
        """
        manifest_url, signature_url, name = image_urls(image_url)
        manifest_bytes = self.get(manifest_url, MAX_MANIFEST_BYTES)
        signature = self.get(signature_url, 64 << 10)
        try:
            manifest = verify_manifest_bytes(manifest_bytes, signature, public_key_pem, manifest_url, key_where)
        except GpufleetError as exc:
            raise DeployError("verify", exc.msg, url=manifest_url)
        artifact = manifest["artifact"]
        if artifact["name"] != name:
            raise DeployError("verify", "the signed manifest at %s names artifact %s, not %s; fix: "
                              "point the installer at the artifact the manifest signs"
                              % (manifest_url, artifact["name"], name))
        if expected_version is not None and manifest["version"] != expected_version:
            raise DeployError("verify", "image %s is version %s, not the expected %s; fix: publish "
                              "version %s there" % (manifest_url, manifest["version"],
                                                    expected_version, expected_version))
        return manifest, manifest_bytes, signature

    def download(self, url, dest, size):
        """Stream ``url`` into the file ``dest``, refusing more than ``size`` bytes."""
        count = 0
        with open(dest, "wb") as handle:
            for block in self.blocks(url):
                count += len(block)
                if count > size:
                    raise DeployError("download", "%s is longer than the %d bytes the signed "
                                      "manifest names" % (url, size), url=url)
                handle.write(block)
        return count
