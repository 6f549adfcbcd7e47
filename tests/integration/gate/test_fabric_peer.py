"""playbooks/tasks/fabric.yml when the peer a node borrowed stops answering (no lab: a local
host and an ssh peer on a closed port), and when a node's only fabric peer in the run failed
its gpu phase (two local hosts).

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
PEER_FAILED = os.path.join(ROOT, "tests", "integration", "gate", "playbooks", "fabric_peer_failed.yml")
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
    state, reason = _records(ledger)[0]["n1"]
    assert state == "failed", (state, reason, out)
    assert "acceptance gate failed at phase fabric: peer p1 stopped answering before its iperf3 server started" \
        in reason, reason


def _validating_ledger(tmp_path, nodes):
    ledger = str(tmp_path / "ledger.sqlite")
    book = Ledger(ledger)
    for node in nodes:
        for index, target in enumerate(STEPS):
            book.transition(node, target, "test", "bring-up " + target, **({"sku": "h100"} if index == 0 else {}))
    book.close()
    return ledger


def _records(ledger):
    conn = sqlite3.connect(ledger)
    try:
        nodes = {n: (s, r) for n, s, r in conn.execute("SELECT node, state, reason FROM nodes")}
        failed = dict(conn.execute("SELECT node, count(*) FROM transitions WHERE to_state = 'failed' GROUP BY node"))
    finally:
        conn.close()
    return nodes, failed


@pytest.mark.parametrize("keep_going", [False, True], ids=["bringup", "gang"])
def test_a_healthy_member_whose_only_peer_failed_its_gpu_phase_is_not_failed(tmp_path, keep_going):
    """A bring-up of two cold members: n1 fails its gpu phase, n2 passes its single-node phases and
    reaches the fabric phase alone. n2 is not at fault: it must not be recorded failed (that would count
    toward its break_fix), must not be ready or joined (no fabric proof), and must say why."""
    ledger = _validating_ledger(tmp_path, ["n1", "n2"])
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"nodes": {"hosts": {"n1": dict(local, gate_failed_phase="gpu", **unreadable_bmc("n1")),
                                     "n2": dict(local, **unreadable_bmc("n2"))}},
                 "all": {"hosts": {"localhost": local}}}
    proc = ansible_playbook(tmp_path, PEER_FAILED, inventory, {
        "gpufleet_ledger": ledger, "gpufleet_gate_profile": "h100-sxm-8x", "gpufleet_keep_going": keep_going,
        "gpufleet_gate_profile_dir": os.path.join(ROOT, "profiles", "gate"), "gpufleet_report_dir": str(tmp_path)})
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode != 0 or keep_going, out      # a bring-up with a node not validated fails
    nodes, failed = _records(ledger)
    assert nodes["n1"][0] == "failed" and "acceptance gate failed at phase gpu" in nodes["n1"][1], nodes
    state, reason = nodes["n2"]
    assert state == "recycling", (state, reason, out)   # not failed, not ready: validated again with a peer
    assert reason == ("not run: fabric set short: peer n1 failed its gpu phase; "
                      "fix: re-run with gpufleet_fabric_peers or more members"), reason
    assert "n2" not in failed, failed                   # no gate failure counted toward its break_fix
    assert "needs 2 nodes per set" not in proc.stdout, out
