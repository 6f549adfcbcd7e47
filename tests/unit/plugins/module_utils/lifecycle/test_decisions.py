import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError


def test_decisions_are_recorded_filtered_and_get_an_outcome(ledger, clock):
    first = decisions.record_decision(ledger, "ctl-a", "h100", "wake", ["n1", "n2"], "job 7 pending",
                                      job="7", demand={"pending_gpus": 16}, supply={"parked": 2})
    clock.advance(10)
    second = decisions.record_decision(ledger, "ctl-a", "b200", "park", ["n9"], "idle 600 s")
    decisions.record_decision(ledger, "ctl-a", "h100", "bringup", ["n3"], "floor hot=1")
    assert second == first + 1
    got = decisions.decisions(ledger, pool="h100")
    assert [d["action"] for d in got] == ["wake", "bringup"]
    assert got[0]["nodes"] == ["n1", "n2"] and got[0]["demand"] == {"pending_gpus": 16}
    assert got[0]["job"] == "7" and got[0]["outcome"] is None and got[0]["controller"] == "ctl-a"
    assert [d["action"] for d in decisions.decisions(ledger, limit=2)] == ["park", "bringup"]
    assert [d["id"] for d in decisions.decisions(ledger, since=clock.now)] == [second, second + 1]
    decisions.set_outcome(ledger, first, "woken: n1, n2 ready in 95 s")
    assert decisions.decisions(ledger, pool="h100")[0]["outcome"] == "woken: n1, n2 ready in 95 s"


def test_unknown_decision_outcome_and_missing_reason_are_refused(ledger):
    with pytest.raises(LedgerError) as err:
        decisions.set_outcome(ledger, 999, "done")
    assert "999" in err.value.msg
    with pytest.raises(LedgerError):
        decisions.record_decision(ledger, "ctl-a", "h100", "wake", [], "")


def test_demand_per_pool_and_minute_replaces_a_rerecorded_minute(ledger):
    assert decisions.record_demand(ledger, "h100", 1800000030, 8, 16, 8) == 1800000000
    decisions.record_demand(ledger, "h100", 1800000059, 8, 24, 16)  # same minute: replaced
    decisions.record_demand(ledger, "h100", 1800000060, 16, 0, 0)
    decisions.record_demand(ledger, "b200", 1800000000, 0, 8, 8)
    rows = decisions.demand_history(ledger, pool="h100")
    assert [(r["minute"], r["gpus_pending"], r["gpus_pending_capacity"]) for r in rows] == [
        (1800000000, 24, 16), (1800000060, 0, 0)]
    assert [r["pool"] for r in decisions.demand_history(ledger, until=1800000000)] == ["b200", "h100"]
    assert len(decisions.demand_history(ledger, since=1800000060)) == 1
    with pytest.raises(LedgerError):
        decisions.record_demand(ledger, "h100", 1800000120, -1, 0, 0)


def test_node_samples(ledger):
    decisions.record_node_sample(ledger, 10.5, "n1", "idle", None)
    decisions.record_node_sample(ledger, 11.0, "n2", "drained", "gpufleet: held")
    decisions.record_node_sample(ledger, 12.0, "n1", "allocated", None)
    assert [s["slurm_state"] for s in decisions.node_samples(ledger, node="n1")] == ["idle", "allocated"]
    assert [s["node"] for s in decisions.node_samples(ledger, since=11.0)] == ["n2", "n1"]


def test_decision_counts_class_outcomes_so_labels_stay_bounded(ledger):
    ok = decisions.record_decision(ledger, "ctl-a", "h100", "wake", ["n1"], "floor")
    decisions.set_outcome(ledger, ok, "ok")
    for node in ("n2", "n3"):
        failed = decisions.record_decision(ledger, "ctl-a", "h100", "wake", [node], "floor")
        decisions.set_outcome(ledger, failed, "failed: playbook failed (rc=2), see build/runs/ctl-%s" % failed)
    decisions.record_decision(ledger, "ctl-a", "h100", "wake", ["n4"], "floor")
    decisions.record_decision(ledger, "ctl-a", None, "park", ["n5"], "idle", outcome="ok")
    assert decisions.decision_counts(ledger) == {("h100", "wake", "ok"): 1, ("h100", "wake", "failed"): 2,
                                                 ("h100", "wake", "pending"): 1, ("", "park", "ok"): 1}


def test_latest_demand_is_each_pools_newest_minute(ledger):
    assert decisions.latest_demand(ledger) == []
    decisions.record_demand(ledger, "h100", 1800000000, 8, 16, 8)
    decisions.record_demand(ledger, "h100", 1800000120, 16, 0, 0)
    decisions.record_demand(ledger, "b200", 1800000060, 0, 8, 8)
    got = decisions.latest_demand(ledger)
    assert [(r["pool"], r["minute"], r["gpus_running"]) for r in got] == [("b200", 1800000060, 0),
                                                                          ("h100", 1800000120, 16)]
