"""What the machine node's tests share: one installer ISO, one signed test disk and one HTTPS
artifact server for the whole group (both files run on one worker, one TCG machine at a time).
"""
import json
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.firmware import secure_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.image import disk as disk_mod
from gpufleet.image import installer as installer_mod
from lab.bmc.pki import ensure_pki
from lab.machine.qemu import HOST_FROM_GUEST, OVMF_CODE
from lab.machine.serve import ArtifactServer, free_port
from tests.helpers import ROOT, need, need_tool
from tests.unit.gpufleet.deploy.disk_factory import signed_disk

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekeymaterialxxxxxxxxxxxxxxxxxxxxxxxxx controller"
BOOT_LIMIT = 900  # seconds; a TCG boot takes about 2 minutes, this only turns a hang into a failure


@pytest.fixture(scope="session")
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
    yield {"iso": built["iso"], "efi": built["efi"], "key": key, "image": open(image_path, "rb").read(), "srv": served,
           "server": server, "port": port, "base": base}
    server.stop()


def publish(rig, key):
    files, _ = signed_disk(rig["srv"], rig["image"], key=key, version="machine-test", compress=True)
    config = {"node": "machine1", "image_url": "https://%s:%d/%s" % (HOST_FROM_GUEST, rig["port"],
                                                                   next(n for n in files if n.endswith(".gz"))),
              "image_version": "machine-test", "root_device": {"serial": "GPUFLEET0001"},
              "seed": {"hostname": "machine1", "ssh_key": SSH_KEY, "address": "10.0.2.15/24",
                       "gateway": HOST_FROM_GUEST}}
    (rig["srv"] / "config.json").write_text(json.dumps(config))


def installer_events(console):
    return [line for line in console.splitlines() if line.startswith("gpufleet-installer")]


def node_secure_boot(console):
    """The Secure Boot decision's reasons against the node's own reading on ``console`` (the
    installer's efivar line and the kernel's line): [] when it is enforcing."""
    return secure_boot.node_reasons(secure_boot.node_state(secure_boot.hex_variables(console), console))
