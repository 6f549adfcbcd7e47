"""Build small signed images on disk for unit tests (no Packer, no docker)."""
import hashlib
import io
import os
import tarfile

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import SCHEMA, canonical_json

RELEASE = {"VERSION": "lab", "BUILD_ID": "lab-docker-0123456789ab", "PINS_SHA256": "f" * 64}
PACKAGES = [
    {"name": "fio", "version": "3.33-3", "arch": "amd64"},
    {"name": "iperf3", "version": "3.12-1+deb12u2", "arch": "amd64"},
    {"name": "libc6", "version": "2.36-9+deb12u10", "arch": "amd64"},
]


def write_tarball(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def make_image(folder, key=None, algorithm="ed25519", sign=True, version="lab", files=None):
    """Write artifact + manifest.json (+ .sig); return (manifest path, private key).

    ``files``: more members of the rootfs tarball ({path: bytes}), beside the image-release."""
    key = key or signing.generate_key(algorithm)
    artifact = os.path.join(str(folder), "%s.rootfs.tar.gz" % version)
    release_text = "".join('%s="%s"\n' % kv for kv in sorted(dict(RELEASE, VERSION=version).items()))
    write_tarball(artifact, dict(files or {}, **{"etc/gpufleet/image-release": release_text.encode()}))
    with open(artifact, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    manifest = {
        "schema": SCHEMA, "version": version, "build_id": RELEASE["BUILD_ID"], "pins_sha256": RELEASE["PINS_SHA256"],
        "artifact": {"name": os.path.basename(artifact), "sha256": digest, "size": os.path.getsize(artifact)},
        "signer": {"key_id": signing.key_id(key.public_key()), "algorithm": signing.algorithm_of(key.public_key())},
        "release": dict(RELEASE, VERSION=version), "packages": PACKAGES,
        "pins": {"requested": {"fio": "3.33-3", "iperf3": "3.12-1+deb12u2"}},
    }
    path = os.path.join(str(folder), "manifest.json")
    data = canonical_json(manifest)
    with open(path, "wb") as handle:
        handle.write(data)
    if sign:
        with open(path + ".sig", "wb") as handle:
            handle.write(signing.sign(key, data))
    return path, key


def public_pem(key):
    return signing.public_pem(key.public_key())
