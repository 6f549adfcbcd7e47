"""The installer ISO on a real (virtual) machine: UEFI firmware, an NVMe disk, a CD drive.

OVMF boots the ISO `gpufleet image installer` built; Debian's kernel starts the ramdisk; the
deploy agent fetches its config and the signed image over HTTPS (trusting only the CA baked
into the ISO), writes the NVMe disk, seeds it, grows its root and reboots. The disk is then
read on the host: its partition table, seed, grown ext4 root and the image's files. A second
boot serves an image signed by another key: the installer halts with the reason and the
disk stays blank. Software CPU (TCG): about two minutes per boot on the CI machine.
"""
import json
import os
import re
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.deploy import gpt
from gpufleet.image import disk as disk_mod
from gpufleet.image import installer as installer_mod
from lab.bmc.pki import ensure_pki
from lab.machine.qemu import HOST_FROM_GUEST, OVMF_CODE, Machine
from lab.machine.serve import ArtifactServer, free_port
from tests.helpers import ROOT, need, need_tool
from tests.unit.gpufleet.deploy.disk_factory import signed_disk

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekeymaterialxxxxxxxxxxxxxxxxxxxxxxxxx controller"
BOOT_LIMIT = 900  # seconds; a TCG boot takes about 2 minutes, this only turns a hang into a failure


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    for tool in installer_mod.HOST_TOOLS + disk_mod.HOST_TOOLS + ("qemu-system-x86_64", "debugfs", "e2fsck"):
        need_tool(tool)
    need(os.path.isfile(OVMF_CODE), "OVMF is not installed (apt install ovmf)")
    base = tmp_path_factory.mktemp("machine")
    port = free_port()
    pki = ensure_pki(str(base / "pki"), [HOST_FROM_GUEST, "127.0.0.1"])
    key = signing.generate_key("ed25519")
    iso = os.path.join(ROOT, "build", "installer", "test-installer.iso")
    built = installer_mod.build_installer(
        iso, signing.public_pem(key.public_key()), ROOT, os.path.join(ROOT, "build", "installer", "work"),
        ca_pem=open(pki["ca.pem"], "rb").read(),
        kernel_args=["gpufleet.config=https://%s:%d/config.json" % (HOST_FROM_GUEST, port)])
    root = base / "root"
    (root / "etc" / "gpufleet").mkdir(parents=True)
    (root / "etc" / "gpufleet" / "image-release").write_text('VERSION="machine-test"\n')
    image_path = str(base / "disk.raw")
    disk_mod.assemble_disk(str(root), image_path, 96)
    served = base / "srv"
    served.mkdir()
    server = ArtifactServer(served, port, pki["server.pem"], pki["server.key"])
    yield {"iso": built["iso"], "key": key, "image": open(image_path, "rb").read(), "srv": served,
           "server": server, "port": port, "base": base}
    server.stop()


def _publish(rig, key):
    files, _ = signed_disk(rig["srv"], rig["image"], key=key, version="machine-test", compress=True)
    config = {"node": "machine1", "image_url": "https://%s:%d/%s" % (HOST_FROM_GUEST, rig["port"],
                                                                   next(n for n in files if n.endswith(".gz"))),
              "image_version": "machine-test", "root_device": {"serial": "GPUFLEET0001"},
              "seed": {"hostname": "machine1", "ssh_key": SSH_KEY, "address": "10.0.2.15/24",
                       "gateway": HOST_FROM_GUEST}}
    (rig["srv"] / "config.json").write_text(json.dumps(config))


def _events(console):
    return [line for line in console.splitlines() if line.startswith("gpufleet-installer")]


def test_the_installer_images_the_nvme_disk_and_reboots(rig):
    _publish(rig, rig["key"])
    machine = Machine(str(rig["base"] / "vm-ok"))
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text, limit=BOOT_LIMIT)
    events = _events(console)
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
    _publish(rig, signing.generate_key("ed25519"))
    rig["server"].requests.clear()
    machine = Machine(str(rig["base"] / "vm-wrong-key"))
    machine.create()
    console, _ = machine.boot(rig["iso"], until=lambda text: "HALTED" in text or "rebooting" in text,
                              limit=BOOT_LIMIT)
    events = _events(console)
    print("\n".join(events))
    assert any("failed verify" in line and "not by the trusted key" in line for line in events), console[-3000:]
    assert any("HALTED" in line for line in events)
    assert not any("rebooting" in line for line in events)
    assert not any(path.endswith(".gz") for path in rig["server"].requests)  # the image was never requested
    with open(machine.disk, "rb") as handle:
        assert not handle.read().strip(b"\0"), "the disk was written"
