"""playbooks/health_check.yml end to end without the lab: the gate's health phase for real
(the acceptance_gate module, the lab's tool shims and gate profile), local hosts as nodes, and
a stand-in Slurm controller host ("ctl", sinfo/scontrol keeping node states in files,
tests/slurm_stubs.py). The hold around the check: idle nodes are drained for it and resumed
after, hot nodes are checked and stay held, a node a job holds is never checked, and a Slurm
controller that cannot be asked leaves every node unchecked, never passed."""
import json
import os
import subprocess

import pytest

from gpufleet.collection import collections_path
from tests import slurm_stubs
from tests.helpers import ROOT, VENV_BIN

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "playbooks", "health_check.yml")
HWSIM = os.path.join(ROOT, "lab", "hwsim")
REASON = "gpufleet:health check"
NODES = {"idle1": ("idle", "none"), "hot1": ("drained", "gpufleet:hot (held)"), "busy1": ("mixed", "none")}


def _check(tmp_path, ctl_reachable=True, faults=()):
    bindir, state = slurm_stubs.install_node_states(tmp_path, NODES)
    pgrep = bindir / "pgrep"        # no job step runs on these "nodes" (the CI machine may run the lab's)
    pgrep.write_text("#!/bin/sh\nexit 1\n")
    pgrep.chmod(0o755)
    with open(os.path.join(HWSIM, "models", "healthy.json")) as handle:
        model = dict(json.load(handle), faults=list(faults))
    (tmp_path / "model.json").write_text(json.dumps(model))
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    ctl = dict(local)
    if not ctl_reachable:            # a file where its temporary directory would go: unreachable
        (tmp_path / "blocker").write_text("")
        ctl["ansible_remote_tmp"] = str(tmp_path / "blocker" / "tmp")
    inventory = {"all": {"hosts": dict({n: dict(local) for n in NODES}, ctl=ctl)}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    out = tmp_path / "health.json"
    extra = {"gpufleet_targets": ",".join(NODES), "gpufleet_slurm_controller_host": "ctl",
             "gpufleet_gate_profile": "lab", "gpufleet_gate_profile_dir": os.path.join(ROOT, "lab", "profiles", "gate"),
             "gpufleet_gate_path_dirs": [os.path.join(HWSIM, "bin")], "gpufleet_image_version": "lab",
             "gpufleet_health_out": str(out)}
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + VENV_BIN + os.pathsep + os.environ["PATH"],
               SLURM_STATE=str(state), GPUFLEET_HWSIM_MODEL=str(tmp_path / "model.json"),
               ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
                           PLAYBOOK, "-e", json.dumps(extra)], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-4000:] + proc.stderr[-2000:]
    calls = (state / "calls").read_text() if (state / "calls").exists() else ""
    return json.loads(out.read_text()), slurm_stubs.node_states(state), calls


def test_idle_nodes_are_held_for_the_check_and_let_go_after_it(tmp_path):
    got, slurm, calls = _check(tmp_path)
    assert got["idle1"]["verdict"] == "pass" and got["hot1"]["verdict"] == "pass", got
    assert got["busy1"] == {"skipped": True, "reason": "not held in Slurm for the check (a job reached it first, "
                                                       "or it is down): not checked"}, got
    assert "scontrol update NodeName=idle1 State=DRAIN Reason=%s" % REASON in calls   # held before the check
    assert slurm == {"idle1": ("idle", "none"), "hot1": NODES["hot1"], "busy1": NODES["busy1"]}  # and after


def test_a_failed_check_is_reported_and_the_node_let_go_for_the_controller_to_act(tmp_path):
    got, slurm, _calls = _check(tmp_path, faults=[{"type": "xid", "gpu": 0}])
    assert got["idle1"]["verdict"] == "fail" and "xid" in got["idle1"]["failed_checks"], got["idle1"]
    assert slurm["idle1"] == ("idle", "none")   # day-2's signal and persistence decide, not the check


def test_a_slurm_controller_that_cannot_be_asked_checks_nothing_and_passes_nothing(tmp_path):
    got, slurm, calls = _check(tmp_path, ctl_reachable=False)
    assert set(got) == set(NODES) and all(r["skipped"] for r in got.values()), got
    assert "the Slurm controller could not hold it for the check" in got["idle1"]["reason"], got["idle1"]
    assert calls == "" and slurm == NODES
