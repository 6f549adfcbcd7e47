"""Start a QEMU machine the way a server boots: UEFI firmware (OVMF) with Secure Boot enforcing,
an NVMe disk, a CD drive.

The firmware is Debian's OVMF Secure Boot build (``OVMF_CODE_4M.secboot.fd``, which refuses to
run without SMM) with a copy of the variable store that has Microsoft's keys in ``db``/``KEK``
and Secure Boot on (``OVMF_VARS_4M.ms.fd``): shim, signed by Microsoft's UEFI CA, runs; an
unsigned boot loader does not. ``secure_boot=False`` gives the plain build with the empty store
(no keys, Secure Boot off), a machine whose Secure Boot is off, for the refusal's test.

Software CPU (TCG) only: KVM guests hang on the CI machines. The machine has user-mode
networking, where the host's loopback answers at 10.0.2.2, so an artifact server on
127.0.0.1 is reachable from the guest. Its serial console goes to a file the tests read.
"""
import os
import shutil
import subprocess
import time

from lab.twin.errors import LabError

__all__ = ["OVMF_CODE", "OVMF_VARS", "OVMF_CODE_NO_SB", "OVMF_VARS_NO_KEYS", "HOST_FROM_GUEST", "firmware",
           "Machine", "read_text"]

OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
OVMF_CODE_NO_SB = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS_NO_KEYS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
HOST_FROM_GUEST = "10.0.2.2"


def read_text(path):
    """A console or log file's text so far; "" before it exists."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def firmware(secure_boot=True):
    """(code, variable store template) for a machine with Secure Boot enforcing, or off."""
    return (OVMF_CODE, OVMF_VARS) if secure_boot else (OVMF_CODE_NO_SB, OVMF_VARS_NO_KEYS)


def nvme_drive(disk):
    """The ``-drive`` value of the machine's NVMe disk. The disk is scratch, so ``cache=unsafe``:
    QEMU drops the guest's flushes. Honoured, one flush of a freshly written image on a busy host
    can outlast the guest NVMe driver's 30 s command timeout; the driver then aborts, resets and
    removes the disk in the middle of imaging (seen as I/O errors and a failed e2fsck)."""
    return "file=%s,if=none,id=nvme0,format=raw,cache=unsafe" % disk


class Machine:
    """One virtual machine's files (firmware variables, NVMe disk, console log) and its argv."""

    def __init__(self, folder, disk_mib=256, disk_serial="GPUFLEET0001", uuid="8b3f0c2e-6d0a-4b7e-9a51-2f4c1d9e7a10",
                 memory_mib=1536, secure_boot=True):
        self.folder = folder
        self.secure_boot = secure_boot
        self.code, self.vars_template = firmware(secure_boot)
        self.disk = os.path.join(folder, "nvme0.raw")
        self.vars = os.path.join(folder, "OVMF_VARS.fd")
        self.console = os.path.join(folder, "console.log")
        self.disk_mib = disk_mib
        self.disk_serial = disk_serial
        self.uuid = uuid
        self.memory_mib = memory_mib

    def create(self):
        """Fresh firmware variables and a blank disk."""
        for path in (self.code, self.vars_template):
            if not os.path.isfile(path):
                raise LabError("%s is missing; fix: apt install ovmf" % path)
        os.makedirs(self.folder, exist_ok=True)
        shutil.copyfile(self.vars_template, self.vars)
        with open(self.disk, "wb") as handle:
            handle.truncate(self.disk_mib << 20)

    def argv(self, cdrom=None, before=()):
        """``before``: CDs the firmware tries first, in order (e.g. one it must refuse)."""
        argv = ["qemu-system-x86_64", "-machine", "q35,smm=on" if self.secure_boot else "q35",
                "-accel", "tcg", "-cpu", "max",
                "-m", str(self.memory_mib), "-smp", "1", "-display", "none", "-monitor", "none",
                "-serial", "file:" + self.console, "-no-reboot"]
        if self.secure_boot:
            # only SMM code may write the variable store: the OS cannot turn Secure Boot off
            argv += ["-global", "driver=cfi.pflash01,property=secure,value=on"]
        argv += ["-drive", "if=pflash,format=raw,readonly=on,file=" + self.code,
                 "-drive", "if=pflash,format=raw,file=" + self.vars,
                 "-drive", nvme_drive(self.disk),
                 "-device", "nvme,serial=%s,drive=nvme0" % self.disk_serial,
                 "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0",
                 "-smbios", "type=1,uuid=" + self.uuid]
        for index, path in enumerate(list(before) + ([cdrom] if cdrom else [])):
            argv += ["-drive", "file=%s,media=cdrom,if=none,id=cd%d,readonly=on" % (path, index),
                     "-device", "ide-cd,drive=cd%d,bus=ide.%d,bootindex=%d" % (index, index, index + 1)]
        return argv

    def start(self, cdrom=None, before=()):
        """Start the machine; ``-no-reboot`` makes a reboot end the process."""
        if os.path.exists(self.console):
            os.remove(self.console)
        return subprocess.Popen(self.argv(cdrom, before), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    def console_text(self):
        return read_text(self.console)

    def boot(self, cdrom=None, until=lambda console: False, limit=900, marks=(), before=()):
        """Run the machine until it exits (a reboot, with ``-no-reboot``) or ``until(console)``.

        Returns (console text, {mark: seconds after power-on when it first appeared on the
        console}); ``limit`` only turns a hang into an end, the caller judges the console.
        """
        started = time.monotonic()
        seen = {}
        proc = self.start(cdrom, before)
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
