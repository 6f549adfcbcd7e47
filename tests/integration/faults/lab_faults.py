"""Helpers of the node and controller fault matrix on the lab (tests/integration/faults).

Faults are real: a process killed with SIGKILL, a node's power cut through its BMC
emulator, a slurmd or slurmctld killed or restarted, a corrupted image on the media server.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import time

import requests

from tests.helpers import ROOT
from tests.integration.lab.test_lab_lifecycle import GPUFLEET, LEDGER, _kill_run, query
from tests.integration.lab.test_lab_lifecycle import states as _states

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_admin import check

STATE_DIR = os.path.join(ROOT, "build", "lab")
SLURMCTLD = "gpufleet-lab-slurmctld"
BRINGUP_STEPS = ("enrolled", "inspected", "imaging", "configuring", "validating")


def start_run(run_id, *args):
    """``gpufleet run`` in its own session (so the whole controller can be SIGKILLed)."""
    log = open(os.path.join(ROOT, "build", "fault-%s.log" % run_id), "w")
    return subprocess.Popen([GPUFLEET, "run"] + list(args) + ["--lab", "--run-id", run_id], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def finish(proc, timeout=1500):
    proc.wait(timeout=timeout)
    return proc.returncode


def wait_for(predicate, proc, deadline, poll=0.2):
    """Poll ``predicate`` until it returns a truthy value, the run ends, or the deadline."""
    while time.time() < deadline:
        found = predicate()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            return None
        time.sleep(poll)
    return None


def kill_controller(proc, run_id):
    """SIGKILL gpufleet, ansible-runner and ansible-playbook of a run."""
    os.killpg(proc.pid, signal.SIGKILL)
    _kill_run(run_id)
    proc.wait()


def states():
    """Current states; {} before the first run created the ledger's tables."""
    try:
        return _states()
    except sqlite3.OperationalError:
        return {}


def gang_status(gang_id):
    try:
        rows = query("SELECT status FROM gangs WHERE gang_id = ?", gang_id)
    except sqlite3.OperationalError:
        return None
    return rows[0][0] if rows else None


def ledger_problems():
    book = Ledger(LEDGER, dry_run=True)
    try:
        return check(book)
    finally:
        book.close()


def unexplained_nodes():
    """Recorded nodes without a reason (every node must say why it is where it is)."""
    return query("SELECT node, state FROM nodes WHERE reason IS NULL OR trim(reason) = ''")


def bmc_password():
    with open(os.path.join(STATE_DIR, "secrets", "bmc-password")) as handle:
        return handle.read().strip()


def power_off(node):
    """Cut a node's power through its BMC emulator (Redfish ForceOff), as a PDU fault would."""
    rack = int(node.split("r")[1].split("n")[0])
    url = "https://127.0.20.%d:8443/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset" % (rack, node)
    answer = requests.post(url, json={"ResetType": "ForceOff"}, auth=("admin", bmc_password()),
                           verify=os.path.join(STATE_DIR, "bmc", "pki", "ca.pem"), timeout=30)
    answer.raise_for_status()


def docker(*args, check=False):
    return subprocess.run(["docker"] + list(args), capture_output=True, text=True, timeout=120, check=check)


def kill_slurmd(node):
    return docker("exec", "gpufleet-lab-" + node, "pkill", "-KILL", "-x", "slurmd")


# a client's read that reached no answer from slurmctld (busy, or still starting after a restart)
_NO_ANSWER = ("Socket timed out", "Unable to contact slurm controller")


def _slurm(*command, answer_within=90):
    """stdout of a read-only Slurm client command on the controller container, once slurmctld
    answers it (a case may just have restarted it; a busy host can time out a read right after
    a ping). Only "no answer" is asked again, until ``answer_within``; a controller that never
    answers, or a command that fails otherwise, fails the test: an empty answer is never read as
    "no reservations" or "no nodes"."""
    deadline = time.time() + answer_within
    while True:
        if docker("exec", SLURMCTLD, "scontrol", "ping").returncode == 0:
            proc = docker("exec", SLURMCTLD, *command)
            if proc.returncode == 0:
                return proc.stdout
            assert any(text in proc.stderr for text in _NO_ANSWER), (command, proc.stdout, proc.stderr)
        assert time.time() < deadline, "slurmctld did not answer %s within %d s" % (" ".join(command), answer_within)
        time.sleep(1)


def reservations():
    out = _slurm("scontrol", "show", "reservation", "-o")
    return [line.split()[0].split("=", 1)[1] for line in out.splitlines() if line.startswith("ReservationName=")]


def slurm_states():
    """{node: Slurm's compact state} (``sinfo -N %t``: idle, resv, comp, drain, down*, ...)."""
    out = _slurm("sinfo", "-N", "-h", "-o", "%N %t")
    return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)


def resumed(nodes, settle=30):
    """Members Slurm would start a job on (idle, allocated, mixed, or resv: idle inside an
    active reservation such as an admitted gang's; not drained or down: Slurm shows a drain
    before the reservation, node_state_string_compact). A member still completing a job
    (``comp``: the admission's step has just ended) is neither yet: it is waited for, up to
    ``settle`` seconds, then judged."""
    deadline = time.time() + settle
    found = slurm_states()
    while any(found.get(n, "").startswith("comp") for n in nodes) and time.time() < deadline:
        time.sleep(1)
        found = slurm_states()
    return [n for n in nodes if found.get(n, "").startswith(("idle", "alloc", "mix", "resv"))]


def publish_corrupted_copy(version="lab", copy="corrupt"):
    """A copy of the published image whose artifact bytes were altered after signing
    (storage or transfer corruption): same size, so only the installer's hash check sees it."""
    source = os.path.join(STATE_DIR, "artifacts", version)
    dest = os.path.join(STATE_DIR, "artifacts", copy)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    artifact = os.path.join(dest, "%s.rootfs.tar.gz" % version)
    with open(artifact, "r+b") as handle:
        handle.seek(-4096, os.SEEK_END)
        tail = handle.read()
        handle.seek(-4096, os.SEEK_END)
        handle.write(bytes(b ^ 0xFF for b in tail))
    return "http://127.0.20.250:8701/%s/%s.rootfs.tar.gz" % (copy, version)


def transitions(node):
    return query("SELECT seq, from_state, to_state, run_id FROM transitions WHERE node = ? ORDER BY seq", node)


__all__ = ["start_run", "finish", "wait_for", "kill_controller", "gang_status", "ledger_problems", "states",
           "unexplained_nodes", "power_off", "kill_slurmd", "reservations", "resumed", "publish_corrupted_copy",
           "transitions", "docker", "BRINGUP_STEPS", "STATE_DIR", "SLURMCTLD"]
