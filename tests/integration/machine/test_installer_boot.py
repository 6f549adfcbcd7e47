"""The installer ISO on a real (virtual) machine: UEFI firmware, an NVMe disk, a CD drive.

OVMF with Secure Boot enforcing (Microsoft's keys) boots the ISO `gpufleet image installer` built:
its EFI image's signed shim, then Debian's signed CD GRUB, then Debian's signed kernel, which
says Secure Boot is on; the
deploy agent fetches its config and the signed image over HTTPS (trusting only the CA baked
into the ISO), writes the NVMe disk, seeds it, grows its root and reboots. The disk is then
read on the host: its partition table, seed, grown ext4 root and the image's files. A second
boot serves an image signed by another key: the installer halts with the reason and the
disk stays blank. Before the installer, the firmware is offered a CD whose GRUB is not signed
(plain `grub-mkrescue`) and refuses it ("Access Denied"), then boots the installer: one boot,
a few seconds more. The wrong-key boot runs on the firmware without keys (Secure Boot off), so it also
reads a node whose Secure Boot is off, which the join's decision refuses with its reason.
Software CPU (TCG): about two minutes per boot on the CI machine.
"""
import json
import re
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.deploy import gpt
from lab.machine.qemu import HOST_FROM_GUEST, Machine
from tests.helpers import need_tool
from tests.integration.machine.conftest import BOOT_LIMIT, SSH_KEY, installer_events, node_secure_boot, publish

pytestmark = [pytest.mark.integration, pytest.mark.slow]

def _efi_image_file(iso, tmp, name):
    """One file of the ISO's El Torito EFI image (xorriso extracts the image, mtools reads it)."""
    image = str(tmp / "efi.img")
    subprocess.run(["xorriso", "-osirrox", "on", "-indev", iso, "-extract", "/efi.img", image],
                   capture_output=True, check=True)
    return subprocess.run(["mtype", "-i", image, "::/" + name], capture_output=True, check=True).stdout


def test_the_isos_efi_image_carries_debians_signed_shim_and_cd_grub(rig):
    for name, built in (("EFI/BOOT/BOOTX64.EFI", "shimx64.efi"), ("EFI/BOOT/grubx64.efi", "gcdx64.efi")):
        with open(rig["efi"][built], "rb") as handle:
            assert _efi_image_file(rig["iso"], rig["base"], name) == handle.read(), name


def _unsigned_iso(base):
    """A CD whose EFI boot loader is grub-mkrescue's own GRUB, not signed for Secure Boot."""
    need_tool("grub-mkrescue")
    tree = base / "unsigned-tree" / "boot" / "grub"
    tree.mkdir(parents=True)
    (tree / "grub.cfg").write_text('echo "the unsigned GRUB ran"\n')
    iso = str(base / "unsigned.iso")
    subprocess.run(["grub-mkrescue", "-o", iso, str(base / "unsigned-tree")], capture_output=True, check=True)
    return iso


def test_the_installer_images_the_nvme_disk_and_reboots(rig):
    publish(rig, rig["key"])
    machine = Machine(str(rig["base"] / "vm-ok"))
    assert machine.secure_boot
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text, limit=BOOT_LIMIT,
                              before=[_unsigned_iso(rig["base"])])
    events = installer_events(console)
    print("\n".join(events))
    # the first CD's unsigned GRUB was refused by the firmware, then the installer's CD booted
    refused = re.search(r'BdsDxe: failed to load Boot\d+ "UEFI QEMU DVD-ROM QM00001 [^\n]*: Access Denied', console)
    assert refused and "the unsigned GRUB ran" not in console, console[:3000]
    assert console.index(refused.group(0)) < console.index("gpufleet-installer")
    # shim -> signed GRUB -> signed kernel ran with Secure Boot enforcing: the firmware verified
    # shim, shim the GRUB and GRUB (through shim) the kernel, which sees Secure Boot on
    assert "EFI stub: UEFI Secure Boot is enabled." in console
    assert node_secure_boot(console) == [], console[-3000:]
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
    # the firmware without keys: the signed chain boots without Secure Boot too, and the node's
    # reading is what the join refuses
    machine = Machine(str(rig["base"] / "vm-wrong-key"), secure_boot=False)
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text or "rebooting" in text,
                              limit=BOOT_LIMIT)
    events = installer_events(console)
    print("\n".join(events))
    assert node_secure_boot(console) == [
        "the firmware reports SecureBoot=0 (off)",
        "the firmware is in setup mode (SetupMode=1: no platform key, nothing is verified)",
        "the kernel says 'Secure boot disabled'"], console[-3000:]
    assert any("failed verify" in line and "not by the trusted key" in line for line in events), console[-3000:]
    assert any("HALTED" in line for line in events)
    assert not any("rebooting" in line for line in events)
    assert not any(path.endswith(".gz") for path in rig["server"].requests)  # the image was never requested
    with open(machine.disk, "rb") as handle:
        assert not handle.read().strip(b"\0"), "the disk was written"
