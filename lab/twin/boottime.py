"""LAB SIMULATION: node containers that can report their own start as their boot (lab only).

A container shares the host's kernel, so slurmd reports the host's uptime and a node the lab
"powered on" looks as if it never rebooted. Slurm's power saving then waits for that node's
boot until ResumeTimeout ("Still waiting for boot of node"). ``build`` (run by `gpufleet lab
up`) compiles lab/hwsim/boottime/boot_uptime.c with the host's C compiler into the lab's state
directory; the node manager mounts it into every node container and preloads it
(lab/twin/nodes.py). It changes nothing until ``enable`` writes its flag file: from then on
sysinfo() in a node counts uptime from the container's start, as a real machine counts it
from its power-on. Only the Slurm power-saving scenario enables it; ``disable`` turns it off.
"""
import os
import shutil
import subprocess

from lab.twin.errors import LabError

__all__ = ["build", "enable", "disable", "directory", "MOUNT", "LIBRARY"]

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hwsim", "boottime",
                      "boot_uptime.c")
MOUNT = "/opt/gpufleet-lab-boottime"     # the C file's ENABLED flag lives here
LIBRARY = "boot_uptime.so"
_FLAG = "enabled"


def directory(cfg):
    return cfg.path("boottime")


def build(cfg):
    """Compile the library into the lab's state directory (fail closed: no compiler, no lab)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise LabError("No C compiler to build the lab's boot-time simulation (%s). Fix: apt-get install gcc "
                       "libc6-dev (scripts/bootstrap-host.sh installs them)." % SOURCE)
    os.makedirs(directory(cfg), exist_ok=True)
    tmp = os.path.join(directory(cfg), LIBRARY + ".tmp")
    proc = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", tmp, SOURCE, "-ldl"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise LabError("Building the lab's boot-time simulation failed (exit %d): %s"
                       % (proc.returncode, proc.stderr.strip()[-500:]))
    os.replace(tmp, os.path.join(directory(cfg), LIBRARY))
    return directory(cfg)


def enable(cfg):
    """From now on a node's uptime counts from its container's (re)start."""
    if not os.path.exists(os.path.join(directory(cfg), LIBRARY)):
        raise LabError("The lab's boot-time simulation is not built: start the lab first (`gpufleet lab up`).")
    with open(os.path.join(directory(cfg), _FLAG), "w") as handle:
        handle.write("container start is the node's boot (lab/twin/boottime.py)\n")


def disable(cfg):
    try:
        os.remove(os.path.join(directory(cfg), _FLAG))
    except FileNotFoundError:
        pass
