"""The day-2 stage of a pass: detection -> persistence -> budget -> repair steps."""
from gpufleet.capacity.model import Job, NodeView
from gpufleet.capacity.policy import Members, Pool
from gpufleet.day2.cases import OpenCase
from gpufleet.day2.model import Signal
from gpufleet.day2.repair import Case
from gpufleet.day2.stage import decide

NOW = 10_000.0


def pool(**day2):
    return {"lab": Pool(sku="lab", members=Members(groups=("sku_lab",)), floors={"hot": 1},
                        day2=dict({"persistence": {"count": 2, "window": "10m"}, "budget": 1}, **day2))}


def view(node, state="joined", tier="idle", jobs=()):
    return NodeView(node=node, pool="lab", tier=tier, state=state, gate_passed_at=NOW - 60, jobs=jobs)


VIEWS = (view("n1"), view("n2", "hot", "hot"), view("n3", "hot", "hot"), view("n4", "parked", "warm"))
NHC = ("n1", "IDLE+DRAIN", "NHC: check_gpu failed", None)


def run(rows, tracks=None, cases=None, busy=(), views=VIEWS, jobs=(), signals=(), pools=None, now=NOW):
    return decide(rows, views, jobs, pools or pool(), tracks or {}, cases or {}, set(busy), now,
                  extra_signals=signals)


def test_a_health_checker_drain_acts_only_after_it_persisted():
    first = run([NHC])
    assert first.actions == () and first.tracks
    second = run([NHC], tracks=first.tracks, now=NOW + 10)
    drain, = second.actions
    assert (drain.kind, drain.nodes) == ("drain", ("n1",)) and "NHC: check_gpu failed" in drain.reason
    assert "n1" in second.claimed


def test_operator_drains_and_our_own_holds_are_left_alone():
    rows = [("n1", "IDLE+DRAIN", "rack move, ticket 42", None), ("n2", "IDLE+DRAIN", "", None),
            ("n3", "IDLE+DRAIN", "gpufleet:hold: idle", None)]
    result = run(rows, tracks=run(rows).tracks, now=NOW + 10)
    assert result.actions == () and [o.node for o in result.operator] == ["n1"]
    assert result.claimed == {"n1"}          # no supply for the planner: a resume would undo it


def test_nodes_not_in_service_are_not_watched():
    rows = [("n4", "DOWN+POWERED_DOWN", "", None)]
    assert run(rows, tracks=run(rows).tracks, now=NOW + 10).actions == ()


def test_the_budget_holds_the_second_node_back():
    rows = [NHC, ("n2", "DOWN", "Not responding", None)]
    result = run(rows, tracks=run(rows).tracks, now=NOW + 10)
    assert [a.nodes for a in result.actions] == [("n2",)]     # down before drain: more severe
    assert any("budget" in note for note in result.notes)


def test_an_open_case_spends_the_budget_and_a_busy_node_is_never_started_again():
    rows = [NHC]
    draining = {"n2": OpenCase(Case("n2", "lab", "recycling", NOW - 5), in_flight=True)}
    result = run(rows, tracks=run(rows).tracks, cases=draining, now=NOW + 10)
    assert result.actions == ()
    result = run(rows, tracks=run(rows).tracks, busy={"n1"}, now=NOW + 10)
    assert result.actions == ()


def test_a_drained_case_recycles_with_a_known_good_peer():
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    recycle, = run([], cases=cases).actions
    assert recycle.kind == "recycle" and recycle.peers == ("n2",) and not recycle.blocked


def test_a_recycle_without_a_peer_is_blocked_once_and_says_why():
    lone = (view("n1", "draining", "unavailable"), view("n4", "parked", "warm"))
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    blocked, = run([], cases=cases, views=lone).actions
    assert blocked.blocked.startswith("too few fabric peers") and blocked.peers == ()
    again = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5), not_started="not started: " + blocked.blocked)}
    result = run([], cases=again, views=lone)
    assert result.actions == () and "too few fabric peers" in result.notes[0]


def test_running_jobs_are_waited_for_then_requeued():
    jobs = (Job("7", 1, state="RUNNING", nodes_assigned=("n1",)),)
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    assert run([], cases=cases, jobs=jobs).actions == ()
    requeue, = run([], cases=cases, jobs=jobs, now=NOW + 7200).actions
    assert requeue.kind == "requeue" and requeue.jobs == ("7",)


def test_a_recycled_node_goes_back_to_the_tier_the_floors_need():
    cases = {"n2": OpenCase(Case("n2", "lab", "recycled", NOW - 5))}
    readmit, = run([], cases=cases).actions          # n3 is hot: the floor of 1 is met
    assert (readmit.kind, readmit.target_tier) == ("readmit", "joined")
    short = (view("n1"), view("n2", "hot", "hot"), view("n4", "parked", "warm"))
    readmit, = run([], cases=cases, views=short).actions
    assert readmit.target_tier == "hot"


def test_repeated_failed_recycles_end_in_break_fix_with_a_record():
    case = Case("n1", "lab", "recycle_failed", NOW - 5, failed_recycles=(NOW - 100, NOW - 10))
    cases = {"n1": OpenCase(case, reasons=((NOW - 500, "drain: NHC: check_gpu failed"),))}
    action, = run([], cases=cases).actions
    assert action.kind == "break_fix" and action.record["reasons"] == ((NOW - 500, "drain: NHC: check_gpu failed"),)
    assert "2 failed recycle" in action.reason


def test_redfish_signals_count_for_nodes_in_service_only():
    off = [Signal("n2", "redfish", "power_off", "powered Off while the ledger says on", NOW),
           Signal("n4", "redfish", "power_off", "powered Off while the ledger says on", NOW)]
    first = run([], signals=off)
    drain, = run([], tracks=first.tracks, signals=off, now=NOW + 10).actions
    assert drain.nodes == ("n2",) and "power_off" in drain.reason


def test_signals_of_a_node_under_our_own_action_are_not_counted():
    off = [Signal("n2", "redfish", "power_off", "powered Off while the ledger says on", NOW)]
    first = run([NHC], signals=off, busy={"n1", "n2"})
    assert first.tracks == {}
