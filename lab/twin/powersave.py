"""LAB SIMULATION: the slurmctld host's side of Slurm's power saving.

The lab's slurmctld runs in a container without gpufleet. Its ResumeProgram, SuspendProgram
and ResumeFailProgram (lab/slurm/powersave/gpufleet-slurm-relay) leave ``KIND HOSTLIST`` in
a folder shared with the host; the lab manager hands each request to the real
``gpufleet slurm KIND HOSTLIST --spool SPOOL``, as the production wrapper on a slurmctld host
does (docs/controller.md). Requests are taken oldest first and removed once handed over; one
the command refuses is kept beside them as ``*.refused`` with the command's answer.
"""
import logging
import os
import subprocess
import sys
import threading

LOG = logging.getLogger("gpufleet.lab.powersave")
IN_CONTAINER = "/var/spool/gpufleet-lab-powersave"
PROGRAMS_IN_CONTAINER = "/opt/gpufleet-lab-powersave"
KINDS = ("resume", "suspend", "resume-fail")


def gpufleet_command():
    return os.path.join(os.path.dirname(sys.executable), "gpufleet")


def relay_once(folder, spool, run=subprocess.run):
    """Hand every waiting request to ``gpufleet slurm``; returns [(kind, hostlist, ok)]."""
    handled = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".request"):
            continue
        path = os.path.join(folder, name)
        with open(path) as handle:
            words = handle.read().split()
        if len(words) != 2 or words[0] not in KINDS:
            os.replace(path, path[:-len(".request")] + ".refused")
            LOG.error("power saving: unreadable request %s: %r", name, words)
            handled.append((None, None, False))
            continue
        kind, hostlist = words
        proc = run([gpufleet_command(), "slurm", kind, hostlist, "--spool", spool],
                   capture_output=True, text=True, timeout=60)
        if proc.returncode == 0:
            os.unlink(path)
            LOG.info("power saving: %s %s -> %s", kind, hostlist, proc.stdout.strip())
        else:
            with open(path[:-len(".request")] + ".refused", "w") as handle:
                handle.write("%s %s\n%s" % (kind, hostlist, proc.stderr))
            os.unlink(path)
            LOG.error("power saving: gpufleet slurm %s %s failed: %s", kind, hostlist, proc.stderr.strip())
        handled.append((kind, hostlist, proc.returncode == 0))
    return handled


def start_relay(folder, spool, interval=0.5):
    """Poll ``folder`` in a daemon thread for as long as the lab manager runs."""
    stop = threading.Event()

    def loop():
        while not stop.wait(interval):
            try:
                relay_once(folder, spool)
            except (OSError, subprocess.SubprocessError) as exc:
                LOG.error("power saving relay: %s", exc)
    threading.Thread(target=loop, daemon=True, name="powersave-relay").start()
    return stop
