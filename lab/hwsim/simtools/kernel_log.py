"""Lab-only ``dmesg`` simulation: the kernel ring buffer of the simulated node.

SIMULATION ONLY. A container cannot write the host's kernel log (and usually cannot read
it: CAP_SYSLOG), so in the lab the gate's XID check reads this shim instead: it prints a
few benign boot lines plus one NVRM Xid line per ``xid`` fault in the model, in the real
driver's format.
"""
import sys

_BOOT = [
    "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0)",
    "[    4.112233] nvidia: module license 'NVIDIA' taints kernel.",
    "[    4.523456] nvidia-nvlink: Nvlink Core is being initialized, major device number 511",
    "[    5.031337] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s",
]


def main(model, argv):
    if argv and argv[0] not in ("-T", "--ctime", "-k", "--kernel", "--level=err,warn", "-l", "--level"):
        if not argv[0].startswith("--level"):
            sys.stderr.write("dmesg (hwsim): unsupported option %s\n" % argv[0])
            return 1
    for line in _BOOT:
        print(line % model.gpus["driver_version"] if "%s" in line else line)
    stamp = 612.409877
    for fault in model.faults("xid"):
        gpu = int(fault.get("gpu", 0))
        pci = model.bus_id(gpu)[4:-2].lower()
        print("[%12.6f] NVRM: Xid (PCI:%s): %d, pid='<unknown>', name=<unknown>, %s"
              % (stamp, pci, int(fault.get("xid", 79)), fault.get("message", "GPU has fallen off the bus.")))
        stamp += 1.5
    return 0
