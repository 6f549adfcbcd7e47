"""Repair steps: drain -> recycle -> readmit, break_fix after N failures, replace then repair."""
import pytest

from gpufleet.capacity.model import HOT, IDLE, Job, NodeView
from gpufleet.capacity.policy import Day2
from gpufleet.day2.repair import Case, break_fix_record, next_step, replacements

NOW = 1_800_000_000.0
RULES = Day2(drain_timeout="1h", max_recycles=2, recycle_window="1d")


@pytest.mark.parametrize("case,rules,kind", [
    (Case("n", "p", "detected", NOW), RULES, "drain"),
    (Case("n", "p", "detected", NOW, jobs=("j1",)), RULES, "drain"),
    (Case("n", "p", "draining", NOW - 10), RULES, "recycle"),
    (Case("n", "p", "draining", NOW - 10, jobs=("j1",)), RULES, "wait"),
    (Case("n", "p", "draining", NOW - 3600, jobs=("j1",)), RULES, "requeue"),
    (Case("n", "p", "draining", NOW - 3600, jobs=("j1",)),
     Day2(drain_timeout="1h", on_drain_timeout="wait"), "wait"),
    (Case("n", "p", "recycling", NOW), RULES, "wait"),
    (Case("n", "p", "recycle_failed", NOW, failed_recycles=(NOW,)), RULES, "recycle"),
    (Case("n", "p", "recycle_failed", NOW, failed_recycles=(NOW - 60, NOW)), RULES,
     "break_fix"),
    # an old failure outside the window does not count
    (Case("n", "p", "recycle_failed", NOW, failed_recycles=(NOW - 2 * 86400, NOW)), RULES,
     "recycle"),
    (Case("n", "p", "recycled", NOW), RULES, "readmit"),
])
def test_next_step(case, rules, kind):
    step = next_step(case, rules, NOW, HOT)
    assert step.kind == kind, step.reason
    if kind == "readmit":
        assert step.target_tier == HOT


def test_unknown_phase_is_refused():
    with pytest.raises(ValueError, match="unknown phase 'rebooting'"):
        next_step(Case("n", "p", "rebooting", NOW), RULES, NOW, HOT)


def _view(name, tier, pool="p", jobs=()):
    return NodeView(name, pool, tier, "x", jobs=jobs)


def test_replace_then_repair_takes_hot_nodes_of_the_same_pool():
    nodes = [_view("a", "busy", jobs=("j1",)), _view("b", "busy", jobs=("j1",)),
             _view("h2", HOT), _view("h1", HOT), _view("q-h", HOT, pool="q"),
             _view("i1", IDLE)]
    jobs = [Job("j1", 2, state="RUNNING", nodes_assigned=("a", "b")),
            Job("j2", 1, state="RUNNING", nodes_assigned=("a",))]
    steps = replacements({"a", "b"}, jobs, nodes)
    assert [(s.kind, s.node, s.replacement, s.job_id) for s in steps] == [
        ("replace", "a", "h1", "j1"), ("replace", "b", "h2", "j1")]


def test_no_hot_node_says_so():
    nodes = [_view("a", "busy", jobs=("j1",)), _view("b", "busy", jobs=("j1",)),
             _view("i1", IDLE)]
    steps = replacements({"a"}, [Job("j1", 2, state="RUNNING", nodes_assigned=("a", "b"))],
                         nodes)
    assert [(s.kind, s.replacement) for s in steps] == [("wait", None)]
    assert "no hot node" in steps[0].reason


def test_break_fix_record_carries_what_a_technician_needs():
    case = Case("n", "p", "recycle_failed", NOW, failed_recycles=(NOW - 60, NOW))
    rec = break_fix_record(case, [(NOW, "gate: dcgm_l3 failed"), (NOW - 900, "NHC: XID 79")],
                           ["dcgm_l3", "nccl_allreduce"], ["SEL 0x12: PSU 2 lost input"])
    assert rec.reasons[0] == (NOW - 900, "NHC: XID 79")
    assert rec.bmc_log == ("SEL 0x12: PSU 2 lost input",)
    assert rec.failed_recycles == (NOW - 60, NOW)
    assert "gate: dcgm_l3 failed" in rec.summary and "nccl_allreduce" in rec.summary
