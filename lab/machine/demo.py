"""`make demo-machine`: image the lab's virtual machine through its Redfish BMC, as bring-up would.

Starts the machine rig (lab/machine/rig.py: a UEFI virtual machine with an NVMe disk behind
sushy-tools' Redfish emulator, the deploy service, an installer ISO, a signed stand-in disk
image), writes a one-host inventory with the installer path's variables and runs the
bring-up's imaging step (lab/playbooks/machine_image.yml -> playbooks/tasks/image_media.yml)
with ansible-playbook, then shows the installer's report and the machine's console until the
disk's boot loader runs. Everything stops at the end. Software CPU: a few minutes.

    python -m lab.machine.demo [--work build/machine-demo] [--keep]
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import gpufleet  # noqa: F401  (installs the collection loader)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONSOLE_LIMIT = 900


def _say(text):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), text), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lab.machine.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "machine-demo"),
                        help="working folder (replaced on each run)")
    parser.add_argument("--keep", action="store_true", help="keep the working folder (console, deploy state)")
    args = parser.parse_args(argv)
    from lab.machine.rig import DISK_BOOTED, MachineRig, libvirtd_ready
    not_ready = libvirtd_ready()
    if not_ready:   # one line with the fix, no traceback
        print("demo-machine: %s" % not_ready, file=sys.stderr)
        return 1
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    # the first boot's authorized key: a fresh one (the stand-in disk never runs sshd)
    ssh_key = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + " lab-demo"
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    started = time.monotonic()
    with MachineRig(args.work, ROOT, ssh_key, log=_say) as rig:
        settings = dict(rig.settings(), gpufleet_cli=os.path.join(os.path.dirname(sys.executable), "gpufleet"))
        inventory = rig.inventory(os.path.join(args.work, "inventory.json"), settings)
        _say("ansible-playbook lab/playbooks/machine_image.yml: power off, the install order, the installer "
             "as virtual media, boot once from CD, power on, follow the deploy agent")
        play_started = time.monotonic()
        play = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
                               os.path.join(ROOT, "lab", "playbooks", "machine_image.yml")], cwd=ROOT, check=False)
        _say("playbook exited %d after %.0f s" % (play.returncode, time.monotonic() - play_started))
        for event in rig.book.events("machine1"):
            _say("deploy agent: %s" % " ".join("%s=%s" % (k, event[k]) for k in sorted(event) if k not in ("run", "received_at")))
        deadline = time.monotonic() + CONSOLE_LIMIT
        while play.returncode == 0 and DISK_BOOTED not in rig.vm.console_text() and time.monotonic() < deadline:
            time.sleep(2)
        booted = DISK_BOOTED in rig.vm.console_text()
        tail = [line for line in rig.vm.console_text().splitlines() if line.startswith("gpufleet-")][-8:]
        print("\n".join("    console: " + line for line in tail))
    ok = play.returncode == 0 and booted
    _say("%s in %.0f s" % ("imaged through Redfish virtual media; the disk's boot loader ran" if ok else
                           "FAILED: see the playbook output and the console above", time.monotonic() - started))
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
