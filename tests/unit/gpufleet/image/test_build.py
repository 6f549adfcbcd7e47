import io
import json
import os
import tarfile

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.image.build import ImageBuilder, inputs_digest
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError, PackerError
from gpufleet.image.pins import load_pins
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image
from tests.helpers import ROOT

PACKER_DIR = os.path.join(ROOT, "packer")


class FakePacker(object):
    """Stands in for Packer: 'builds' by writing what the provisioners would hand back."""

    template_dir = PACKER_DIR

    def __init__(self, override=None):
        self.override = override or {}
        self.builds = 0

    def version(self):
        return (1, 6, 6)

    def ensure_plugin(self, builder):
        return False

    def validate(self, builder, var_file, variables=None):
        return []

    def build(self, builder, var_file, variables=None, on_line=None):
        self.builds += 1
        with open(var_file) as handle:
            pkr = json.load(handle)
        out = pkr["output_dir"]
        release = 'VERSION="%s"\nBUILD_ID="%s"\nPINS_SHA256="%s"\n' % (pkr["image_version"], pkr["build_id"], pkr["pins_sha256"])
        packages = dict(pkr["packages"], libc6="2.36-9+deb12u10")
        packages.update(self.override)
        os.makedirs(os.path.join(out, "inventory"))
        with open(os.path.join(out, "inventory", "packages.tsv"), "w") as handle:
            handle.writelines("%s\t%s\tamd64\n" % item for item in sorted(packages.items()))
        with open(os.path.join(out, "inventory", "kernels.txt"), "w") as handle:
            handle.write("")
        with open(os.path.join(out, "inventory", "image-release"), "w") as handle:
            handle.write(release)
        with tarfile.open(os.path.join(out, "rootfs.tar"), "w") as tar:
            info = tarfile.TarInfo("etc/gpufleet/image-release")
            info.size = len(release)
            tar.addfile(info, io.BytesIO(release.encode()))
        on_line("1,,ui,say,==> docker.node: Exporting the container")
        return []


def builder(tmp_path, packer=None, key=None, progress=None):
    pins = load_pins(os.path.join(PACKER_DIR, "versions"), "lab")
    return ImageBuilder(packer or FakePacker(), pins, "docker", str(tmp_path / "out"),
                        key or signing.generate_key("ed25519"), progress=progress, base_image_id="sha256:" + "a" * 64)


def test_build_writes_a_verifiable_manifest_sbom_and_provenance(tmp_path):
    said = []
    b = builder(tmp_path, progress=said.append)
    summary = b.build()
    assert summary["reused"] is False and said == ["==> docker.node: Exporting the container"]
    assert summary["build_id"].startswith("lab-docker-") and summary["release"]["BUILD_ID"] == summary["build_id"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["pins"]["requested"] == manifest["pins"]["installed"]
    assert {"name": "libc6", "version": "2.36-9+deb12u10", "arch": "amd64"} in manifest["packages"]
    statement = manifest["provenance"]
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"][0]["digest"]["sha256"] == manifest["artifact"]["sha256"]
    uris = [d["uri"] for d in statement["predicate"]["buildDefinition"]["resolvedDependencies"]]
    assert "file:packer/versions/lab.yml" in uris and "file:packer/scripts/20-install-pins.sh" in uris
    assert "docker-image:gpufleet/debian-base:bookworm" in uris
    sbom = json.loads((tmp_path / "out" / "sbom.spdx.json").read_text())
    assert sbom["spdxVersion"] == "SPDX-2.3" and len(sbom["packages"]) == len(manifest["packages"]) + 1
    assert not (tmp_path / "out" / "rootfs.tar").exists()


def test_unchanged_inputs_reuse_the_verified_build_and_force_rebuilds(tmp_path):
    packer, key = FakePacker(), signing.generate_key("ed25519")
    builder(tmp_path, packer, key).build()
    assert builder(tmp_path, packer, key).build()["reused"] is True and packer.builds == 1
    (tmp_path / "out" / "lab.rootfs.tar.gz").write_bytes(b"tampered")
    assert builder(tmp_path, packer, key).build()["reused"] is False and packer.builds == 2
    assert builder(tmp_path, packer, key).build(force=True)["reused"] is False and packer.builds == 3


def test_a_pin_that_did_not_install_fails_the_build(tmp_path):
    with pytest.raises(ManifestError, match='does not contain its pins.*"requested": "3.33-3", "installed": "3.35-1"'):
        builder(tmp_path, FakePacker(override={"fio": "3.35-1"})).build()
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_build_id_follows_the_inputs(tmp_path):
    pin = tmp_path / "lab.yml"
    pin.write_text("a")
    first = inputs_digest(PACKER_DIR, str(pin))[1]
    pin.write_text("b")
    assert inputs_digest(PACKER_DIR, str(pin))[1] != first
    extra = [{"uri": "docker-image:x", "sha256": "1" * 64}]
    assert inputs_digest(PACKER_DIR, str(pin), extra)[1] != inputs_digest(PACKER_DIR, str(pin))[1]


def test_verify_accepts_what_build_wrote_with_the_public_key_only(tmp_path):
    key = signing.generate_key("ecdsa-p256")
    builder(tmp_path, key=key).build()
    summary = verify_image(str(tmp_path / "out" / "manifest.json"), signing.public_pem(key.public_key()))
    assert summary["version"] == "lab"


def test_failed_build_keeps_the_last_good_image(tmp_path):
    key = signing.generate_key("ed25519")
    good = builder(tmp_path, key=key).build()
    with pytest.raises(ManifestError):
        builder(tmp_path, FakePacker(override={"fio": "3.35-1"}), key).build(force=True)
    assert verify_image(str(tmp_path / "out" / "manifest.json"), signing.public_pem(key.public_key()))["build_id"] == good["build_id"]


class FailingPacker(FakePacker):
    def build(self, builder, var_file, variables=None, on_line=None):
        on_line("1,docker.node,ui,error,E: Version '3.99-1' for 'fio' was not found")
        raise PackerError("packer build of x failed with exit code 1: E: Version '3.99-1' for 'fio' was not found",
                          returncode=1)


def test_packer_failure_names_the_full_log(tmp_path):
    with pytest.raises(PackerError) as err:
        builder(tmp_path, FailingPacker()).build()
    log = str(tmp_path / "out.partial" / "build.log")
    assert err.value.msg.endswith("Full log: " + log) and err.value.details["returncode"] == 1
    assert "3.99-1" in open(log).read()
