"""A bring-up target that becomes unreachable, without the lab (playbooks/tasks/record_lost_nodes.yml).

Ansible drops an unreachable host without running its rescue; bringup.yml's last play must
record it failed, naming its step and what its BMC said (here the BMC refuses connections:
"could not be read"), and leave alone the nodes that finished, failed with a reason, or were
not in a provisioning step. recycle.yml ends with the same play: a recycle whose fabric peer
stopped answering mid-gate was once left recorded validating (docs/day2.md). When Ansible
drops EVERY target of a play it ends the run there and this play does not run: the capacity
controller then records the nodes (gpufleet.controller.launch, tests/unit/.../test_launch.py).
"""
import os
import sqlite3
import sys

import pytest
import yaml

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT, need_tool
from tests.integration.faults.ansible_run import ansible_playbook, closed_port, unreadable_bmc

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "faults", "playbooks", "record_lost_nodes.yml")
STEPS = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]


@pytest.mark.parametrize("run_kind", [None, "recycle"])
def test_an_unreachable_target_is_recorded_failed_with_its_step_and_bmc(tmp_path, run_kind):
    need_tool("ssh")
    ledger = str(tmp_path / "ledger.sqlite")
    book = Ledger(ledger)
    for node, last in (("n1", "validating"), ("n2", "configuring"), ("n3", "validating"), ("n4", "ready")):
        for index, target in enumerate(STEPS[:STEPS.index(last) + 1]):
            book.transition(node, target, "test", "bring-up " + target, **({"sku": "lab"} if index == 0 else {}))
    book.close()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    unreachable = dict(unreadable_bmc("n2"), ansible_connection="ssh", ansible_host="127.0.0.1",
                       ansible_port=closed_port(), ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes")
    hosts = {"n1": local, "n2": unreachable, "n3": dict(local, fail_here=True), "n4": dict(unreachable)}
    inventory = {"nodes": {"hosts": hosts}, "all": {"hosts": {"localhost": local}}}
    extra = {"gpufleet_ledger": ledger, "gpufleet_run_id": "r-lost", "gpufleet_targets": "nodes"}
    if run_kind:
        extra["gpufleet_lost_run_kind"] = run_kind
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory, extra)
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "UNREACHABLE!" in proc.stdout, out
    conn = sqlite3.connect(ledger)
    try:
        nodes = dict((n, (s, r)) for n, s, r in conn.execute("SELECT node, state, reason FROM nodes"))
    finally:
        conn.close()
    state, reason = nodes["n2"]
    assert state == "failed", (nodes, out)
    assert reason.startswith("n2 stopped answering during configuration (%s run r-lost, found unreachable): "
                             % (run_kind or "bring-up") +
                             "its BMC could not be read afterwards ("), reason
    assert nodes["n1"] == ("validating", "bring-up validating")  # finished its play: not lost
    assert nodes["n3"] == ("validating", "bring-up validating")  # its rescue records it, not this play
    assert nodes["n4"] == ("ready", "bring-up ready")  # unreachable, but not in a provisioning step


def test_a_run_that_lost_no_node_records_nothing(tmp_path):
    ledger = str(tmp_path / "ledger.sqlite")
    book = Ledger(ledger)
    for index, target in enumerate(STEPS[:STEPS.index("validating") + 1]):
        book.transition("n1", target, "test", "bring-up " + target, **({"sku": "lab"} if index == 0 else {}))
    book.close()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"nodes": {"hosts": {"n1": local}}, "all": {"hosts": {"localhost": local}}}
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory, {"gpufleet_ledger": ledger, "gpufleet_targets": "nodes"})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    conn = sqlite3.connect(ledger)
    try:
        assert conn.execute("SELECT state, reason FROM nodes").fetchall() == [("validating", "bring-up validating")]
    finally:
        conn.close()


def test_recycle_and_bringup_end_with_the_play_that_records_lost_nodes():
    for name, kind in (("bringup.yml", None), ("recycle.yml", "recycle")):
        with open(os.path.join(ROOT, "playbooks", name)) as handle:
            last = yaml.safe_load(handle)[-1]
        assert last["hosts"] == "localhost", name
        task = last["tasks"][-1]
        assert task["ansible.builtin.include_tasks"] == "tasks/record_lost_nodes.yml", name
        assert (task.get("vars") or {}).get("gpufleet_lost_run_kind") == kind, name
