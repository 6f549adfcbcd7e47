"""playbooks/tasks/fabric.yml when the peer a node borrowed stops answering (no lab: a local
host and an ssh peer on a closed port).

Ansible drops a host whose delegated task cannot reach the delegate, without its rescue; a
recycle's peer parked mid-gate once left its node recorded validating with no reason
(docs/day2.md). The node must fail the gate instead, recorded with a reason naming the peer.
"""
import os
import sqlite3
import sys

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT, need_tool
from tests.integration.faults.ansible_run import ansible_playbook, closed_port, unreadable_bmc

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "gate", "playbooks", "fabric_peer_lost.yml")
STEPS = ["enrolled", "inspected", "imaging", "configuring", "validating"]


def test_a_node_whose_peer_stops_answering_fails_the_gate_naming_the_peer(tmp_path):
    need_tool("ssh")
    ledger = str(tmp_path / "ledger.sqlite")
    book = Ledger(ledger)
    for index, target in enumerate(STEPS):
        book.transition("n1", target, "test", "recycle " + target, **({"sku": "h100"} if index == 0 else {}))
    book.close()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    gone = dict(unreadable_bmc("p1"), ansible_connection="ssh", ansible_host="127.0.0.1", ansible_port=closed_port(),
                ansible_ssh_common_args="-o ConnectTimeout=5 -o BatchMode=yes")
    inventory = {"nodes": {"hosts": {"n1": dict(local, **unreadable_bmc("n1"))}}, "peers": {"hosts": {"p1": gone}},
                 "all": {"hosts": {"localhost": local}}}
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory, {
        "gpufleet_ledger": ledger, "gpufleet_fabric_peers": ["p1"], "gpufleet_gate_profile": "h100-sxm-8x",
        "gpufleet_gate_profile_dir": os.path.join(ROOT, "profiles", "gate"), "gpufleet_report_dir": str(tmp_path)})
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "UNREACHABLE!" in proc.stdout, out          # the peer was tried, and did not answer
    assert proc.returncode != 0, out
    conn = sqlite3.connect(ledger)
    try:
        state, reason = conn.execute("SELECT state, reason FROM nodes WHERE node = 'n1'").fetchone()
    finally:
        conn.close()
    assert state == "failed", (state, reason, out)
    assert "acceptance gate failed at phase fabric: peer p1 stopped answering before its iperf3 server started" \
        in reason, reason
