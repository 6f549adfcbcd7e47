"""The rescue of a provisioning step, without the lab (playbooks/tasks/record_failure.yml).

The node's module dies with no output, as when the lab cut lab-r2n1's power mid-gate
("Module result deserialization failed: No start of json char found"): its Python is a
script that prints nothing and exits 137 (SIGKILL). The rescue must record the node failed
saying it stopped answering during the acceptance gate and what its BMC said. The BMC address
refuses connections here, so the reason says it could not be read (the lab test reads a real
BMC's PowerState Off).
"""
import os
import sqlite3
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT
from tests.integration.faults.ansible_run import ansible_playbook, unreadable_bmc

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "faults", "playbooks", "record_failure.yml")


def _record(tmp_path, powered=False, **extra):
    """Run the provisioning block on n1 (validating; without power unless ``powered``); (proc, out, state, reason)."""
    ledger = str(tmp_path / "ledger.sqlite")
    book = Ledger(ledger)
    for index, target in enumerate(["enrolled", "inspected", "imaging", "configuring", "validating"]):
        book.transition("n1", target, "test", "bring-up " + target, **({"sku": "lab"} if index == 0 else {}))
    book.close()
    gone = tmp_path / "python-of-a-node-without-power"
    gone.write_text("#!/bin/sh\nexit 137\n")
    gone.chmod(0o755)
    python = sys.executable if powered else str(gone)
    node = dict(unreadable_bmc("n1"), ansible_connection="local", ansible_python_interpreter=python)
    localhost = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"nodes": {"hosts": {"n1": node}}, "all": {"hosts": {"localhost": localhost}}}
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory,
                            dict(extra, gpufleet_ledger=ledger, gpufleet_run_id="cut-off", gpufleet_answer_timeout=3))
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    conn = sqlite3.connect(ledger)
    try:
        state, reason = conn.execute("SELECT state, reason FROM nodes WHERE node = 'n1'").fetchone()
    finally:
        conn.close()
    return proc, out, state, reason


def test_a_module_cut_off_mid_gate_is_recorded_as_a_node_that_stopped_answering(tmp_path):
    proc, out, state, reason = _record(tmp_path)
    assert "Module result deserialization failed" in proc.stdout, out  # the fault is the lab's
    assert proc.returncode != 0 and state == "failed", out
    assert reason.startswith('n1 stopped answering during the acceptance gate (task "Run the acceptance gate"): '
                             "its BMC could not be read afterwards ("), reason
    assert "did not answer POST /redfish/v1/SessionService/Sessions" in reason, reason  # the BMC was asked
    assert reason.endswith("Ansible reported: Module result deserialization failed: No start of json char found")


def test_a_task_that_caught_the_cut_off_and_failed_in_its_own_words_is_a_node_that_stopped_answering(tmp_path):
    """With pipelining the lab's powered-off member failed "Fail when the gate report is missing" (the
    read before it caught the cut-off module): the node does not answer the rescue's probe."""
    proc, out, state, reason = _record(tmp_path, gpufleet_test_caught=True)
    assert proc.returncode != 0 and state == "failed", out
    assert reason.startswith('n1 stopped answering during the acceptance gate (task "Fail when the gate report is '
                             'missing"): its BMC could not be read afterwards ('), reason
    assert reason.endswith("Ansible reported: Gate report is missing (Module result deserialization failed: No start "
                           "of json char found): the node is not admitted."), reason


def test_a_task_s_own_failure_on_a_node_that_answers_keeps_its_message(tmp_path):
    proc, out, state, reason = _record(tmp_path, powered=True, gpufleet_test_own_failure=True)
    assert proc.returncode != 0 and state == "failed", out
    assert "Check whether the node still answers" in proc.stdout, out  # it was asked, and answered
    assert reason == "Fail when the gate did not pass: acceptance gate failed at phase gpu: 7 of 8 GPUs", reason
