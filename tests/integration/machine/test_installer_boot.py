"""The installer ISO on a real (virtual) machine: UEFI firmware, an NVMe disk, a CD drive.

OVMF boots the ISO `gpufleet image installer` built; Debian's kernel starts the ramdisk; the
deploy agent fetches its config and the signed image over HTTPS (trusting only the CA baked
into the ISO), writes the NVMe disk, seeds it, grows its root and reboots. The disk is then
read on the host: its partition table, seed, grown ext4 root and the image's files. A second
boot serves an image signed by another key: the installer halts with the reason and the
disk stays blank. Software CPU (TCG): about two minutes per boot on the CI machine.
"""
import json
import re
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.deploy import gpt
from lab.machine.qemu import HOST_FROM_GUEST, Machine
from tests.integration.machine.conftest import BOOT_LIMIT, SSH_KEY, installer_events, publish

pytestmark = [pytest.mark.integration, pytest.mark.slow]

def test_the_installer_images_the_nvme_disk_and_reboots(rig):
    publish(rig, rig["key"])
    machine = Machine(str(rig["base"] / "vm-ok"))
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text, limit=BOOT_LIMIT)
    events = installer_events(console)
    print("\n".join(events))
    assert any(re.search(r" machine1 \[\+[\d.]+s\]: imaged done ", line) for line in events), console[-3000:]
    assert any("rebooting into the disk" in line for line in events)
    for step in ("verify manifest", "write", "seed", "grow root"):
        assert any(" running %s" % step in line for line in events), step

    with open(machine.disk, "rb") as handle:
        disk = handle.read()
    image_parts = {p["name"]: p for p in gpt.partitions(rig["image"][:1 << 20])}
    disk_parts = {p["name"]: p for p in gpt.partitions(disk[:1 << 20])}
    assert set(disk_parts) == {"gpufleet-esp", "gpufleet-seed", "gpufleet-root"}
    for name in ("gpufleet-esp", "gpufleet-seed"):
        assert disk_parts[name]["first_byte"] == image_parts[name]["first_byte"]
    esp = image_parts["gpufleet-esp"]
    assert disk[esp["first_byte"]:esp["first_byte"] + esp["size_bytes"]] == \
        rig["image"][esp["first_byte"]:esp["first_byte"] + esp["size_bytes"]]
    seed = disk_parts["gpufleet-seed"]
    assert json.loads(disk[seed["first_byte"]:seed["first_byte"] + seed["size_bytes"]].rstrip(b"\0")) == {
        "schema": "gpufleet.seed/v1", "hostname": "machine1", "ssh_authorized_keys": [SSH_KEY],
        "address": "10.0.2.15/24", "gateway": HOST_FROM_GUEST, "dns": []}
    # the root was grown to the disk's end (less the backup GPT) and its ext4 with it
    root = disk_parts["gpufleet-root"]
    assert root["size_bytes"] > image_parts["gpufleet-root"]["size_bytes"] + (100 << 20)
    assert root["first_byte"] + root["size_bytes"] >= len(disk) - (1 << 20)
    part = rig["base"] / "root-part.img"
    part.write_bytes(disk[root["first_byte"]:root["first_byte"] + root["size_bytes"]])
    fsck = subprocess.run(["e2fsck", "-f", "-n", str(part)], capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    blocks = re.search(r"/(\d+) blocks", fsck.stdout)
    assert blocks and int(blocks.group(1)) * 1024 >= root["size_bytes"] - (4 << 20), fsck.stdout
    release = subprocess.run(["debugfs", "-R", "cat /etc/gpufleet/image-release", str(part)],
                             capture_output=True, text=True, check=False)
    assert release.stdout.strip() == 'VERSION="machine-test"'


def test_an_image_signed_by_another_key_halts_the_installer_and_leaves_the_disk_blank(rig):
    publish(rig, signing.generate_key("ed25519"))
    rig["server"].requests.clear()
    machine = Machine(str(rig["base"] / "vm-wrong-key"))
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text or "rebooting" in text,
                              limit=BOOT_LIMIT)
    events = installer_events(console)
    print("\n".join(events))
    assert any("failed verify" in line and "not by the trusted key" in line for line in events), console[-3000:]
    assert any("HALTED" in line for line in events)
    assert not any("rebooting" in line for line in events)
    assert not any(path.endswith(".gz") for path in rig["server"].requests)  # the image was never requested
    with open(machine.disk, "rb") as handle:
        assert not handle.read().strip(b"\0"), "the disk was written"
