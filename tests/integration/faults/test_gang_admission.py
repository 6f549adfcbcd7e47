"""Gang admission faults at the scheduler, without the lab (playbooks/tasks/gang_admit.yml).

The admission tasks run for real (ansible-playbook, the gang module, a real ledger); the
Slurm controller is a small stateful stand-in (scontrol/srun/scancel scripts keeping
reservations and node states in files) so each fault lands exactly after the reservation
exists: a member that cannot run the admission step, a controller that stops answering for a
while (restart), one that never answers again. The lab test
(test_node_faults.py) injects the same faults into the real slurmctld.
"""
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from gpufleet.collection import collections_path
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests import slurm_stubs
from tests.helpers import ROOT, VENV_BIN

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "faults", "playbooks", "gang_admit.yml")
MEMBERS = ["gn1", "gn2"]
BRINGUP = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]
# One script answers as scontrol, srun, scancel, sinfo and squeue (by the name it is called
# with). sinfo lists as held the members never resumed or drained again; squeue knows no job
# (every JOB@EPOCH reservation belongs to an ended job).
FAKE = r"""#!/bin/bash
state=$FAKESLURM_STATE; me=$(basename "$0"); echo "$me $*" >> "$state/calls"
down() { [[ -f $state/ctld_down ]] && { n=$(cat "$state/ctld_down"); [[ $n == forever ]] && return 0;
         (( n > 0 )) && { echo $((n - 1)) > "$state/ctld_down"; return 0; }; }; return 1; }
if down; then echo "slurm_load_ctl_conf error: Unable to contact slurm controller" >&2; exit 1; fi
case "$me $1" in
  "scontrol ping") echo "Slurmctld(primary) at ctl is UP" ;;
  "scontrol update") nodes=${2#NodeName=}; for n in ${nodes//,/ }; do echo "${3#State=}" > "$state/node.$n"; done ;;
  "scontrol show") if [[ ${3:-} == -o ]]; then
                     for f in "$state"/resv.*; do [[ -e $f ]] && echo "ReservationName=${f##*/resv.} Nodes=x"; done
                     exit 0
                   fi
                   [[ -f $state/resv.$3 ]] ;;
  "sinfo "*) while [[ $# -gt 0 && $1 != -n ]]; do shift; done
             for n in ${2//,/ }; do
               s=$(cat "$state/node.$n" 2>/dev/null || echo DRAIN); [[ $s == RESUME ]] || echo "$n"
             done ;;
  "squeue "*) exit 0 ;;
  "scontrol create") name=${3#ReservationName=}; touch "$state/resv.$name"
                     if [[ -f $state/down_after_create ]]; then mv "$state/down_after_create" "$state/ctld_down"; fi ;;
  "scontrol delete") rm "$state/resv.${2#ReservationName=}" ;;
  "scancel "*) exit 0 ;;
  "srun "*) [[ -f $state/dead_member ]] && { echo "srun: error: Task launch failed on $(cat "$state/dead_member")" >&2; exit 1; }
           for n in ${FAKESLURM_MEMBERS//,/ }; do echo "$n"; done ;;
  *) echo "fake slurm: unexpected $me $*" >&2; exit 2 ;;
esac
"""


def _fake_slurm(tmp_path):
    bindir, state = slurm_stubs.install(tmp_path, ("scontrol", "srun", "scancel", "sinfo", "squeue"),
                                        lambda _name: FAKE)
    return str(bindir), str(state)


def _ledger(tmp_path, gang_id):
    path = str(tmp_path / "ledger.sqlite")
    book = Ledger(path)
    for node in MEMBERS:
        for index, target in enumerate(BRINGUP):
            book.transition(node, target, "test", "bring-up " + target, **({"sku": "lab"} if index == 0 else {}))
    gang.plan(book, gang_id, "lab", len(MEMBERS), 3600, candidates=MEMBERS)
    book.close()
    return path


def _controller_host(tmp_path, gone_for_good):
    """An inventory with the Slurm controller as its own host ("ctl", local connection) whose
    temporary directory cannot be made while ``blocker`` is a file: Ansible then finds the
    admission script's task unreachable, as it found the lab's slurmctld container while it
    restarted. A controller ``gone_for_good`` runs no module either (its Python is under the
    blocker): with pipelining a module needs no temporary directory, and on a stopped container
    it fails, as it does here."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, so nothing can be made under it\n")
    ctl = {"ansible_remote_tmp": str(blocker / "tmp")}
    if gone_for_good:
        ctl["ansible_python_interpreter"] = str(blocker / "python")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"localhost": {}, "ctl": ctl}}}))
    return str(inventory), blocker


def _run_until(command, env, on_unreachable):
    """Run the playbook; call ``on_unreachable`` once, when its output first reports a host UNREACHABLE."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines, called = [], False
    for line in proc.stdout:
        lines.append(line)
        if not called and "UNREACHABLE!" in line:
            on_unreachable()
            called = True
    proc.wait(timeout=300)
    return proc.returncode, "".join(lines)


def _admit(tmp_path, gang_id, ctl_unreachable=None, **faults):
    """``ctl_unreachable``: None, "once" (answers again after the first unreachable task) or "forever"."""
    bindir, state = _fake_slurm(tmp_path)
    for name, value in faults.items():
        (tmp_path / "slurm" / name).write_text(value)
    ledger = _ledger(tmp_path, gang_id)
    env = dict(os.environ, PATH=bindir + os.pathsep + VENV_BIN + os.pathsep + os.environ["PATH"],
               FAKESLURM_STATE=state, FAKESLURM_MEMBERS=",".join(MEMBERS), ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               # not an extra var: those would override the Python of a controller gone for good
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    extra = {"gpufleet_ledger": ledger, "gpufleet_gang_id": gang_id, "gpufleet_members": MEMBERS}
    inventory, blocker = "localhost,", None
    if ctl_unreachable:
        inventory, blocker = _controller_host(tmp_path, ctl_unreachable == "forever")
        extra["gpufleet_slurm_controller_host"] = "ctl"
    command = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory, "-c", "local", PLAYBOOK,
               "-e", json.dumps(extra)]
    returncode, output = _run_until(command, env, blocker.unlink if ctl_unreachable == "once" else lambda: None)
    proc = subprocess.CompletedProcess(command, returncode, output, "")
    conn = sqlite3.connect(ledger)
    try:
        status, reason = conn.execute("SELECT status, reason FROM gangs WHERE gang_id = ?", (gang_id,)).fetchone()
        members = dict(conn.execute("SELECT node, state FROM nodes"))
    finally:
        conn.close()
    calls = ""
    if os.path.exists(os.path.join(state, "calls")):
        with open(os.path.join(state, "calls")) as handle:
            calls = handle.read()
    elif proc.returncode and not ctl_unreachable:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-2000:])
    held = dict((f[5:], open(os.path.join(state, f)).read().strip()) for f in os.listdir(state) if f.startswith("node."))
    return {"rc": proc.returncode, "out": proc.stdout[-3000:], "status": status, "reason": reason or "",
            "members": members, "calls": calls, "slurm_nodes": held,
            "reservations": [f[5:] for f in os.listdir(state) if f.startswith("resv.")]}


def test_a_member_that_cannot_run_the_admission_step_rolls_back_and_deletes_the_reservation(tmp_path):
    run = _admit(tmp_path, "g-dead", dead_member="gn2")
    assert run["rc"] != 0, run["out"]
    assert "scontrol create reservation ReservationName=g-dead" in run["calls"]  # the fault came after it
    assert run["reservations"] == [] and "scontrol delete ReservationName=g-dead" in run["calls"]
    assert run["slurm_nodes"] == {"gn1": "DRAIN", "gn2": "DRAIN"}  # held again
    assert run["status"] == "rolled_back" and "gpufleet-gang-admission" in run["reason"] or "srun" in run["reason"]
    assert run["members"] == {"gn1": "ready", "gn2": "ready"}  # back in the warm pool


def test_a_controller_restarting_after_the_reservation_is_waited_for_and_the_reservation_deleted(tmp_path):
    run = _admit(tmp_path, "g-restart", down_after_create="3")  # the next 3 calls find no controller
    assert run["rc"] != 0 and run["status"] == "rolled_back", run["out"]
    assert run["reservations"] == [] and run["slurm_nodes"] == {"gn1": "DRAIN", "gn2": "DRAIN"}
    assert run["calls"].count("scontrol ping") >= 2  # retried until it answered
    assert "may remain" not in run["reason"]


def test_a_controller_that_never_answers_again_is_named_in_the_rollback_reason(tmp_path):
    run = _admit(tmp_path, "g-gone", down_after_create="forever")
    assert run["rc"] != 0 and run["status"] == "rolled_back", run["out"]
    assert run["reservations"] == ["g-gone"]  # it could not be deleted ...
    assert "scontrol delete ReservationName=g-gone" in run["reason"]  # ... and the ledger says so and how
    assert run["members"] == {"gn1": "ready", "gn2": "ready"}


def test_an_admission_without_faults_keeps_the_reservation(tmp_path):
    run = _admit(tmp_path, "g-ok")
    assert run["rc"] == 0 and run["status"] == "admitted", run["out"]
    assert run["reservations"] == ["g-ok"] and run["slurm_nodes"] == {"gn1": "RESUME", "gn2": "RESUME"}


def test_a_retry_after_the_members_were_resumed_resumes_nothing_twice_and_admits(tmp_path):
    """A killed earlier run left the reservation and the members resumed: RESUME of an idle
    node is refused by Slurm, so the old task failed on every retry and rolled the gang back."""
    run = _admit(tmp_path, "g-again", **{"resv.g-again": "", "node.gn1": "RESUME", "node.gn2": "RESUME"})
    assert run["rc"] == 0 and run["status"] == "admitted", run["out"]
    assert "State=RESUME" not in run["calls"] and "create reservation" not in run["calls"]
    assert run["reservations"] == ["g-again"] and run["members"] == {"gn1": "joined", "gn2": "joined"}


def test_a_controller_host_unreachable_at_admission_is_waited_for_and_the_gang_rolled_back(tmp_path):
    """The lab's slurmctld container restarted under the reservation task (docker exec killed):
    Ansible reports an unreachable host, which a rescue does not catch, and the gang stayed
    admitting (2026-11-24 22:56 UTC). Now the failure is the gang's, the rescue waits for the
    host to answer again, holds the members again and rolls the gang back."""
    run = _admit(tmp_path, "g-unreach", ctl_unreachable="once")
    assert run["rc"] != 0 and run["status"] == "rolled_back", run["out"]
    assert "The Slurm controller host ctl did not answer" in run["reason"], run["reason"]
    assert "may remain" not in run["reason"]  # it answered again, so the rescue could clean up
    assert "scontrol ping" in run["calls"] and run["slurm_nodes"] == {"gn1": "DRAIN", "gn2": "DRAIN"}
    assert run["reservations"] == [] and run["members"] == {"gn1": "ready", "gn2": "ready"}


def test_a_controller_host_that_stays_unreachable_is_named_in_the_rollback_reason(tmp_path):
    run = _admit(tmp_path, "g-unreach-gone", ctl_unreachable="forever")
    assert run["rc"] != 0 and run["status"] == "rolled_back", run["out"]
    assert "scontrol delete ReservationName=g-unreach-gone" in run["reason"], run["reason"]
    assert run["calls"] == ""  # nothing reached the controller
    assert run["members"] == {"gn1": "ready", "gn2": "ready"}
