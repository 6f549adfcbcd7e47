"""Start a QEMU machine the way a server boots: UEFI firmware (OVMF), an NVMe disk, a CD drive.

Software CPU (TCG) only: KVM guests hang on the CI machines. The machine has user-mode
networking, where the host's loopback answers at 10.0.2.2, so an artifact server on
127.0.0.1 is reachable from the guest. Its serial console goes to a file the tests read.
"""
import os
import shutil
import subprocess
import time

from lab.twin.errors import LabError

__all__ = ["OVMF_CODE", "OVMF_VARS", "HOST_FROM_GUEST", "Machine", "read_text"]

OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
HOST_FROM_GUEST = "10.0.2.2"


def read_text(path):
    """A console or log file's text so far; "" before it exists."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


class Machine:
    """One virtual machine's files (firmware variables, NVMe disk, console log) and its argv."""

    def __init__(self, folder, disk_mib=256, disk_serial="GPUFLEET0001", uuid="8b3f0c2e-6d0a-4b7e-9a51-2f4c1d9e7a10",
                 memory_mib=1536):
        self.folder = folder
        self.disk = os.path.join(folder, "nvme0.raw")
        self.vars = os.path.join(folder, "OVMF_VARS.fd")
        self.console = os.path.join(folder, "console.log")
        self.disk_mib = disk_mib
        self.disk_serial = disk_serial
        self.uuid = uuid
        self.memory_mib = memory_mib

    def create(self):
        """Fresh firmware variables and a blank disk."""
        for path in (OVMF_CODE, OVMF_VARS):
            if not os.path.isfile(path):
                raise LabError("%s is missing; fix: apt install ovmf" % path)
        os.makedirs(self.folder, exist_ok=True)
        shutil.copyfile(OVMF_VARS, self.vars)
        with open(self.disk, "wb") as handle:
            handle.truncate(self.disk_mib << 20)

    def argv(self, cdrom=None):
        argv = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-cpu", "max",
                "-m", str(self.memory_mib), "-smp", "1", "-display", "none", "-monitor", "none",
                "-serial", "file:" + self.console, "-no-reboot",
                "-drive", "if=pflash,format=raw,readonly=on,file=" + OVMF_CODE,
                "-drive", "if=pflash,format=raw,file=" + self.vars,
                "-drive", "file=%s,if=none,id=nvme0,format=raw" % self.disk,
                "-device", "nvme,serial=%s,drive=nvme0" % self.disk_serial,
                "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0",
                "-smbios", "type=1,uuid=" + self.uuid]
        if cdrom:
            argv += ["-drive", "file=%s,media=cdrom,if=none,id=cd0,readonly=on" % cdrom,
                     "-device", "ide-cd,drive=cd0,bootindex=1"]
        return argv

    def start(self, cdrom=None):
        """Start the machine; ``-no-reboot`` makes a reboot end the process."""
        if os.path.exists(self.console):
            os.remove(self.console)
        return subprocess.Popen(self.argv(cdrom), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    def console_text(self):
        return read_text(self.console)

    def boot(self, cdrom=None, until=lambda console: False, limit=900, marks=()):
        """Run the machine until it exits (a reboot, with ``-no-reboot``) or ``until(console)``.

        Returns (console text, {mark: seconds after power-on when it first appeared on the
        console}); ``limit`` only turns a hang into an end, the caller judges the console.
        """
        started = time.monotonic()
        seen = {}
        proc = self.start(cdrom)
        try:
            while time.monotonic() - started < limit:
                text = self.console_text()
                for mark in marks:
                    if mark not in seen and mark in text:
                        seen[mark] = round(time.monotonic() - started, 1)
                if proc.poll() is not None or until(text):
                    break
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        seen["end"] = round(time.monotonic() - started, 1)
        return self.console_text(), seen
