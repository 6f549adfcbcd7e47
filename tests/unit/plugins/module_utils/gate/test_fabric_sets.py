"""plugins/module_utils/gate/fabric_sets.py: the gate's fabric test sets of a run, and which
short set is its members' failure (the run never had the nodes) and which is not (the nodes
that would have completed it left the run first)."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import fabric_sets

GPU_FAILED = {"verdict": "fail", "failed_phase": "gpu", "report_id": "r-gpu"}


def _node(name, fabric_set="", validated=True, left=None):
    return {"node": name, "fabric_set": fabric_set, "validated": validated, "left": left}


def test_validated_nodes_are_cut_within_their_fabric_set_and_a_short_last_set_borrows_its_own():
    nodes = [_node("a1", "su1"), _node("a2", "su1"), _node("a3", "su1"), _node("b1", "su2"), _node("b2", "su2"),
             _node("x9", "su2", validated=False)]
    cut = fabric_sets.cut(nodes, 2)
    assert cut["sets"] == [["a1", "a2"], ["a3", "a1"], ["b1", "b2"]]
    assert cut["validated"] == ["a1", "a2", "a3", "b1", "b2"] and cut["not_run"] == {}


def test_a_lone_node_borrows_a_peer_of_its_own_fabric_set_only():
    peers = [{"node": "pb", "fabric_set": "su2"}, {"node": "pa", "fabric_set": "su1"}]
    cut = fabric_sets.cut([_node("a1", "su1"), _node("b1", "su2")], 2, peers)
    assert cut["sets"] == [["a1", "pa"], ["b1", "pb"]] and cut["not_run"] == {}


def test_a_node_whose_only_peer_failed_its_gpu_phase_is_not_run_naming_the_peer():
    left = fabric_sets.left_why(GPU_FAILED, "acceptance gate failed at phase gpu: ...", "validating")
    cut = fabric_sets.cut([_node("n1", validated=False, left=left), _node("n2")], 2)
    assert cut["sets"] == [["n2"]]                       # short: never passed
    assert cut["not_run"] == {"n2": "not run: fabric set short: peer n1 failed its gpu phase; "
                                    "fix: re-run with gpufleet_fabric_peers or more members"}


def test_a_known_good_peer_completes_a_set_its_failed_member_left_short():
    peers = [{"node": "p1", "fabric_set": ""}]
    cut = fabric_sets.cut([_node("n1", validated=False, left="failed its gpu phase"), _node("n2")], 2, peers)
    assert cut["sets"] == [["n2", "p1"]] and cut["not_run"] == {}


def test_a_run_that_never_had_enough_nodes_is_refused_not_excused():
    # a lone node, no peer: the run was asked for what the gate cannot do (tasks/fabric.yml fails it)
    assert fabric_sets.cut([_node("n1")], 2)["not_run"] == {}
    # 4 per set, 2 in the run, one left: even with it the set would have been short
    cut = fabric_sets.cut([_node("n1"), _node("n2", validated=False, left="failed its gpu phase")], 4)
    assert cut["sets"] == [["n1"]] and cut["not_run"] == {}


def test_every_run_member_of_a_short_set_is_not_run_and_borrowed_peers_are_not_recorded():
    nodes = [_node("n1"), _node("n2"), _node("n3", validated=False, left="failed while imaging"),
             _node("n4", validated=False, left="stopped answering")]
    cut = fabric_sets.cut(nodes, 4, [{"node": "p1", "fabric_set": ""}])
    assert cut["sets"] == [["n1", "n2", "p1"]]
    why = ("not run: fabric set short: peer n3 failed while imaging, peer n4 stopped answering; "
           "fix: re-run with gpufleet_fabric_peers or more members")
    assert cut["not_run"] == {"n1": why, "n2": why}


def test_a_node_that_left_another_fabric_set_excuses_nobody():
    nodes = [_node("a1", "su1"), _node("b1", "su2", validated=False, left="failed its gpu phase")]
    cut = fabric_sets.cut(nodes, 2)
    assert cut["sets"] == [["a1"]] and cut["not_run"] == {}


def test_a_full_set_is_unaffected_by_a_member_that_left():
    nodes = [_node("n1"), _node("n2", validated=False, left="failed its gpu phase"), _node("n3")]
    cut = fabric_sets.cut(nodes, 2)
    assert cut["sets"] == [["n1", "n3"]] and cut["not_run"] == {}


@pytest.mark.parametrize("facts,in_play,expected", [
    ({"gpufleet_step": {"state": "validating"}}, True, {"validated": True, "left": None}),
    ({"gpufleet_step": {"state": "validating"}, "gpufleet_gate": GPU_FAILED,
      "gpufleet_failure_reason": "acceptance gate failed at phase gpu"}, True,
     {"validated": False, "left": "failed its gpu phase"}),
    ({"gpufleet_step": {"state": "imaging"}, "gpufleet_failure_reason": "imaging timed out"}, False,
     {"validated": False, "left": "failed while imaging"}),
    ({"gpufleet_step": {"state": "validating"}}, False, {"validated": False, "left": "stopped answering"}),
    # a warm-pool member of a gang (already ready) neither reaches the fabric phase nor left the run
    ({"gpufleet_step": {"state": "ready"}}, True, {"validated": False, "left": None}),
    ({}, True, {"validated": False, "left": None}),
    # outside --limit, or failed an earlier play (enroll): never started its steps in this run
    ({}, False, {"validated": False, "left": None}),
    # its gate passed, then a later step failed: not a gate failure of a phase
    ({"gpufleet_step": {"state": "validating"}, "gpufleet_gate": {"verdict": "pass", "failed_phase": ""},
      "gpufleet_failure_reason": "copy failed"}, True, {"validated": False, "left": "failed while validating"}),
])
def test_describe_reads_a_node_of_the_run_from_its_facts(facts, in_play, expected):
    described = fabric_sets.describe("n1", dict(facts, gpufleet_fabric_set="su1"), in_play)
    assert described == dict(expected, node="n1", fabric_set="su1")


def test_a_set_needs_at_least_one_node():
    with pytest.raises(ValueError, match="at least 1 node"):
        fabric_sets.cut([_node("n1")], 0)
