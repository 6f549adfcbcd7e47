"""The lab machine behind a Redfish BMC: a bad install setting fails the node before its power is touched.

The full run of the same task file, on the same machine with a golden image, is
test_golden_machine.py; what follows describes the path both share.

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
the disk's ESP. Here the order is refused before any of it: the machine's disk is a stand-in and
it is never powered on.
"""
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import RedfishClient
from tests.helpers import ROOT, need
from lab.machine.rig import MachineRig, libvirtd_ready
from tests.integration.machine.conftest import BOOT_LIMIT, SSH_KEY

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def machine(rig):  # after the session rig: its checks name any missing host tool
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
