import pytest

from gpufleet.capacity.model import Action, Job, NodeView
from gpufleet.controller import records
from gpufleet.controller.errors import LeaseHeld, SchedulerOutputError
from gpufleet.controller.loop import Reconciler
from gpufleet.controller.stages import World
from tests.unit.gpufleet.controller.conftest import FakeSource, Runs, bringup


def test_intent_is_recorded_before_the_playbook_runs_and_the_outcome_after(ledger, make_reconciler):
    runs = Runs()
    seen = []

    def look(*_args):   # the run's own thread: its own connection, as a playbook has
        other = records.open_ledger(ledger.path)
        seen.append([(d["action"], d["outcome"]) for d in records.decisions(other)])
        other.close()
    runs.checks.append(look)
    rec, runs, _p = make_reconciler([bringup("n1", "n2")], jobs=[Job("7", 2, partition="batch")], runs=runs)
    result = rec.once()
    rec.drain()
    assert seen == [[("bringup", None)]]          # in the ledger, without outcome, while it ran
    decision, = records.decisions(ledger)
    assert decision["outcome"] == "ok" and decision["nodes"] == ["n1", "n2"]
    assert decision["reason"] == "hot floor 2, have 0" and decision["demand"]["pending_nodes"] == 2
    assert decision["supply"] == {"cold": 4}
    playbook, extra, _run_id = runs.calls[0]
    assert playbook == "bringup" and extra["gpufleet_targets"] == "n1,n2" and extra["gpufleet_bringup_hold"]
    assert len(result.started) == 1


def test_a_failed_run_is_recorded_as_failed(ledger, make_reconciler):
    rec, _runs, _p = make_reconciler([bringup("n1")], runs=Runs(rc=2))
    rec.once()
    rec.drain()
    outcome = records.decisions(ledger)[0]["outcome"]
    assert outcome.startswith("failed: n1 is None"), outcome     # read from the node, not the exit code


def test_dry_run_records_and_runs_nothing(ledger, make_reconciler):
    rec, runs, _p = make_reconciler([bringup("n1")], jobs=[Job("7", 1)])
    result = rec.once(dry_run=True)
    assert [a.kind for a in result.plan.actions] == ["bringup"]
    assert runs.calls == [] and records.decisions(ledger) == [] and records.demand_history(ledger) == []


def test_demand_history_is_recorded_per_pool_and_minute(ledger, make_reconciler):
    jobs = [Job("7", 2, partition="batch", reason="Resources"), Job("8", 1, state="RUNNING", nodes_assigned=("n3",))]
    rec, _runs, _p = make_reconciler(jobs=jobs)
    rec.once()
    row, = records.demand_history(ledger)
    assert (row["pool"], row["minute"]) == ("lab", 960)
    assert (row["gpus_running"], row["gpus_pending"], row["gpus_pending_capacity"]) == (1, 2, 2)


def test_unreadable_scheduler_skips_the_pass_and_records_nothing(ledger, make_reconciler):
    source = FakeSource(error=SchedulerOutputError("squeue --json failed (exit 1): down"))
    rec, runs, _p = make_reconciler([bringup("n1")], source=source)
    result = rec.once()
    assert "squeue --json failed" in result.error and runs.calls == [] and records.decisions(ledger) == []


def test_an_action_on_a_node_in_flight_is_not_sent_again(ledger, make_reconciler):
    runs = Runs()
    runs.gate.clear()                           # the first bring-up keeps running
    rec, runs, planning = make_reconciler([bringup("n1")], runs=runs)
    rec.once()
    rec.once()
    runs.gate.set()
    rec.drain()
    assert len(runs.calls) == 1 and len(records.decisions(ledger)) == 1
    assert planning.seen[1][2][0].nodes == ("n1",)      # the planner saw it in flight


def test_restart_resumes_unfinished_decisions_once_instead_of_planning_them_again(ledger, make_reconciler):
    gang = Action(kind="admit", pool="lab", nodes=("n1", "n2"), reason="gang of 2 ready", job_id="7",
                  gang_id="job-7")
    for node in ("n1", "n2"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
    first, _runs, _p = make_reconciler()
    first.journal.intent(gang, (), (), 1000.0)   # recorded, then the controller was killed
    runs = Runs()
    runs.gate.clear()                             # the resumed admission is still running
    second, runs, _p = make_reconciler([gang], runs=runs)
    assert second.converge() == [1]
    second.once()
    runs.gate.set()
    second.drain()
    assert len(runs.calls) == 1
    extra = runs.calls[0][1]
    assert extra["gpufleet_gang_id"] == "job-7" and extra["gpufleet_admit_job"] == "7"
    assert extra["gpufleet_admit_nodes"] == ["n1", "n2"]
    assert [d["outcome"] for d in records.decisions(ledger)] == ["ok"]


def test_a_second_controller_exits_naming_the_lease_holder(ledger, make_reconciler):
    first, _r, _p = make_reconciler(controller_id="ctl-a")
    first.take_lease(60, wait=False)
    second, _r2, _p2 = make_reconciler(controller_id="ctl-b")
    with pytest.raises(LeaseHeld) as err:
        second.take_lease(60, wait=False)
    assert "ctl-a holds the lease" in str(err.value)
    records.release_lease(ledger, "ctl-a")
    second.take_lease(60, wait=False)
    assert records.lease_holder(ledger, 1000.0)[0] == "ctl-b"


def test_the_planners_break_fix_reads_the_sel_and_writes_a_record_of_the_failed_bring_ups(
        ledger, make_reconciler, tmp_path):
    import json
    for target, why in (("enrolled", "setup"), ("inspected", "setup"), ("imaging", "setup"),
                        ("failed", "image checksum mismatch"), ("recycling", "retry"),
                        ("imaging", "reimage"), ("failed", "gate: gpu_count 7 of 8")):
        ledger.transition("n3", target, "test", why)
    rec, runs, _p = make_reconciler([Action(kind="break_fix", pool="lab", nodes=("n3",), reason="failed twice")],
                                    runs=Runs(rc=2))      # the BMC could not be read
    rec.report_dir = str(tmp_path)
    rec.once()
    rec.drain()
    assert [c[0] for c in runs.calls] == ["break_fix"]
    assert ledger.get("n3")["state"] == "break_fix"
    assert records.decisions(ledger)[0]["outcome"] == "ok"
    record = json.loads((tmp_path / "break_fix" / "n3.json").read_text())
    assert record["summary"].startswith("n3: 2 failed bring-up(s); last reason: failed in imaging: ")
    assert sorted(r[1] for r in record["reasons"]) == ["failed in imaging: gate: gpu_count 7 of 8",
                                                       "failed in imaging: image checksum mismatch"]
    assert record["bmc_log_notes"][0].startswith("SEL unreadable")
    assert "record: %s" % (tmp_path / "break_fix" / "n3.json") in ledger.history("n3")[-1]["why"]


def test_reconciler_is_built_from_injected_parts_only():
    assert Reconciler.__init__.__code__.co_varnames[:8] == (
        "self", "source", "ledger", "planning", "actuator", "hosts", "controller_id", "clock")


def test_a_failed_node_is_retried_through_recycling(ledger, make_reconciler):
    for target in ("enrolled", "inspected", "imaging", "failed"):
        ledger.transition("n2", target, "test", "setup")
    rec, runs, _p = make_reconciler([bringup("n2", reason="hot floor")])
    rec.once()
    rec.drain()
    assert runs.calls[0][0] == "bringup"
    steps = [t["to_state"] for t in ledger.history("n2")]
    assert steps[3:6] == ["failed", "recycling", "enrolled"] and steps[-1] == "hot", steps


def test_a_wake_regates_only_when_the_gate_result_is_stale(ledger, make_reconciler):
    wake = lambda n: Action(kind="wake", pool="lab", nodes=(n,), reason="warm floor")   # noqa: E731
    rec, runs, _p = make_reconciler([wake("n1"), wake("n2")])
    views = (NodeView("n1", "lab", "warm", "parked", gate_passed_at=999.0),    # an hour's validity: fresh
             NodeView("n2", "lab", "warm", "parked", gate_passed_at=None))     # never passed: stale
    rec.read_world = lambda now=None: World((), (), (), views)
    rec.once()
    rec.drain()
    regate = {call[1]["gpufleet_targets"]: call[1]["gpufleet_wake_regate"] for call in runs.calls}
    assert regate == {"n1": False, "n2": True}


def test_an_admitted_gang_releases_its_members_for_later_work(ledger, make_reconciler):
    for node in ("n1", "n2"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
        with ledger.transaction() as cur:
            ledger.reserve(cur, node, "7@900")       # what admit.yml's gang step leaves
    admit = Action(kind="admit", pool="lab", nodes=("n1", "n2"), reason="all hot", job_id="7", gang_id="7@900")
    rec, _runs, _p = make_reconciler([admit])
    rec.once()
    rec.drain()
    assert [ledger.get(n)["gang_id"] for n in ("n1", "n2")] == [None, None]


def test_the_ledgers_gang_gets_the_policys_gang_deadline(ledger, make_reconciler):
    """admit.yml recorded every controller gang with its own default of 3600 s, whatever the policy said."""
    from gpufleet.capacity.policy import Members, Pool
    for node in ("n1", "n2"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
    admit = Action(kind="admit", pool="lab", nodes=("n1", "n2"), reason="all hot", job_id="7", gang_id="7@900")
    rec, runs, planning = make_reconciler([admit])
    planning.pool = Pool(sku="lab", members=Members(groups=("sku_lab",)), gang_deadline="15m")
    rec.once()
    rec.drain()
    (playbook, extra, _run), = runs.calls
    assert playbook == "admit" and extra["gpufleet_gang_deadline_seconds"] == 900  # admit.yml passes it on


def test_a_refused_ledger_step_is_recorded_failed_and_the_pass_goes_on(ledger, make_reconciler):
    ledger.transition("n3", "enrolled", "test", "setup")      # enrolled -> break_fix is not an edge
    rec, _runs, _p = make_reconciler([Action(kind="break_fix", pool="lab", nodes=("n3",), reason="x"),
                                      bringup("n1")])
    rec.once()
    rec.drain()
    outcomes = [d["outcome"] for d in records.decisions(ledger)]
    assert outcomes[0].startswith("failed: Illegal lifecycle transition") and outcomes[1] == "ok"


def test_rolling_back_a_gang_the_ledger_never_saw_parks_its_members(ledger, make_reconciler):
    # gang rows are written at admission; a gang rolled back before has none (found in the lab:
    # the controller stopped on "Gang ... is not in the ledger")
    for node in ("n1", "n2"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
    rollback = Action(kind="rollback", pool="lab", nodes=("n1", "n2"), reason="job gone", gang_id="1@900",
                      job_id="1", target_tier="warm")
    rec, runs, _p = make_reconciler([rollback])
    rec.once()
    rec.drain()
    assert runs.calls[0][0] == "park" and [d["outcome"] for d in records.decisions(ledger)] == ["ok"]


def test_an_action_naming_no_node_runs_no_playbook(ledger, make_reconciler):
    rollback = Action(kind="rollback", pool="lab", nodes=(), reason="job gone", gang_id="1@900", job_id="1")
    rec, runs, _p = make_reconciler([rollback])
    rec.once()
    rec.drain()
    assert runs.calls == [] and [d["outcome"] for d in records.decisions(ledger)] == ["ok"]
