"""The lab machine brought up with a real golden image, through the bring-up's own task files.

The image is the `lab-machine` version (packer/versions/lab-machine.yml: the lab image plus
Debian's cloud kernel, systemd, sshd and the signed shim and GRUB), built by `gpufleet image
build` and made into a whole-disk UEFI image by `gpufleet image disk`, signed by its own key.
lab/playbooks/machine_golden.yml runs playbooks/tasks/image.yml (verify the signed image, then
image_media.yml: the install order, the installer ISO as Redfish virtual media, the deploy
agent followed to `imaged`), waits for the machine to boot its new disk and answer over SSH with
the seed's key, checks the release it runs, and then runs the node identity role on it
(playbooks/tasks/configure.yml). Software CPU (TCG): about 10 minutes on the CI machine, most of
it the emulated disk writing and reading back 1 GiB and the first boot making host keys.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import current_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import RedfishClient
from lab.machine.rig import MachineRig, libvirtd_ready
from tests.helpers import ROOT, ensure_base_image, need, need_tool
from tests.integration.machine.conftest import BOOT_LIMIT, installer_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "lab-machine"
KEY = os.path.join(ROOT, "build", "keys", "lab-machine-signing.key")   # its own: the lab's is built beside it
DISK_MIB = 1024          # the image; the machine's disk is larger, so the agent grows the root
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"))


def _gpufleet(*args, timeout=1800):
    proc = subprocess.run([GPUFLEET, *args], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=timeout, env=ENV)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def golden(rig):  # after the session rig: its checks name any missing host tool
    need_tool("packer")
    ensure_base_image()
    not_ready = libvirtd_ready()
    need(not not_ready, not_ready)
    started = time.monotonic()
    _gpufleet("image", "build", VERSION, "--key", KEY, "--generate-key")
    built = time.monotonic()
    manifest = os.path.join(ROOT, "build", "images", VERSION, "manifest.json")
    disk = json.loads(_gpufleet("image", "disk", manifest, "--key", KEY, "--size-mib", str(DISK_MIB))
                      .split("built and verified: ", 1)[1])
    print("image build %.0f s, disk %.0f s" % (built - started, time.monotonic() - built))
    return {"folder": os.path.dirname(disk["manifest"]), "public_key": KEY[:-len(".key")] + ".pub",
            "build_id": disk["build_id"], "sha256": disk["artifact_sha256"]}


@pytest.fixture(scope="module")
def brought_up(golden, rig):
    base = rig["base"] / "golden"
    base.mkdir()
    key = ed25519.Ed25519PrivateKey.generate()
    private = base / "id_ed25519"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode() + " controller"
    with MachineRig(str(base), ROOT, public, golden={"folder": golden["folder"], "public_key": golden["public_key"]},
                    disk_mib=DISK_MIB + 512, log=print) as machine:
        settings = dict(machine.settings(install_timeout=2 * BOOT_LIMIT), gpufleet_cli=GPUFLEET,
                        gpufleet_imaging_timeout=BOOT_LIMIT)
        inventory = machine.inventory(str(base / "inventory.json"), settings, ssh_private_key_file=str(private))
        started = time.monotonic()
        play = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
             os.path.join(ROOT, "lab", "playbooks", "machine_golden.yml")],
            cwd=ROOT, capture_output=True, text=True, check=False, timeout=4 * BOOT_LIMIT, env=ENV)
        print("machine_golden.yml: %.0f s, rc %d" % (time.monotonic() - started, play.returncode))
        yield {"play": play, "machine": machine, "inventory": inventory, "console": machine.vm.console_text}


def _on_node(brought_up, commands):
    """Run each of ``commands`` ({name: shell command}) on the machine over SSH (the seed's key),
    through Ansible's own connection, in one task (each task costs a round trip under TCG);
    returns {name: its stdout}."""
    marker = "----gpufleet-test-%s----"
    script = "; ".join("echo %s; %s" % (marker % name, command) for name, command in commands.items())
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible"), "all", "-i", brought_up["inventory"],
         "-m", "ansible.builtin.shell", "-a", "set -e; " + script, "-o"],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600, env=ENV)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout.split("(stdout) ", 1)[1].replace("\\n", "\n") if "(stdout) " in proc.stdout else ""
    parts = re.split(marker % r"(\w+)", out)  # [before, name, its output, name, its output, ...]
    found = {name: text.strip("\n") for name, text in zip(parts[1::2], parts[2::2])}
    assert set(found) == set(commands), out
    return found


def test_the_golden_image_is_written_booted_and_configured_through_the_bringup_task_files(brought_up, golden):
    play, machine = brought_up["play"], brought_up["machine"]
    vm, console = machine.vm, brought_up["console"]()
    print(play.stdout[-6000:])
    print("\n".join(installer_events(console)))
    print("\n".join("%6.1f s %s" % entry for entry in vm.watcher.log))
    assert play.returncode == 0, play.stdout[-5000:] + play.stderr[-2000:] + console[-3000:]
    assert "/installer.iso" in machine.server.requests  # the BMC emulator fetched it (TLS verified)
    # the installer took its order from the deploy service by the machine's UUID, once
    uuid = vm.uuid.lower()
    assert any("GET /orders/%s.json" % uuid in line and " 200" in line for line in machine.service_log), \
        machine.service_log
    assert not os.path.exists(os.path.join(machine.state_dir, "orders", uuid + ".json"))  # served, gone
    assert machine.book.outcome("machine1") == "imaged", machine.book.events("machine1")
    # no token in the play's output or the service's log
    token_free = play.stdout + play.stderr + "\n".join(machine.service_log)
    assert "Bearer" not in token_free and '"token"' not in token_free
    events = installer_events(console)
    assert any(re.search(r" machine1 \[\+[\d.]+s\]: imaged done ", line) for line in events), console[-3000:]
    # the one-time CD boot was used up by the installer; the reboot went to the disk, not the CD
    watched = [text for _, text in vm.watcher.log]
    assert any("boot override consumed" in text for text in watched), watched
    assert any("guest rebooted" in text for text in watched), watched
    after_reboot = console.split("rebooting into the disk", 1)[1]
    assert "gpufleet-installer" not in after_reboot, after_reboot[-3000:]
    with RedfishClient(vm.baseuri, vm.username, vm.password, ca_path=vm.pki["ca.pem"], node="machine1") as client:
        system = client.get(discovery.find_system(client, vm.uuid), cached=False)
    # image.yml's last steps: media ejected, boot from disk from now on
    assert current_boot(system)["target"] == "Hdd", system.get("Boot")
    # the deploy agent wrote the signed golden disk and said so with its digest and build
    imaged = [e for e in machine.book.events("machine1") if e.get("state") == "imaged"]
    assert imaged and imaged[-1]["build_id"] == golden["build_id"], machine.book.events("machine1")
    # the image.yml checks passed on the booted machine: it runs the verified release
    assert "Check that the node runs the verified image" in play.stdout
    # the first boot applied the seed: host name (then the identity role's FQDN), /etc/hosts entry
    node = _on_node(brought_up, {
        "hostname": "hostname", "hosts": "cat /etc/hosts", "release": "cat /etc/gpufleet/image-release",
        "root": "findmnt -n -b -o SOURCE,SIZE /", "ssh": "ls /etc/ssh",
        "boot": "python3 -c \"import glob,os;g='8be4df61-93ca-11d2-aa0d-00e098032b8c';"
                                "cur=open('/sys/firmware/efi/efivars/BootCurrent-'+g,'rb').read()[4:6];"
                                "n='Boot%04X'%int.from_bytes(cur,'little');"
                                "d=open('/sys/firmware/efi/efivars/'+n+'-'+g,'rb').read()[10:];"
                                # the description ends at the first aligned UTF-16 NUL; a device path follows
                                "e=next(i for i in range(0,len(d)-1,2) if d[i:i+2]==bytes(2));"
                                "print(n, d[:e].decode('utf-16-le'))\""})
    assert node["hostname"].strip() == "machine1"
    assert "machine1" in node["hosts"]
    release = node["release"]
    assert 'VERSION="%s"' % VERSION in release and golden["build_id"] in release
    # booted by UEFI through the agent's boot entry, from the NVMe disk, with the root grown to it
    boot = node["boot"]
    assert boot.split(" ", 1)[1].strip() == "gpufleet %s" % VERSION, boot
    root = node["root"].split()
    assert root[0].startswith("/dev/nvme0n1") and int(root[1]) > DISK_MIB << 20, root
    # host keys of its own, made at first boot (none were in the image)
    assert "ssh_host_ed25519_key" in node["ssh"]
