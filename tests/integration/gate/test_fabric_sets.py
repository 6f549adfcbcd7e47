"""playbooks/tasks/fabric_sets.yml: the gate's fabric test sets never cross a fabric set, a
short set borrows only known-good peers of its own fabric set, and a set short only because its
other member failed an earlier phase is "not run" for the healthy one (no lab: local hosts)."""
import json
import os

from tests.helpers import ROOT
from tests.integration.faults.ansible_run import ansible_playbook

PLAYBOOK = os.path.join(ROOT, "tests", "integration", "gate", "playbooks", "fabric_sets.yml")


def _cut(tmp_path, hosts, peers=(), size=2):
    """hosts: {name: host vars}; -> (the test sets, the run); the nodes not run: _not_run."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory = {"all": {"children": {"nodes": {"hosts": {n: dict(local, **v) for n, v in hosts.items()}}}}}
    out = tmp_path / "sets.json"
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory,
                            {"gpufleet_test_out": str(out), "gpufleet_fabric_peers": list(peers), "fabric_size": size})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = json.loads(out.read_text())
    proc.not_run = found["not_run"]
    return found["sets"], proc


def test_validated_nodes_are_cut_within_their_fabric_set(tmp_path):
    hosts = {"a1": {"validated": True, "gpufleet_fabric_set": "su1"},
             "a2": {"validated": True, "gpufleet_fabric_set": "su1"},
             "a3": {"validated": True, "gpufleet_fabric_set": "su1"},
             "b1": {"validated": True, "gpufleet_fabric_set": "su2"},
             "b2": {"validated": True, "gpufleet_fabric_set": "su2"},
             "x9": {"validated": False, "gpufleet_fabric_set": "su2"}}
    sets, _proc = _cut(tmp_path, hosts)
    # su1's short last set borrows a1 (its own set), never b1 or b2
    assert sets == [["a1", "a2"], ["a3", "a1"], ["b1", "b2"]]


def test_a_lone_node_borrows_a_peer_of_its_own_fabric_set_only(tmp_path):
    hosts = {"a1": {"validated": True, "gpufleet_fabric_set": "su1"},
             "b1": {"validated": True, "gpufleet_fabric_set": "su2"},
             "pa": {"gpufleet_fabric_set": "su1"}, "pb": {"gpufleet_fabric_set": "su2"}}
    sets, _proc = _cut(tmp_path, hosts, peers=["pb", "pa"])
    assert sets == [["a1", "pa"], ["b1", "pb"]]


def test_a_peer_of_another_fabric_set_leaves_the_set_short(tmp_path):
    hosts = {"a1": {"validated": True, "gpufleet_fabric_set": "su1"}, "pb": {"gpufleet_fabric_set": "su2"}}
    sets, _proc = _cut(tmp_path, hosts, peers=["pb", "not-in-inventory"])
    assert sets == [["a1"]]          # tasks/fabric.yml refuses it, naming the fabric set


def test_without_fabric_sets_the_run_is_one_set(tmp_path):
    hosts = {"n1": {"validated": True}, "n2": {"validated": True}, "n3": {"validated": True}, "p": {}}
    sets, _proc = _cut(tmp_path, hosts, peers=["p"], size=4)
    assert sets == [["n1", "n2", "n3", "p"]]


def test_a_member_whose_only_peer_failed_its_gpu_phase_is_not_run_naming_the_peer(tmp_path):
    hosts = {"n1": {"failed_phase": "gpu"}, "n2": {"validated": True}}
    sets, proc = _cut(tmp_path, hosts)
    assert sets == [["n2"]]                    # short: never passed (tasks/fabric.yml holds it back)
    assert proc.not_run == {"n2": "not run: fabric set short: peer n1 failed its gpu phase; "
                                  "fix: re-run with gpufleet_fabric_peers or more members"}


def test_a_known_good_peer_completes_the_set_a_failed_member_left_short(tmp_path):
    hosts = {"n1": {"failed_phase": "gpu"}, "n2": {"validated": True}, "p1": {}}
    sets, proc = _cut(tmp_path, hosts, peers=["p1"])
    assert sets == [["n2", "p1"]] and proc.not_run == {}


def test_a_lone_node_without_peers_is_not_excused(tmp_path):
    sets, proc = _cut(tmp_path, {"n1": {"validated": True}})
    assert sets == [["n1"]] and proc.not_run == {}     # tasks/fabric.yml refuses it: needs 2 nodes per set
