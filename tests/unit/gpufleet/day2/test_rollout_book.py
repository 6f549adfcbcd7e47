"""The rollout book: per-node work and per-rollout gate results from the decision log."""
from gpufleet.day2.rollout_book import fold
from gpufleet.work.codec import rollout_of


def dec(i, action, node, outcome, role="canary", rid=1, version="v2", day2=False):
    extra = {"rollout": {"rollout_id": rid, "role": role, "version": version, "gate_profile": None,
                         "back_to": "joined"}}
    if day2:
        extra = {"day2": True}
    return {"id": i, "at": float(i), "outcome_at": float(i) + 0.5, "action": action, "pool": "lab",
            "nodes": [node], "reason": "r", "outcome": outcome, "demand": {"action": extra}}


def test_a_node_goes_drain_recycle_readmit_and_its_result_is_kept():
    log = [dec(1, "drain", "n1", "ok"), dec(2, "recycle", "n1", None)]
    book = fold(log)
    item = book.items["n1"]
    assert (item.phase, item.in_flight, item.version, item.role) == ("recycling", True, "v2", "canary")
    log[-1] = dec(2, "recycle", "n1", "ok")
    book = fold(log)
    assert book.items["n1"].phase == "recycled" and book.results == {1: {"n1": True}}
    book = fold(log + [dec(3, "readmit", "n1", "ok")])
    assert book.items == {} and book.results == {1: {"n1": True}} and book.moved == {1: frozenset({"n1"})}


def test_a_failed_recycle_closes_the_item_with_a_failed_result_and_a_rollback_unmoves_it():
    log = [dec(1, "drain", "n1", "ok"), dec(2, "recycle", "n1", "failed: playbook failed (rc=2)")]
    book = fold(log)
    assert book.items == {} and book.results == {1: {"n1": False}} and book.moved[1] == {"n1"}
    log += [dec(3, "recycle", "n1", "ok", role="rollback", version="v1")]
    book = fold(log)
    assert book.moved[1] == frozenset() and book.items["n1"].phase == "recycled"
    assert book.items["n1"].role == "rollback"


def test_not_started_keeps_the_phase_and_remembers_why():
    book = fold([dec(1, "drain", "n1", "ok"), dec(2, "recycle", "n1", "not started: too few fabric peers")])
    item = book.items["n1"]
    assert item.phase == "draining" and item.not_started == "not started: too few fabric peers"
    assert book.results == {}


def test_repair_cases_and_steps_without_an_opening_are_not_rollout_work():
    book = fold([dec(1, "drain", "n1", "ok", day2=True), dec(2, "readmit", "n2", "ok")])
    assert book.items == {} and rollout_of(dec(1, "drain", "n1", "ok", day2=True)) is None


def test_a_failed_drain_moved_nothing():
    assert fold([dec(1, "drain", "n1", "failed: scontrol")]).items == {}


def test_failed_rollback_recycles_are_counted_per_node():
    log = [dec(1, "recycle", "n1", "failed: gate", role="canary"),
           dec(2, "recycle", "n1", "failed: gate", role="rollback", version="v1"),
           dec(3, "recycle", "n1", "failed: gate", role="rollback", version="v1")]
    book = fold(log)
    assert book.rollback_failures == {1: {"n1": 2}} and book.moved[1] == {"n1"}


def _renewal(i, action, node, outcome):
    decision = dec(i, action, node, outcome, role="renewal", rid=None, version="v1")
    decision["demand"]["action"]["rollout"]["revalidate"] = True
    return decision


def test_a_renewal_without_a_reimage_goes_drain_revalidate_readmit():
    log = [_renewal(1, "drain", "n1", "ok")]
    assert fold(log).items["n1"].revalidate is True and fold(log).items["n1"].phase == "draining"
    book = fold(log + [_renewal(2, "revalidate", "n1", None)])
    assert (book.items["n1"].phase, book.items["n1"].in_flight) == ("recycling", True)
    book = fold(log + [_renewal(2, "revalidate", "n1", "ok")])
    assert book.items["n1"].phase == "recycled" and book.results == {}   # a renewal is no rollout's result
    assert fold(log + [_renewal(2, "revalidate", "n1", "ok"), _renewal(3, "readmit", "n1", "ok")]).items == {}


def test_a_failed_revalidate_closes_the_item_and_leaves_the_node_to_the_planner():
    book = fold([_renewal(1, "drain", "n1", "ok"), _renewal(2, "revalidate", "n1", "failed: n1 is failed (gate)")])
    assert book.items == {}
