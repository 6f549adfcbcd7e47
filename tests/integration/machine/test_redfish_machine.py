"""The lab machine behind a Redfish BMC: sushy-tools' libvirt driver, driven by the project's code.

The machine (lab/machine/domain.py: a libvirt domain with OVMF, an NVMe disk and a CD drive)
gets the installer ISO the way a server does: ``provision()`` inserts it as virtual media (the
emulator downloads it over HTTPS, verifying the artifact server's CA), sets a one-time boot
override to the CD and powers the machine on. The installer images the NVMe disk and reboots;
the override has been consumed (lab/machine/bmc.py ``OnceWatcher``, a lab simulation of a
BMC's ``Once``), so the firmware follows its BootOrder to the entry the deploy agent made:
the disk's ESP, whose stand-in boot loader (a GRUB image) prints a line and powers off.
Software CPU (TCG): a few minutes on the CI machine.
"""
import os
import re
import subprocess
import time
import uuid as uuid_mod

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import current_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import RedfishClient
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.provision import provision
from gpufleet.image import disk as disk_mod
from lab.machine.serve import free_port
from tests.helpers import need, need_tool
from tests.integration.machine.conftest import BOOT_LIMIT, installer_events, publish

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DISK_BOOTED = "gpufleet-lab-disk: booted from the NVMe disk"
GRUB_CFG = 'echo "%s"\nsleep 1\nhalt\n' % DISK_BOOTED


def _libvirtd_ready():
    try:
        import libvirt
    except ImportError:
        return False
    try:
        libvirt.open("qemu:///system").close()
    except libvirt.libvirtError:
        return False
    return True


@pytest.fixture(scope="module")
def machine(rig):
    need_tool("grub-mkstandalone")
    need(_libvirtd_ready(), "libvirtd is not running or libvirt-python is missing (start: virtlogd -d; libvirtd -d)")
    from lab.bmc.pki import ensure_pki
    from lab.machine.bmc import RedfishMachine
    from lab.machine.qemu import HOST_FROM_GUEST
    base = rig["base"]
    # a stand-in boot loader on the image's ESP, where the deploy agent's boot entry points
    cfg = base / "disk-grub.cfg"
    cfg.write_text(GRUB_CFG)
    loader = base / "shimx64.efi"
    subprocess.run(["grub-mkstandalone", "-O", "x86_64-efi", "-o", str(loader), "--modules=echo sleep halt",
                    "boot/grub/grub.cfg=%s" % cfg], check=True, capture_output=True)
    root = base / "disk-root"
    (root / "etc" / "gpufleet").mkdir(parents=True)
    (root / "etc" / "gpufleet" / "image-release").write_text('VERSION="machine-test"\n')
    image_path = base / "bootable.raw"
    disk_mod.assemble_disk(str(root), str(image_path), 96, esp_files={"EFI/debian/shimx64.efi": str(loader)})
    publish(dict(rig, image=image_path.read_bytes()), rig["key"])
    os.link(rig["iso"], str(rig["srv"] / "installer.iso"))
    pki = ensure_pki(str(base / "pki"), [HOST_FROM_GUEST, "127.0.0.1"])
    with RedfishMachine(str(base / "redfish-vm"), "gpufleet-lab-machine1", str(uuid_mod.uuid4()), free_port(),
                        pki, media_ca=pki["ca.pem"]) as vm:
        yield vm


def _client(vm):
    return RedfishClient(vm.baseuri, vm.username, vm.password, ca_path=vm.pki["ca.pem"], node="machine1")


def _wait(vm, done, limit):
    started = time.monotonic()
    while time.monotonic() - started < limit:
        text = vm.console_text()
        if done(text):
            break
        time.sleep(1)
    return vm.console_text(), round(time.monotonic() - started, 1)


def test_redfish_virtual_media_images_the_disk_and_the_reboot_boots_it(machine, rig):  # noqa: F811
    iso_url = "https://127.0.0.1:%d/installer.iso" % rig["port"]
    started = time.monotonic()
    with _client(machine) as client:
        result = provision(client, machine.uuid, "cd", image_url=iso_url, media_type="cd",
                           boot_enabled="once", power="on")
    provisioned = round(time.monotonic() - started, 1)
    assert result["media"]["changed"] and result["power"]["changed"], result
    assert result["boot"]["applied"]["target"] == "Cd", result
    assert "/installer.iso" in rig["server"].requests  # the emulator fetched it (TLS verified)

    console, seconds = _wait(machine, lambda text: DISK_BOOTED in text or "HALTED" in text, 2 * BOOT_LIMIT)
    events = installer_events(console)
    print("provision %.1f s, then %.1f s to the disk's boot loader" % (provisioned, seconds))
    print("\n".join(events))
    print("\n".join("%6.1f s %s" % entry for entry in machine.watcher.log))
    assert any(re.search(r" machine1 \[\+[\d.]+s\]: imaged done ", line) for line in events), \
        console[-3000:] + machine.emulator_log()[-2000:]
    assert any("rebooting into the disk" in line for line in events)
    watched = [text for _, text in machine.watcher.log]
    assert any("boot override consumed" in text for text in watched), watched
    assert any("guest rebooted" in text for text in watched), watched
    # the second boot ran the disk's loader, and the installer did not run again
    after_reboot = console.split("rebooting into the disk", 1)[1]
    assert DISK_BOOTED in after_reboot, console[-3000:]
    assert "gpufleet-installer" not in after_reboot, after_reboot[-3000:]

    with _client(machine) as client:
        system = client.get(discovery.find_system(client, machine.uuid), cached=False)
    # the override was used up: the BMC shows libvirt's default boot device, no longer the CD
    assert current_boot(system)["target"] == "Hdd", system.get("Boot")
