"""A gang member that becomes unreachable, without the lab (playbooks/tasks/gang_member_reasons.yml).

Ansible drops an unreachable host from the play without running its rescue, so nothing
records why it failed. The members' play runs for real on three hosts (one healthy, one
unreachable over ssh to a closed port, one failing a task) and the gang's last-play tasks
run against a real ledger: the rollback must name the unreachable member and take it out of
the gang with a reason. Its BMC address refuses connections, so the reason also says the
BMC could not be read (the lab test reads a real BMC's PowerState Off).
"""
import json
import os
import socket
import sqlite3
import subprocess
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from gpufleet.collection import collections_path
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT, VENV_BIN, need_tool

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "faults", "playbooks", "gang_members.yml")
TO_VALIDATING = ["enrolled", "inspected", "imaging", "configuring", "validating"]


def _closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the socket is closed


def _inventory(tmp_path):
    port = _closed_port()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    bmc = {"gpufleet_bmc_address": "https://127.0.0.1:%d" % port, "gpufleet_bmc_username": "admin",
           "gpufleet_bmc_password": "unused", "gpufleet_bmc_system_id": "gn2", "gpufleet_bmc_validate_certs": False}
    hosts = {"gn1": local, "gn3": dict(local, fail_here=True),
             "gn2": dict(bmc, ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=port,
                         ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes")}
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"gang": {"hosts": hosts}}))  # YAML is a superset of JSON
    return str(path)


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
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ["PATH"], ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    extra = {"gpufleet_ledger": ledger, "gpufleet_gang_id": "g-lost", "gpufleet_members": members}
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", _inventory(tmp_path), PLAYBOOK,
                           "-e", json.dumps(extra)], capture_output=True, text=True, env=env, timeout=300, check=False)
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
    assert nodes["gn3"] == ("failed", "Fail where the inventory says so: acceptance gate failed at phase gpu (report r-gn3)")
    # gn1 passed its play but was still validating when the gang rolled back: failed, saying so
    assert nodes["gn1"] == ("failed", "gang g-lost rolled back while the node was validating; reimage before reuse")
