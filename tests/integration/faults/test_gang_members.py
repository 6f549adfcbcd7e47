"""A gang member that becomes unreachable, without the lab (playbooks/tasks/gang_member_reasons.yml).

Ansible drops an unreachable host from the play without running its rescue, so nothing
records why it failed. The members' play runs for real on three hosts (one healthy, one
unreachable over ssh to a closed port, one failing a task) and the gang's last-play tasks
run against a real ledger: the rollback must name the unreachable member and take it out of
the gang with a reason. Its BMC address refuses connections, so the reason also says the
BMC could not be read (the lab test reads a real BMC's PowerState Off).
"""
import os
import sqlite3
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT, need_tool
from tests.integration.faults.ansible_run import ansible_playbook, closed_port, unreadable_bmc

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "faults", "playbooks", "gang_members.yml")
TO_VALIDATING = ["enrolled", "inspected", "imaging", "configuring", "validating"]


def _inventory():
    port = closed_port()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    unreachable = dict(unreadable_bmc("gn2"), ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=port,
                       ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes")
    return {"gang": {"hosts": {"gn1": local, "gn2": unreachable, "gn3": dict(local, fail_here=True)}}}


def _ledger(tmp_path, gang_id, members):
    path = str(tmp_path / "ledger.sqlite")
    book = Ledger(path)
    for node in members:
        book.transition(node, "enrolled", "test", "bring-up enrolled", sku="lab")
    gang.plan(book, gang_id, "lab", len(members), 3600, candidates=members)
    for node in members:  # provisioned by the gang: in the gate when the run lost them
        for target in TO_VALIDATING[1:]:
            book.transition(node, target, "test", "bring-up " + target)
    book.close()
    return path


def test_an_unreachable_member_is_named_in_the_rollback_with_a_reason(tmp_path):
    need_tool("ssh")
    members = ["gn1", "gn2", "gn3"]
    ledger = _ledger(tmp_path, "g-lost", members)
    extra = {"gpufleet_ledger": ledger, "gpufleet_gang_id": "g-lost", "gpufleet_members": members}
    proc = ansible_playbook(tmp_path, PLAYBOOK, _inventory(), extra)
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "UNREACHABLE!" in proc.stdout, out  # the fault really was an unreachable host
    conn = sqlite3.connect(ledger)
    try:
        status, gang_reason = conn.execute("SELECT status, reason FROM gangs WHERE gang_id = 'g-lost'").fetchone()
        nodes = dict((n, (s, r)) for n, s, r in conn.execute("SELECT node, state, reason FROM nodes"))
    finally:
        conn.close()
    assert proc.returncode != 0 and status == "rolled_back", out
    assert "gn2" in gang_reason and "stopped answering" in gang_reason, gang_reason
    state, reason = nodes["gn2"]
    assert state == "failed", nodes
    assert reason.startswith("gn2 stopped answering during the acceptance gate (gang g-lost, found unreachable): "
                             "its BMC could not be read afterwards ("), reason
    assert nodes["gn3"] == ("failed",
                            "Fail where the inventory says so: acceptance gate failed at phase gpu (report r-gn3)")
    # gn1 passed its play but was still validating when the gang rolled back: failed, saying so
    assert nodes["gn1"] == ("failed", "gang g-lost rolled back while the node was validating; reimage before reuse")
