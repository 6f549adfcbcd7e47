"""`gpufleet image disk` on a signed rootfs build: the real tools (sgdisk, mkfs.ext4 -d, mtools),
seconds, no loop device. The boot files are stand-ins (this checks the layout, not a boot)."""
import gzip
import json
import os
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image
from gpufleet.deploy import gpt
from gpufleet.image import disk as disk_mod
from gpufleet.image import disk_build
from tests.helpers import need_tool
from tests.unit.plugins.module_utils.image.image_factory import make_image

pytestmark = pytest.mark.integration

BOOT = {disk_build.SHIM: b"shim", disk_build.GRUB: b"grub", "boot/vmlinuz-6.1.0-50-cloud-amd64": b"kernel",
        "boot/initrd.img-6.1.0-50-cloud-amd64": b"initrd", "usr/bin/python3": b"stand-in"}


@pytest.fixture(autouse=True)
def _tools():
    for tool in disk_mod.HOST_TOOLS + ("debugfs", "mdir"):
        need_tool(tool)


def test_a_built_version_becomes_a_signed_whole_disk_image(tmp_path):
    manifest, key = make_image(tmp_path, version="2026.11.1", files=BOOT)
    summary = disk_build.build_disk(manifest, key, 96, str(tmp_path / "work"))
    disk_dir = tmp_path / "disk"
    assert summary["version"] == "2026.11.1" and summary["artifact"] == str(disk_dir / "2026.11.1.disk.raw.gz")
    assert verify_image(str(disk_dir / "manifest.json"), signing.public_pem(key.public_key()))["version"] == "2026.11.1"
    disk_manifest = json.loads((disk_dir / "manifest.json").read_text())
    rootfs_manifest = json.loads(open(manifest).read())
    assert disk_manifest["build_id"] == rootfs_manifest["build_id"]
    assert disk_manifest["derived_from"]["sha256"] == rootfs_manifest["artifact"]["sha256"]
    assert not (tmp_path / "work").exists()

    raw = tmp_path / "disk.raw"
    raw.write_bytes(gzip.decompress((disk_dir / "2026.11.1.disk.raw.gz").read_bytes()))
    assert raw.stat().st_size == disk_manifest["artifact"]["disk_bytes"] == 96 << 20
    parts = {p["name"]: p for p in gpt.partitions(raw.read_bytes()[:1 << 20])}
    esp = subprocess.run(["mdir", "-b", "-i", "%s@@%d" % (raw, parts["gpufleet-esp"]["first_byte"]), "::/EFI/BOOT",
                          "::/EFI/debian"], capture_output=True, text=True, check=True).stdout
    for name in ("BOOTX64.EFI", "grubx64.efi", "grub.cfg", "shimx64.efi"):
        assert name in esp, esp
    root = tmp_path / "root.img"
    data = raw.read_bytes()
    root.write_bytes(data[parts["gpufleet-root"]["first_byte"]:
                          parts["gpufleet-root"]["first_byte"] + parts["gpufleet-root"]["size_bytes"]])
    listing = subprocess.run(["debugfs", "-R", "ls -p /opt/gpufleet/gpufleet/deploy", str(root)],
                             capture_output=True, text=True, check=True).stdout
    assert "firstboot.py" in listing and "seed.py" in listing
    release = subprocess.run(["debugfs", "-R", "cat /etc/gpufleet/image-release", str(root)],
                             capture_output=True, text=True, check=True).stdout
    assert 'VERSION="2026.11.1"' in release


def test_an_altered_rootfs_build_is_refused_before_anything_is_built(tmp_path):
    manifest, key = make_image(tmp_path, version="2026.11.1", files=BOOT)
    artifact = tmp_path / "2026.11.1.rootfs.tar.gz"
    artifact.write_bytes(artifact.read_bytes() + b"x")
    with pytest.raises(ImageError, match="altered"):
        disk_build.build_disk(manifest, key, 96, str(tmp_path / "work"))
    assert not (tmp_path / "disk").exists()


def test_a_root_that_cannot_boot_is_refused_naming_the_pins_to_add(tmp_path):
    manifest, key = make_image(tmp_path, version="2026.11.1")
    with pytest.raises(ImageError, match="add linux-image-cloud-amd64, systemd-sysv"):
        disk_build.build_disk(manifest, key, 96, str(tmp_path / "work"))
    assert not (tmp_path / "disk").exists() and not (tmp_path / "work").exists()
