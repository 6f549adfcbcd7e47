"""The lab machine brought up with a real golden image, from power-off to a Slurm node, through
the bring-up's own playbook and task files.

The image is the `lab-machine` version (packer/versions/lab-machine.yml: the lab image plus
Debian's cloud kernel, systemd, sshd and the signed shim and GRUB), built by `gpufleet image
build` and made into a whole-disk UEFI image by `gpufleet image disk`, signed by its own key.
lab/playbooks/machine_golden.yml enrolls and inspects the machine (playbooks/enroll.yml), runs
playbooks/tasks/image.yml (verify the signed image, then image_media.yml: the install order, the
installer ISO as Redfish virtual media, the deploy agent followed to `imaged`), waits for the
machine to boot its new disk and answer over SSH with the seed's key, checks the release it
runs, runs the node identity role on it (playbooks/tasks/configure.yml), the acceptance gate's
single-node phases (playbooks/tasks/gate.yml) with the lab's GPU tool shims, and joins it to a
real slurmctld container (playbooks/tasks/join.yml: cluster_join, node labels), recording each
step in a ledger; then an `srun` in the controller's container runs a job on it. The image has
no GPU stack: the shims (lab/hwsim) are copied onto the machine as docker mounts them into the
container nodes, and the gate profile is the lab's without its firmware pins (sushy-tools
serves no firmware inventory) and with storage floors for an emulated disk.
Networking: the machine's user-mode NIC forwards slurmd's port on the docker network's gateway
into the machine; the controller's NodeName line gives that port, and Slurm's cloud_reg_addrs
takes the gateway (the source of the machine's registration through QEMU) as its address:
slurmctld and srun reach slurmd through the forward, and the step's output returns over the
machine's outbound connections. The image carries dbus: slurmd's cgroup/v2 plugin needs it.
Software CPU (TCG): about 14 minutes on the CI machine, most of it the emulated disk writing and
reading back 1 GiB, the first boot making host keys, and the join's tasks (about 10 s each).
"""
import datetime
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ansible_collections.gpufleet.baremetal.plugins.module_utils.firmware import secure_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import current_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import RedfishClient
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.secure_boot import secure_boot_facts
from lab.machine.rig import MachineRig, libvirtd_ready
from lab.machine.serve import free_port
from lab.slurm import slurmctld
from tests.helpers import ROOT, ensure_base_image, need, need_docker, need_tool
from tests.integration.machine.conftest import BOOT_LIMIT, installer_events, node_secure_boot

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "lab-machine"
KEY = os.path.join(ROOT, "build", "keys", "lab-machine-signing.key")   # its own: the lab's is built beside it
DISK_MIB = 1024          # the image; the machine's disk is larger, so the agent grows the root
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"))
CTL, NET = "gpufleet-machine-ctl", "gpufleet-machine-net"
BRINGUP = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready", "joined"]


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


def _docker(*args):
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, "docker %s: %s" % (args[0], proc.stderr[-2000:])
    return proc.stdout.strip()


def _gate_profile(folder):
    """The lab's gate profile for the lab machine. -> its name. Without the firmware pins:
    sushy-tools' emulator links an UpdateService but serves no FirmwareInventory, so its BMC
    reports no firmware to pin (the gate fails a pinned check closed without an inventory).
    Storage floors that only prove fio moved data through the emulated NVMe disk of a
    software CPU (at load average 2-3: 82 MB/s written, 150 MB/s read, 2,660 and 17,000 IOPS
    of random reads and writes)."""
    with open(os.path.join(ROOT, "lab", "profiles", "gate", "lab.yml")) as handle:
        profile = yaml.safe_load(handle)
    del profile["checks"]["firmware_pins"]
    for check, floor in (("fio_seq_read", 20), ("fio_seq_write", 10), ("fio_rand_read", 100), ("fio_rand_write", 100)):
        profile["checks"][check]["min"] = floor
    profile.update(profile="lab-machine", description="The lab machine (a virtual machine on a software CPU): the "
                                                      "lab profile without firmware pins, with lower storage floors")
    os.makedirs(folder)
    with open(os.path.join(folder, "lab-machine.yml"), "w") as handle:
        yaml.safe_dump(profile, handle)
    return profile["profile"]


@pytest.fixture(scope="module")
def slurm(golden, rig):
    """A slurmctld container on its own docker network, with one CLOUD node, machine1, whose
    slurmd listens on a free port the machine's NIC forwards from the network's gateway."""
    need_docker()
    slurmctld.build_image()
    base = rig["base"] / "slurm"
    base.mkdir()
    key = base / "munge.key"
    key.write_text(os.urandom(48).hex())   # text: the join reads it with a file lookup
    slurmctld.stop_controller(CTL)
    subprocess.run(["docker", "network", "rm", NET], capture_output=True, check=False)  # a killed run's
    _docker("network", "create", NET)
    try:
        gateway = _docker("network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", NET)
        port = free_port()
        slurmctld.start_controller(CTL, NET, "machine1", str(key), node_conf="CPUs=1 RealMemory=64 Port=%d" % port)
        address = _docker("inspect", "-f", "{{(index .NetworkSettings.Networks \"%s\").IPAddress}}" % NET, CTL)
        yield {"gateway": gateway, "port": port, "address": address, "munge_key": str(key),
               "munge_text": key.read_text()}
    finally:
        slurmctld.stop_controller(CTL)
        subprocess.run(["docker", "network", "rm", NET], capture_output=True, check=False)


def _ctl(*command):
    proc = subprocess.run(["docker", "exec", CTL, *command], capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def brought_up(golden, rig, slurm):
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
                    disk_mib=DISK_MIB + 512, log=print, forwards=[(slurm["gateway"], slurm["port"])]) as machine:
        settings = dict(
            machine.settings(install_timeout=2 * BOOT_LIMIT), gpufleet_cli=GPUFLEET, gpufleet_imaging_timeout=BOOT_LIMIT,
            gpufleet_sku="lab-sim-8x", gpufleet_ledger=str(base / "ledger.sqlite"), gpufleet_report_dir=str(base / "reports"),
            gpufleet_gate_profile=_gate_profile(str(base / "profiles")), gpufleet_gate_profile_dir=str(base / "profiles"),
            gpufleet_gate_path_dirs=["/opt/gpufleet-lab-hwsim/bin"],
            gpufleet_slurm_controller="ctl", gpufleet_munge_key_file=slurm["munge_key"],
            # the controller's name, as a site's DNS would answer it
            node_identity_extra_hosts=[{"address": slurm["address"], "names": ["ctl"]}],
            lab_machine_work_dir=str(base))
        inventory = machine.inventory(str(base / "inventory.json"), settings, ssh_private_key_file=str(private))
        started = time.monotonic()
        play = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
             os.path.join(ROOT, "lab", "playbooks", "machine_golden.yml")],
            cwd=ROOT, capture_output=True, text=True, check=False, timeout=4 * BOOT_LIMIT, env=ENV)
        print("machine_golden.yml: %.0f s, rc %d" % (time.monotonic() - started, play.returncode))
        yield {"play": play, "machine": machine, "inventory": inventory, "console": machine.vm.console_text,
               "ledger": settings["gpufleet_ledger"], "reports": settings["gpufleet_report_dir"], "slurm": slurm}


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
    # the golden image's shim -> GRUB -> kernel ran with Secure Boot enforcing, as the installer did
    assert "secureboot: Secure boot enabled" in after_reboot, after_reboot[-3000:]
    assert "secureboot: Secure boot disabled" not in console
    assert node_secure_boot(console) == [], console[-3000:]   # the installer's own reading
    # nothing was refused: the Secure Boot check before the gate (tasks/trust.yml) read the BMC and the node
    assert "Secure Boot is enforcing on machine1 (the BMC and the node's firmware agree)" in play.stdout
    with RedfishClient(vm.baseuri, vm.username, vm.password, ca_path=vm.pki["ca.pem"], node="machine1") as client:
        system_path = discovery.find_system(client, vm.uuid)
        system = client.get(system_path, cached=False)
        bmc_secure_boot = secure_boot_facts(client, system_path)
    assert secure_boot.bmc_reasons(bmc_secure_boot) == [], bmc_secure_boot
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
        "root": "findmnt -n -b -o SOURCE,SIZE /", "ssh": "ls /etc/ssh", "kernel": "dmesg | grep secureboot:",
        "lockdown": "cat /sys/kernel/security/lockdown",
        "secure_boot": "for v in SecureBoot SetupMode; do printf '%s=' $v; "
                       "od -An -tx1 /sys/firmware/efi/efivars/$v-8be4df61-93ca-11d2-aa0d-00e098032b8c | tr -d ' \\n'; "
                       "echo; done",
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
    # the running golden OS: SecureBoot=1, SetupMode=0, and its kernel says so
    state = secure_boot.node_state(secure_boot.hex_variables(node["secure_boot"]), node["kernel"])
    assert secure_boot.node_reasons(state) == [], (node["secure_boot"], node["kernel"])
    # its kernel locked itself down at that boot: the reading that stands in once the boot line
    # has left the ring buffer (a node up for long) passes on its own
    long_up = secure_boot.node_state(secure_boot.hex_variables(node["secure_boot"]), "", node["lockdown"])
    assert long_up["lockdown"] == "integrity" and secure_boot.node_reasons(long_up) == [], node["lockdown"]


def test_the_machine_passes_the_gate_joins_slurm_and_runs_a_job(brought_up):
    play, slurm = brought_up["play"], brought_up["slurm"]
    assert play.returncode == 0, play.stdout[-5000:] + play.stderr[-2000:]
    book = Ledger(brought_up["ledger"])
    try:
        record, history = book.get("machine1"), book.history("machine1")
    finally:
        book.close()
    # every bring-up step recorded before it started, in order, and the node joined
    assert [row["to_state"] for row in history] == BRINGUP, history
    assert record["state"] == "joined" and record["image_version"] == VERSION, record
    times = [datetime.datetime.fromisoformat(row["at"]).timestamp() for row in history]
    print("ledger: " + ", ".join("%s +%.0f s" % (row["to_state"], at - times[0]) for row, at in zip(history, times)))
    # the gate passed on the lab's GPU tool shims (the model's 8 GPUs) and on real fio
    with open(os.path.join(brought_up["reports"], "gate", "machine1.node.json")) as handle:
        report = json.load(handle)
    assert report["verdict"] == "pass" and record["gate_report_id"] == report["report_id"], report.get("reason")
    checks = {check["name"]: check for phase in report["phases"] for check in phase["checks"]}
    assert checks["gpu_count"]["verdict"] == "pass" and checks["gpu_count"]["measured"] == 8, checks["gpu_count"]
    assert checks["fio_seq_read"]["verdict"] == "pass", checks["fio_seq_read"]
    assert checks["image_release"]["verdict"] == "pass", checks["image_release"]
    # the controller knows the node at the gateway its registration came from, idle (resumed)
    shown = _ctl("scontrol", "show", "node", "-o", "machine1")
    assert "NodeAddr=%s " % slurm["gateway"] in shown, shown
    state = re.search(r"State=(\S+)", shown).group(1).split("+")
    assert state[0] == "IDLE" and not {"DRAIN", "DOWN", "NOT_RESPONDING"} & set(state), shown
    # a job submitted at the controller runs on it: slurmctld allocates it, srun in the controller's
    # container launches the step through the forward, slurmd on the machine runs it and the
    # step's output comes back to srun
    job, host = _ctl("srun", "-w", "machine1", "-N1", "-t", "1", "sh", "-c", 'echo "$SLURM_JOB_ID $(hostname)"').split()
    assert host == "machine1", (job, host)
    deadline = time.monotonic() + 60  # COMPLETING until slurmd on the machine reports the job's end
    while "JobState=COMPLETING" in (shown := _ctl("scontrol", "show", "job", "-o", job)) and time.monotonic() < deadline:
        time.sleep(1)
    assert "JobState=COMPLETED" in shown and "NodeList=machine1" in shown, shown
    # the munge key never reached the play's output
    assert slurm["munge_text"] not in play.stdout + play.stderr
