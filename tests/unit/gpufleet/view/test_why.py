import pytest

from gpufleet.capacity.model import Job
from gpufleet.view.answer import exit_code, render_text, to_dict
from gpufleet.view.inputs import SlurmNode
from gpufleet.view.why import resolve, why
from tests.unit.gpufleet.view.history import H, T0, inputs

RUNNING = Job("101", 1, 8, "gpu", state="RUNNING", reason="None", pool="h100", nodes_assigned=("n1",))


def _ask(job, subject=None, **over):
    return why(inputs(jobs=(RUNNING, job) if job else (RUNNING,), **over), subject or job.job_id)


def test_a_running_job_is_answered_at_l4_and_blocks_nothing():
    answer = why(inputs(jobs=(RUNNING,), job_extra={"101": {"start_time": T0 + 2.5 * H}}), "101")
    assert (answer.layer, answer.blocking, exit_code(answer)) == ("L4", False, 0)
    assert "runs on n1" in answer.evidence[0] and "running for 1h30m" in answer.evidence[1]


def test_more_nodes_than_the_pool_owns_is_l1_with_the_count():
    answer = _ask(Job("102", 5, 8, "gpu", reason="Resources", pool="h100"))
    assert (answer.layer, exit_code(answer)) == ("L1", 11)
    # n3 is decommissioned: the pool owns n1, n2 and n4.
    assert answer.details == {"pool": "h100", "needed": 5, "owned": 3}
    assert "owns 3 nodes of SKU h100-sxm-8x (1 decommissioned)" in answer.evidence[0]


def test_unavailable_nodes_are_l1_with_how_many_and_since_when():
    answer = _ask(Job("103", 3, 8, "gpu", reason="Resources", pool="h100"))
    assert answer.layer == "L1" and answer.details["usable"] == 2
    assert answer.evidence == ("1 not enrolled (n4)",)


def test_nodes_on_their_way_are_l2_with_time_left():
    answer = _ask(Job("104", 2, 8, "gpu", reason="Resources", pool="h100"))
    assert (answer.layer, exit_code(answer)) == ("L2", 12)
    # n2 went hot at +3.25 h; the pool's one completed hot stay (n1's ready is not hot) is none.
    assert any(line.startswith("n2 hot for 45m00s") for line in answer.evidence)
    assert answer.evidence[-1].startswith("Slurm's reason: Resources")


def test_a_gang_waiting_for_a_member_in_validation_names_it():
    gang = {"gang_id": "g-105", "job": "105", "size": 2, "status": "provisioning",
            "members": [{"node": "n2", "status": "member"}, {"node": "n1", "status": "member"}]}
    history = inputs().transitions
    # Make n1 validating again: a fresh node whose gate is still running.
    from gpufleet.view.inputs import Transition
    extra = (Transition("n1", T0 + 3.9 * H, "draining"), Transition("n1", T0 + 3.91 * H, "recycling"),
             Transition("n1", T0 + 3.92 * H, "imaging"), Transition("n1", T0 + 3.93 * H, "configuring"),
             Transition("n1", T0 + 3.95 * H, "validating"))
    answer = why(inputs(jobs=(Job("105", 2, 8, "gpu", reason="Resources", pool="h100"),),
                        transitions=history + extra, gangs=(gang,)), "105")
    assert answer.layer == "L2"
    assert answer.evidence[0] == "gang g-105 (provisioning) has 1 of 2 members validated; waiting for n1 validating"
    line = [e for e in answer.evidence if e.startswith("n1 validating")][0]
    # n1 validating for 3 min; the pool's measured validating stays: 0.25 h and 0.15 h.
    assert line.startswith("n1 validating for 3m00s, about 9m00s left (median of 2 measured validating")


def test_a_concurrency_limit_reached_is_evidence():
    from gpufleet.view.inputs import Transition
    extra = (Transition("n2", T0 + 3.5 * H, "recycling"), Transition("n2", T0 + 3.6 * H, "imaging"),
             Transition("n4", T0 + 3.7 * H, "enrolled"), Transition("n5", T0 + 3.6 * H, "imaging"))
    answer = why(inputs(jobs=(Job("106", 2, 8, "gpu", reason="Resources", pool="h100"),),
                        transitions=inputs().transitions + extra, fleet_concurrency=2), "106")
    assert "fleet concurrency limit reached: 2 of 2 bring-ups under way" in answer.evidence


def test_a_dependency_while_nodes_idle_is_l3_with_the_nodes_that_fit():
    answer = _ask(Job("107", 1, 8, "gpu", reason="Dependency", pool="h100"),
                  job_extra={"107": {"dependency": "afterok:106"}})
    assert (answer.layer, exit_code(answer)) == ("L3", 13)
    assert answer.details["nodes_that_fit"] == ["n1"]
    assert "dependency afterok:106" in answer.evidence[0]


def test_a_job_no_pool_serves_is_l1():
    answer = _ask(Job("108", 1, 8, "cpu", reason="Resources", pool=None))
    assert answer.layer == "L1" and "never provisioned for" in answer.summary


@pytest.mark.parametrize("node, layer, blocking, words", [
    ("n1", "L3", False, "joined and schedulable"),
    ("n2", "L2", True, "validated and held (hot)"),
    ("n3", "L1", True, "decommissioned"),
    ("n4", "L1", True, "not enrolled"),
])
def test_nodes(node, layer, blocking, words):
    answer = why(inputs(jobs=(RUNNING,)), node)
    assert (answer.kind, answer.layer, answer.blocking) == ("node", layer, blocking)
    assert words in answer.summary


def test_a_busy_node_names_what_runs_on_it():
    answer = why(inputs(jobs=(RUNNING,), slurm_nodes={"n1": SlurmNode("n1", frozenset({"ALLOCATED"}))}), "n1")
    assert answer.layer == "L4" and answer.details["jobs"] == ["101"]


def test_a_joined_node_slurm_drained_blocks_at_l3_with_slurms_reason():
    answer = why(inputs(slurm_nodes={"n1": SlurmNode("n1", frozenset({"IDLE", "DRAIN"}), "kill task failed")}), "n1")
    assert (answer.layer, answer.blocking) == ("L3", True) and "kill task failed" in answer.evidence[0]


def test_a_pool_reports_its_lowest_blocking_layer():
    jobs = (RUNNING, Job("102", 5, 8, "gpu", reason="Resources", pool="h100"),
            Job("107", 1, 8, "gpu", reason="Dependency", pool="h100"))
    answer = why(inputs(jobs=jobs), "h100")
    assert (answer.kind, answer.layer, exit_code(answer)) == ("pool", "L1", 11)
    assert answer.details["jobs_by_layer"] == {"L1": ["102"], "L2": [], "L3": ["107"], "L4": []}
    assert answer.evidence[0] == "nodes: 1 idle, 1 hot, 1 not enrolled, 1 decommissioned"


def test_text_and_json_forms():
    answer = _ask(Job("102", 5, 8, "gpu", reason="Resources", pool="h100"))
    assert render_text(answer).startswith("job 102: BLOCKED at L1 capacity supply\n")
    assert to_dict(answer)["exit_code"] == 11 and to_dict(answer)["layer_name"] == "capacity supply"


def test_an_unknown_subject_is_an_error_naming_what_to_pass():
    with pytest.raises(LookupError, match="job id, a node name or a pool name"):
        resolve(inputs(), "nope")


def test_a_node_past_the_pools_median_is_called_out_not_given_zero_left():
    from gpufleet.view.waiting import node_progress
    node = {"node": "n9", "state": "validating", "since": T0}
    text, record = node_progress(node, {"validating": [600.0, 900.0]}, T0 + 3600)
    assert text == "n9 validating for 1h00m, longer than usual: check the node (median of 2 measured validating stays: 750 s)"
    assert record["expected_seconds_left"] == 0.0


def test_a_replaced_members_job_is_l2_while_it_is_bound_then_l3_waiting_in_its_reservation():
    """Replace, then repair (docs/day2.md): once the job is requeued, the controller binds it to
    the reservation of its surviving node and the spare; the planner leaves it alone meanwhile."""
    resume = {"action": "resume", "pool": "h100", "nodes": ["n1"], "job": "110", "outcome": "ok", "at": T0 + 3.9 * H,
              "demand": {"action": {"day2": True, "reservation": "110@1", "reserve_nodes": ["n2", "n1"]}}}
    bind = dict(resume, action="bind", outcome=None, at=T0 + 3.95 * H)
    pending = Job("110", 2, 8, "gpu", state="PENDING", reason="BeginTime", pool="h100")

    due = _ask(pending, decisions=(resume,))
    assert (due.layer, due.blocking, exit_code(due)) == ("L2", True, 12)
    assert due.summary.endswith("(bind due on the controller's next pass)")
    assert due.evidence[0] == ("reservation 110@1: its surviving nodes and its replacement n1 (n2,n1)")
    assert due.details == {"reservation": "110@1", "nodes": ["n2", "n1"], "replacement": ["n1"],
                           "bind": "due on the controller's next pass"}
    assert _ask(pending, decisions=(resume, bind)).details["bind"] == "in flight"

    bound = Job("110", 2, 8, "gpu", state="PENDING", reason="BeginTime", pool="h100", reservation="110@1")
    waiting = _ask(bound, decisions=(resume, dict(bind, outcome="ok")))
    assert (waiting.layer, exit_code(waiting)) == ("L3", 13)
    assert waiting.summary.startswith("bound to its replacement's reservation; Slurm holds the job: ")
    assert waiting.evidence[1].startswith("Slurm's reason: BeginTime")
    # the bind failed: the job is the planner's again, answered as any pending job
    assert "reservation" not in _ask(pending, decisions=(resume, dict(bind, outcome="failed: rc 1"))).details
    assert "reservation" not in _ask(pending).details


def test_the_failed_checks_of_a_failed_nodes_last_gate_are_evidence():
    from gpufleet.view.inputs import Transition
    report = {"phases": [{"name": "gpu", "checks": [
        {"name": "nvbandwidth_d2d", "verdict": "fail", "measured": 92.54, "threshold": {"min": 100}, "unit": "GB/s"},
        {"name": "dcgm_diag", "verdict": "pass", "measured": 0}]}]}
    failed = inputs().transitions + (Transition("n2", T0 + 3.9 * H, "failed"),)
    node = why(inputs(transitions=failed, gate_reports={"n2": report}), "n2")
    assert node.layer == "L1"
    assert [e for e in node.evidence if e.startswith("gate check")] == [
        "gate check nvbandwidth_d2d measured 92.54 GB/s (threshold {'min': 100})"]
    # a job waiting on the pool's other node (validating again) names the failed one's checks too
    validating = (Transition("n1", T0 + 3.9 * H, "draining"), Transition("n1", T0 + 3.91 * H, "recycling"),
                  Transition("n1", T0 + 3.95 * H, "validating"))
    job = why(inputs(jobs=(Job("109", 1, 8, "gpu", reason="Resources", pool="h100"),),
                     transitions=failed + validating, gate_reports={"n2": report}), "109")
    assert job.layer == "L2"
    assert "n2 failed the gate: nvbandwidth_d2d measured 92.54 GB/s (threshold {'min': 100})" in job.evidence
