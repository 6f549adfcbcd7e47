"""The lab machine behind a Redfish BMC: sushy-tools' libvirt driver, driven by the bring-up's tasks.

The machine (lab/machine/domain.py: a libvirt domain with OVMF, an NVMe disk and a CD drive)
gets the installer ISO the way a server does, through the task file bringup.yml images with
(playbooks/tasks/image_media.yml) run by ansible-playbook: it reads the machine's UUID from the
BMC, writes the node's install order with `gpufleet deploy order`, inserts the ISO as virtual
media (the emulator downloads it over HTTPS, verifying the artifact server's CA), sets a
one-time boot override to the CD, powers the machine on and follows `gpufleet deploy wait`.
The installer fetches its order from `gpufleet deploy serve`'s service (by the machine's SMBIOS
UUID, once), images the NVMe disk, reports to the service with the order's token and reboots;
the override has been consumed (lab/machine/bmc.py ``OnceWatcher``, a lab simulation of a
BMC's ``Once``), so the firmware follows its BootOrder to the entry the deploy agent made:
the disk's ESP, whose stand-in boot loader (a GRUB image) prints a line and powers off.
Software CPU (TCG): a few minutes on the CI machine.
"""
import os
import re
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import current_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import RedfishClient
from tests.helpers import ROOT, need, need_tool
from lab.machine.rig import DISK_BOOTED, MachineRig, libvirtd_ready
from tests.integration.machine.conftest import BOOT_LIMIT, SSH_KEY, installer_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def machine(rig):  # after the session rig: its checks name any missing host tool
    need_tool("grub-mkstandalone")
    not_ready = libvirtd_ready()
    need(not not_ready, not_ready)
    base = rig["base"] / "redfish"
    base.mkdir()
    with MachineRig(str(base), ROOT, SSH_KEY) as machine_rig:
        settings = dict(machine_rig.settings(install_timeout=2 * BOOT_LIMIT),
                        gpufleet_cli=os.path.join(os.path.dirname(sys.executable), "gpufleet"))
        yield {"rig": machine_rig, "vm": machine_rig.vm, "book": machine_rig.book, "settings": settings,
               "service_log": machine_rig.service_log, "state_dir": machine_rig.state_dir}


def _inventory(machine, settings, path):
    return machine["rig"].inventory(str(path), settings)


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


def _play(inventory):
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
         os.path.join(ROOT, "lab", "playbooks", "machine_image.yml")],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=3 * BOOT_LIMIT)


def _power(vm):
    with _client(vm) as client:
        return client.get(discovery.find_system(client, vm.uuid), cached=False).get("PowerState")


@pytest.mark.parametrize("change, named", [
    ({"gpufleet_root_device": None}, "gpufleet_root_device must be too"),
    ({"gpufleet_root_device": {"colour": "blue"}}, "colour"),
], ids=["a missing setting", "an unknown root-device hint"])
def test_a_bad_install_setting_fails_the_node_before_its_power_is_touched(machine, tmp_path, change, named):
    vm = machine["vm"]
    settings = {k: v for k, v in dict(machine["settings"], **change).items() if v is not None}
    before = _power(vm)
    play = _play(_inventory(machine, settings, tmp_path / "inventory.json"))
    assert play.returncode != 0 and named in play.stdout, play.stdout[-3000:]
    assert "Power the node off" not in play.stdout, play.stdout[-3000:]
    assert _power(vm) == before == "Off"
    assert not os.listdir(os.path.join(machine["state_dir"], "orders"))  # nothing written


def test_the_bringup_imaging_step_images_the_machine_through_redfish_and_the_installer(machine, tmp_path):
    vm, book = machine["vm"], machine["book"]
    inventory = _inventory(machine, machine["settings"], tmp_path / "inventory.json")
    started = time.monotonic()
    play = _play(inventory)
    played = round(time.monotonic() - started, 1)
    console, seconds = _wait(vm, lambda text: DISK_BOOTED in text or "HALTED" in text, BOOT_LIMIT)
    events = installer_events(console)
    print("play %.1f s (power off -> imaged), then %.1f s to the disk's boot loader" % (played, seconds))
    print(play.stdout[-4000:])
    print("\n".join(events))
    print("\n".join("%6.1f s %s" % entry for entry in vm.watcher.log))
    assert play.returncode == 0, play.stdout[-4000:] + play.stderr[-2000:] + console[-3000:]
    assert "/installer.iso" in machine["rig"].server.requests  # the emulator fetched it (TLS verified)
    # the installer took its order from the deploy service, once, and reported with its token
    uuid = vm.uuid.lower()
    assert any("GET /orders/%s.json" % uuid in line and " 200" in line for line in machine["service_log"]), \
        machine["service_log"]
    assert not os.path.exists(os.path.join(machine["state_dir"], "orders", uuid + ".json"))  # served, gone
    assert book.outcome("machine1") == "imaged", book.events("machine1")
    # no token in the play's output or the service's log
    token_free = play.stdout + play.stderr + "\n".join(machine["service_log"])
    assert "Bearer" not in token_free and '"token"' not in token_free
    assert any(re.search(r" machine1 \[\+[\d.]+s\]: imaged done ", line) for line in events), \
        console[-3000:] + vm.emulator_log()[-2000:]
    assert any("rebooting into the disk" in line for line in events)
    watched = [text for _, text in vm.watcher.log]
    assert any("boot override consumed" in text for text in watched), watched
    assert any("guest rebooted" in text for text in watched), watched
    # the second boot ran the disk's loader, and the installer did not run again
    after_reboot = console.split("rebooting into the disk", 1)[1]
    assert DISK_BOOTED in after_reboot, console[-3000:]
    assert "gpufleet-installer" not in after_reboot, after_reboot[-3000:]

    with _client(vm) as client:
        system = client.get(discovery.find_system(client, vm.uuid), cached=False)
    # the override was used up: the BMC shows libvirt's default boot device, no longer the CD
    assert current_boot(system)["target"] == "Hdd", system.get("Boot")
