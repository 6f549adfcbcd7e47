import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import GangError

from .conftest import walk

TO_READY = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]


def _fleet(ledger, ready=(), enrolled=(), sku="lab"):
    for name in ready:
        walk(ledger, name, TO_READY, sku=sku)
    for name in enrolled:
        walk(ledger, name, ["enrolled"], sku=sku)


def _provision(ledger, names, upto="ready"):
    for name in names:
        for target in TO_READY[1:TO_READY.index(upto) + 1]:
            ledger.transition(name, target, "t", "provision")


def test_plan_takes_the_warm_pool_first_and_reserves(ledger):
    _fleet(ledger, ready=["n5", "n6"], enrolled=["n1", "n2", "n3", "n4"])
    planned, changed = gang.plan(ledger, "g1", "lab", 4, 600)
    assert changed is True and planned["status"] == "planned"
    assert planned["pool"] == ["n5", "n6"] and planned["provision"] == ["n1", "n2"]
    assert {n["node"] for n in ledger.nodes() if n["gang_id"] == "g1"} == {"n1", "n2", "n5", "n6"}


def test_plan_is_idempotent_and_refuses_a_changed_request(ledger):
    _fleet(ledger, enrolled=["n1", "n2"])
    first, _unused = gang.plan(ledger, "g1", "lab", 2, 600)
    again, changed = gang.plan(ledger, "g1", "lab", 2, 600)
    assert changed is False and again["members"] == first["members"]
    with pytest.raises(GangError):
        gang.plan(ledger, "g1", "lab", 1, 600)


def test_plan_fails_when_capacity_is_short_naming_the_counts(ledger):
    _fleet(ledger, ready=["n1"], enrolled=["n2"])
    _fleet(ledger, enrolled=["x1"], sku="h100")
    with pytest.raises(GangError) as err:
        gang.plan(ledger, "g1", "lab", 3, 600)
    assert "only 2 are free" in err.value.msg and "1 ready" in err.value.msg
    assert ledger.nodes(sku="lab")[0]["gang_id"] is None  # nothing reserved


def test_plan_skips_nodes_held_by_another_gang_and_honours_candidates(ledger):
    _fleet(ledger, enrolled=["n1", "n2", "n3"])
    gang.plan(ledger, "g1", "lab", 1, 600)
    second, _unused = gang.plan(ledger, "g2", "lab", 1, 600, candidates=["n3"])
    assert second["provision"] == ["n3"]


def test_all_ready_gang_is_admitted_and_joined_together(ledger):
    _fleet(ledger, enrolled=["n1", "n2", "n3"])
    gang.plan(ledger, "g1", "lab", 3, 600)
    _provision(ledger, ["n1", "n2", "n3"])
    locked, changed = gang.admitting(ledger, "g1")
    assert changed and locked["status"] == "admitting"
    done, changed = gang.admitted(ledger, "g1", "t", run_id="r1")
    assert changed and done["status"] == "admitted"
    assert [m["state"] for m in done["members"]] == ["joined"] * 3
    assert gang.admitted(ledger, "g1", "t")[1] is False


def test_admission_is_refused_while_any_member_is_not_ready(ledger):
    _fleet(ledger, enrolled=["n1", "n2"])
    gang.plan(ledger, "g1", "lab", 2, 600)
    _provision(ledger, ["n1"])
    _provision(ledger, ["n2"], upto="validating")
    with pytest.raises(GangError) as err:
        gang.admitting(ledger, "g1")
    assert "n2=validating" in err.value.msg
    assert ledger.get("n1")["state"] == "ready"  # nobody joined
    with pytest.raises(GangError):
        gang.admitted(ledger, "g1", "t")


def test_admission_after_the_deadline_is_refused(ledger, clock):
    _fleet(ledger, ready=["n1"])
    gang.plan(ledger, "g1", "lab", 1, 60)
    clock.advance(61)
    assert gang.status(ledger, "g1")["expired"] is True
    with pytest.raises(GangError) as err:
        gang.admitting(ledger, "g1")
    assert "deadline" in err.value.msg


def test_rollback_fails_the_faulty_node_and_returns_the_rest_to_the_pool(ledger):
    names = ["n%d" % i for i in range(1, 9)]
    _fleet(ledger, enrolled=names)
    gang.plan(ledger, "g1", "lab", 8, 600)
    _provision(ledger, names[:7])
    _provision(ledger, ["n8"], upto="validating")
    reason = "acceptance gate failed: nvlink bandwidth 310 < 400 GB/s"
    undone, changed = gang.rollback(ledger, "g1", "n8 failed the gate", "t",
                                    node_reasons={"n8": reason})
    assert changed and undone["status"] == "rolled_back"
    assert ledger.get("n8")["state"] == "failed" and ledger.get("n8")["reason"] == reason
    assert [ledger.get(n)["state"] for n in names[:7]] == ["ready"] * 7
    assert all(n["gang_id"] is None for n in ledger.nodes())
    assert not [n for n in ledger.nodes() if n["state"] == "joined"]
    assert gang.rollback(ledger, "g1", "again", "t")[1] is False


def test_rollback_at_deadline_fails_in_flight_nodes_and_releases_unstarted(ledger, clock):
    _fleet(ledger, enrolled=["n1", "n2", "n3"])
    gang.plan(ledger, "g1", "lab", 3, 60)
    _provision(ledger, ["n1"])
    _provision(ledger, ["n2"], upto="configuring")
    clock.advance(61)
    gang.rollback(ledger, "g1", "deadline", "t")
    assert ledger.get("n1")["state"] == "ready"
    assert ledger.get("n2")["state"] == "failed" and "configuring" in ledger.get("n2")["reason"]
    assert ledger.get("n3")["state"] == "enrolled"


def test_an_admitted_gang_cannot_be_rolled_back(ledger):
    _fleet(ledger, ready=["n1"])
    gang.plan(ledger, "g1", "lab", 1, 60)
    gang.admitting(ledger, "g1")
    gang.admitted(ledger, "g1", "t")
    with pytest.raises(GangError) as err:
        gang.rollback(ledger, "g1", "late", "t")
    assert "Drain" in err.value.msg


def test_unknown_gang_is_a_clear_error(ledger):
    with pytest.raises(GangError) as err:
        gang.status(ledger, "nope")
    assert "Plan it first" in err.value.msg


@pytest.mark.parametrize("size,deadline", [(0, 60), (2, 0)])
def test_bad_request_is_refused(ledger, size, deadline):
    with pytest.raises(GangError):
        gang.plan(ledger, "g1", "lab", size, deadline)


def test_plan_takes_hot_then_ready_then_parked_then_provisionable(ledger):
    _fleet(ledger, ready=["a", "b", "c"], enrolled=["d"])
    ledger.transition("b", "hot", "t", "held in slurm")
    ledger.transition("c", "parked", "t", "powered off")
    planned, _unused = gang.plan(ledger, "g1", "lab", 4, 600)
    assert [(m["node"], m["source"]) for m in planned["members"]] == [
        ("a", "pool"), ("b", "pool"), ("c", "wake"), ("d", "provision")]
    assert planned["wake"] == ["c"] and planned["pool"] == ["a", "b"]


def test_substitute_swaps_a_failed_member_for_a_spare_and_keeps_the_record(ledger):
    _fleet(ledger, enrolled=["n1", "n2", "n3", "n4"])
    gang.plan(ledger, "g1", "lab", 2, 600, candidates=["n1", "n2"])
    _provision(ledger, ["n1"])
    _provision(ledger, ["n2"], upto="validating")
    swapped, changed = gang.substitute(ledger, "g1", "n2", "gate: nvlink 310 < 400 GB/s", "ctl")
    assert changed is True
    assert [m["node"] for m in swapped["members"]] == ["n1", "n3"] and swapped["provision"] == ["n1", "n3"]
    (record,) = swapped["substitutions"]
    assert record["node"] == "n2" and record["status"] == "failed" and record["replaced_by"] == "n3"
    assert record["reason"] == "gate: nvlink 310 < 400 GB/s"
    assert ledger.get("n2")["state"] == "failed" and ledger.get("n2")["gang_id"] is None
    assert ledger.get("n3")["gang_id"] == "g1"
    assert gang.substitute(ledger, "g1", "n2", "again", "ctl")[1] is False
    # the rollback keeps the substitution record
    undone, _unused = gang.rollback(ledger, "g1", "deadline", "ctl")
    assert undone["substitutions"][0]["replaced_by"] == "n3"
    assert all(n["gang_id"] is None for n in ledger.nodes())


def test_substitute_with_a_named_spare_and_refusals(ledger, clock):
    _fleet(ledger, ready=["n1", "n2"], enrolled=["n3"])
    _fleet(ledger, enrolled=["x1"], sku="h100")
    gang.plan(ledger, "g1", "lab", 1, 60, candidates=["n1"])
    with pytest.raises(GangError) as err:
        gang.substitute(ledger, "g1", "n1", "slow", "ctl", spare="x1")
    assert 'no usable spare "x1"' in err.value.msg
    with pytest.raises(GangError):
        gang.substitute(ledger, "g1", "n2", "not a member", "ctl")
    swapped, _unused = gang.substitute(ledger, "g1", "n1", "missed its deadline", "ctl", spare="n3")
    assert swapped["substitutions"][0]["status"] == "replaced"  # n1 was ready: not failed
    assert ledger.get("n1")["state"] == "ready" and ledger.get("n1")["gang_id"] is None
    clock.advance(61)
    with pytest.raises(GangError) as err:
        gang.substitute(ledger, "g1", "n3", "late", "ctl")
    assert "Roll it back" in err.value.msg


def test_hot_members_are_admitted(ledger):
    _fleet(ledger, ready=["n1", "n2"])
    ledger.transition("n1", "hot", "t", "held")
    gang.plan(ledger, "g1", "lab", 2, 600)
    gang.admitting(ledger, "g1")
    done, _unused = gang.admitted(ledger, "g1", "t")
    assert [m["state"] for m in done["members"]] == ["joined", "joined"]
