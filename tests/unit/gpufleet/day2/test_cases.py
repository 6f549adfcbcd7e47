"""Open repair cases folded from recorded day-2 decisions (the case book survives a restart)."""
from gpufleet.day2.cases import fold_cases
from gpufleet.work.codec import is_day2


def decision(i, kind, node, outcome="ok", at=None, day2=True):
    return {"id": i, "at": float(at if at is not None else i * 10), "outcome_at": float((at or i * 10) + 5),
            "action": kind, "nodes": [node], "pool": "lab", "reason": "why %d" % i, "outcome": outcome,
            "demand": {"action": {"day2": day2}}}


def test_a_drain_opens_a_case_and_its_outcome_moves_the_phase():
    cases = fold_cases([decision(1, "drain", "n1")])
    assert cases["n1"].case.phase == "draining" and cases["n1"].case.since == 15.0
    assert not cases["n1"].in_flight


def test_a_decision_without_outcome_is_in_flight():
    cases = fold_cases([decision(1, "drain", "n1"), decision(2, "recycle", "n1", outcome=None)])
    assert cases["n1"].in_flight and cases["n1"].case.phase == "recycling"


def test_failed_recycles_are_counted_with_their_end_times():
    cases = fold_cases([decision(1, "drain", "n1"), decision(2, "recycle", "n1", outcome="failed: gate"),
                        decision(3, "recycle", "n1", outcome="failed: gate")])
    assert cases["n1"].case.phase == "recycle_failed" and cases["n1"].case.failed_recycles == (25.0, 35.0)
    assert [r[1] for r in cases["n1"].reasons] == ["drain: why 1", "recycle: why 2", "recycle: why 3"]


def test_readmit_or_break_fix_that_succeeded_closes_the_case():
    base = [decision(1, "drain", "n1"), decision(2, "recycle", "n1")]
    assert fold_cases(base)["n1"].case.phase == "recycled"
    assert fold_cases(base + [decision(3, "readmit", "n1")]) == {}
    assert fold_cases(base + [decision(3, "readmit", "n1", outcome="failed: admit")])["n1"].case.phase == "recycled"
    assert fold_cases(base + [decision(3, "break_fix", "n1")]) == {}


def test_a_not_started_step_keeps_the_phase_and_remembers_why():
    cases = fold_cases([decision(1, "drain", "n1"),
                        decision(2, "recycle", "n1", outcome="not started: too few fabric peers")])
    assert cases["n1"].case.phase == "draining" and cases["n1"].not_started.endswith("peers")


def test_capacity_decisions_and_cases_opened_before_the_look_back_are_ignored():
    assert fold_cases([decision(1, "break_fix", "n1", day2=False), decision(2, "drain", "n2", day2=False)]) == {}
    assert fold_cases([decision(1, "recycle", "n1")]) == {}
    assert not is_day2({"demand": None}) and is_day2(decision(1, "drain", "n1"))
