"""The day-2 stage wired into the reconcile pass: recorded decisions, playbooks, restarts."""
import time

from gpufleet.controller import records
from gpufleet.controller.slurm_json import SlurmNode
from gpufleet.work.codec import decode
from tests.unit.gpufleet.controller.conftest import FakeSource, Runs

NHC = SlurmNode("n1", "IDLE", ("DRAIN",), reason="NHC: check_gpu failed")


def walk(ledger, node, *states):
    for target in states:
        ledger.transition(node, target, "test", "setup")


def in_service(ledger):
    walk(ledger, "n1", "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")
    walk(ledger, "n2", "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")


def test_a_persisting_health_checker_drain_is_drained_recycled_and_readmitted(ledger, make_reconciler):
    in_service(ledger)
    runs = Runs()
    rec, runs, planning = make_reconciler(source=FakeSource(nodes={"n1": NHC}), runs=runs)
    for _ in range(3):                      # default persistence: 3 sightings
        rec.once()
        rec.drain()
    drain, = [d for d in records.decisions(ledger) if d["action"] == "drain"]
    assert drain["outcome"] == "ok" and drain["demand"]["action"]["day2"] and "NHC" in drain["reason"]
    playbook, extra, _ = runs.calls[0]
    assert playbook == "drain" and extra["gpufleet_targets"] == "n1"
    assert ledger.get("n1")["state"] == "draining"
    held, = [v for v in planning.seen[-1][1] if v.node == "n1"]
    assert (held.tier, held.state) == ("unavailable", "day2")      # no supply, nothing to retry
    rec.source = FakeSource(nodes={"n1": SlurmNode("n1", "IDLE", ("DRAIN",), reason="gpufleet:day2: x")})
    rec.once()
    rec.drain()
    playbook, extra, _ = runs.calls[1]
    assert playbook == "recycle" and extra["gpufleet_fabric_peers"] == ["n2"] and extra["gpufleet_recycle_hold"]
    assert ledger.get("n1")["state"] == "hot"
    rec.once()                              # n2 is hot: the floor (0 by default) is met -> joined
    rec.drain()
    kinds = [(d["action"], d["outcome"]) for d in records.decisions(ledger)]
    assert kinds == [("drain", "ok"), ("recycle", "ok"), ("readmit", "ok")], kinds
    assert runs.calls[2][0] == "admit" and ledger.get("n1")["state"] == "joined"
    rec.once()
    assert len(records.decisions(ledger)) == 3          # the case is closed


def test_a_node_lent_as_a_recycles_fabric_peer_is_not_parked_until_the_recycle_ends(ledger, make_reconciler):
    """Lab (CI, slow_hca): the planner parked a recycle's fabric peer while its gate ran; the
    gate's iperf3 server went with it and the recycled node was left validating."""
    from gpufleet.capacity.model import Action
    in_service(ledger)
    rec, runs, planning = make_reconciler(source=FakeSource(nodes={"n1": NHC}), runs=Runs())
    for _ in range(3):
        rec.once()
        rec.drain()
    rec.source = FakeSource(nodes={"n1": SlurmNode("n1", "IDLE", ("DRAIN",), reason="gpufleet:day2: x")})
    planning.actions = [Action(kind="park", pool="lab", nodes=("n2",), reason="hot 1 above floor 0")]
    runs.gate.clear()                       # the recycle's run stays in flight
    rec.once()                              # the recycle starts with n2 as its peer; n2's park waits
    rec.once()
    for _ in range(500):                    # the run's thread records its call when it starts
        if len(runs.calls) == 2:
            break
        time.sleep(0.01)
    assert [c[0] for c in runs.calls] == ["drain", "recycle"]
    assert runs.calls[1][1]["gpufleet_fabric_peers"] == ["n2"]
    assert rec.actuator.lent_peers() == {"n2"}
    runs.gate.set()
    rec.drain()
    rec.once()                              # the recycle ended: n2 is no one's peer (n1 is readmitted)
    rec.drain()
    assert [c[0] for c in runs.calls] == ["drain", "recycle", "admit", "park"], runs.calls
    assert rec.actuator.lent_peers() == set()


def test_a_recycle_short_of_peers_is_recorded_not_started_once(ledger, make_reconciler):
    walk(ledger, "n1", "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")
    rec, runs, _p = make_reconciler(source=FakeSource(nodes={"n1": NHC}))
    for _ in range(5):
        rec.once()
        rec.drain()
    kinds = [(d["action"], (d["outcome"] or "")[:28]) for d in records.decisions(ledger)]
    assert kinds == [("drain", "ok"), ("recycle", "not started: too few fabric ")], kinds
    assert [c[0] for c in runs.calls] == ["drain"]


def test_an_operator_drain_is_left_alone(ledger, make_reconciler):
    in_service(ledger)
    operator = SlurmNode("n1", "IDLE", ("DRAIN",), reason="rack move, ticket 42")
    rec, runs, _p = make_reconciler(source=FakeSource(nodes={"n1": operator}))
    for _ in range(4):
        result = rec.once()
    assert records.decisions(ledger) == [] and runs.calls == []
    passed, _world = rec.plan(1000.0)
    assert [(o.node, o.reason) for o in passed.day2.operator] == [("n1", "rack move, ticket 42")]
    assert result.error is None


def test_a_failed_recycle_is_not_the_planners_to_retry(ledger, make_reconciler):
    in_service(ledger)
    rec, runs, planning = make_reconciler(source=FakeSource(nodes={"n1": NHC}), runs=Runs())
    for _ in range(3):
        rec.once()
        rec.drain()
    runs.rc = 2                                             # the recycle's gate fails
    walk(ledger, "n1", "recycling", "imaging", "failed")    # what a failed recycle leaves
    rec.once()
    rec.drain()
    assert [(d["action"], d["outcome"][:6]) for d in records.decisions(ledger)] == [("drain", "ok"),
                                                                                    ("recycle", "failed")]
    rec.once()
    rec.drain()
    held, = [v for v in planning.seen[-1][1] if v.node == "n1"]
    assert held.state == "day2"                             # not 'failed': the planner leaves it
    assert [d["action"] for d in records.decisions(ledger)][-1] == "recycle"    # day-2 tries again


def test_a_day2_decision_left_in_flight_is_resumed_with_its_peers(ledger, make_reconciler):
    in_service(ledger)
    rec, runs, _p = make_reconciler()
    from gpufleet.work.action import REPAIR, Action
    action = Action("recycle", "lab", ("n1",), "drained", peers=("n2",), stage=REPAIR)
    decision_id = rec.journal.intent(action, (), (), 1000.0)
    assert decode(records.decisions(ledger)[0]) == action
    assert rec.converge() == [decision_id]
    rec.drain()
    assert runs.calls[0][0] == "recycle" and runs.calls[0][1]["gpufleet_fabric_peers"] == ["n2"]


def _job_on_n1_and_n2(ledger, hot=("n3",)):
    from gpufleet.capacity.model import Job
    for node in ("n1", "n2"):
        walk(ledger, node, "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot", "joined")
    for node in hot:
        walk(ledger, node, "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")
    job = Job("7", 2, partition="batch", state="RUNNING", nodes_assigned=("n1", "n2"))
    return FakeSource(jobs=(job,), nodes={"n1": SlurmNode("n1", "MIXED", ("DRAIN",), reason="NHC: check_gpu failed")})


def test_a_failed_member_of_a_running_job_is_replaced_by_a_hot_node_resumed_in_the_same_pass(ledger, make_reconciler):
    rec, runs, planning = make_reconciler(source=_job_on_n1_and_n2(ledger))
    for _ in range(3):                      # default persistence: 3 sightings
        rec.once()
        rec.drain()
    resume, drain = records.decisions(ledger)
    assert (resume["action"], resume["nodes"], resume["job"], resume["outcome"]) == ("resume", ["n3"], "7", "ok")
    assert resume["demand"]["action"]["replaces"] == "n1" and resume["demand"]["action"]["day2"]
    assert "job 7 lost n1" in resume["reason"] and "n3" in resume["reason"]
    assert (drain["action"], drain["nodes"]) == ("drain", ["n1"])
    playbook, extra, _ = runs.calls[0]      # started first: the job waits on it
    assert playbook == "admit" and extra["gpufleet_admit_nodes"] == ["n3"] and extra["gpufleet_admit_job"] == "7"
    assert ledger.get("n3")["state"] == "joined"
    assert extra["gpufleet_replace_nodes"] == ["n2", "n3"] and extra["gpufleet_replace_failed"] == ["n1"]
    again = decode(resume)
    assert (again.kind, again.job_id, again.replaces) == ("resume", "7", "n1")   # a restart resumes it as it was
    assert (again.reservation, again.reserve_nodes, again.release_nodes) == (
        resume["demand"]["action"]["reservation"], ("n2", "n3"), ("n1",))


def test_a_requeued_job_is_bound_to_its_replacement_and_kept_from_the_planner_until_then(ledger, make_reconciler):
    from gpufleet.capacity.model import Job
    source = _job_on_n1_and_n2(ledger)
    rec, runs, planning = make_reconciler(source=source)
    for _ in range(3):
        rec.once()
        rec.drain()
    reservation = records.decisions(ledger)[0]["demand"]["action"]["reservation"]
    # requeued (Slurm shows it pending, outside the reservation, with no BeginTime reason left)
    source._jobs = (Job("7", 2, partition="batch", state="PENDING", reason="Resources"),
                    Job("8", 1, partition="batch", state="PENDING", reason="Resources"))
    runs.gate.clear()                       # the bind stays in flight
    rec.once()
    bind = next(d for d in records.decisions(ledger) if d["action"] == "bind")
    assert bind["job"] == "7" and bind["demand"]["action"]["reservation"] == reservation
    assert [j.job_id for j in planning.seen[-1][0]] == ["8"]               # 7 is day-2's to bind
    rec.once()                               # the bind still in flight: still not the planner's
    assert [j.job_id for j in planning.seen[-1][0]] == ["8"]
    runs.gate.set()
    rec.drain()
    rec.once()                               # the bind's outcome is in: one bind, ever
    assert sorted(j.job_id for j in planning.seen[-1][0]) == ["7", "8"]
    assert [d["action"] for d in records.decisions(ledger)].count("bind") == 1


def test_no_hot_node_for_the_replacement_is_recorded_once_and_nothing_resumed(ledger, make_reconciler):
    rec, runs, _p = make_reconciler(source=_job_on_n1_and_n2(ledger, hot=()))
    for _ in range(5):
        rec.once()
        rec.drain()
    kinds = [(d["action"], d["nodes"], d["outcome"]) for d in records.decisions(ledger)]
    assert kinds == [("resume", [], "not started: job 7 lost n1; no hot node in pool 'lab' to replace it"),
                     ("drain", ["n1"], "ok")], kinds
    assert [c[0] for c in runs.calls] == ["drain"]


def test_the_recycle_peer_comes_from_the_nodes_fabric_set_in_the_inventory(ledger, make_reconciler):
    from gpufleet.controller.inventory import Host
    in_service(ledger)
    walk(ledger, "n3", "enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")
    rec, runs, _p = make_reconciler(source=FakeSource(nodes={"n1": NHC}))
    rec.hosts = {n: Host(name=n, groups=("sku_lab",), sku="lab", rack="r1", fabric_set=s)
                 for n, s in (("n1", "su1"), ("n2", "su2"), ("n3", "su1"))}
    for _ in range(4):
        rec.once()
        rec.drain()
    recycle = [d for d in records.decisions(ledger) if d["action"] == "recycle"][0]
    assert recycle["demand"]["action"]["peers"] == ["n3"] and "fabric set 'su1'" in recycle["reason"]
    assert runs.calls[1][1]["gpufleet_fabric_peers"] == ["n3"]     # n2 (hot, first by name) is another fabric


def test_a_restarted_controller_counts_on_from_the_stored_tracks(ledger, make_reconciler):
    in_service(ledger)
    rec, runs, _p = make_reconciler(source=FakeSource(nodes={"n1": NHC}))
    for _ in range(2):                      # two of the three sightings persistence needs
        rec.once()
        rec.drain()
    assert records.decisions(ledger) == []
    stored = records.load_tracks(ledger)
    assert [(k, len(t.seen)) for k, t in stored.items()] == [(("n1", "slurm", "slurm_drain"), 2)]
    again, runs, _p = make_reconciler(source=FakeSource(nodes={"n1": NHC}), controller_id="ctl-b")
    again.once()                            # the third sighting, by a new controller: it acts
    again.drain()
    assert [(d["action"], d["controller"]) for d in records.decisions(ledger)] == [("drain", "ctl-b")]


def test_a_dry_run_stores_no_tracks(ledger, make_reconciler):
    in_service(ledger)
    rec, _runs, _p = make_reconciler(source=FakeSource(nodes={"n1": NHC}))
    rec.once(dry_run=True)
    assert records.load_tracks(ledger) == {}


def test_a_day2_break_fix_reads_the_sel_writes_the_record_and_moves_the_node(ledger, make_reconciler, tmp_path):
    import json
    import os
    from gpufleet.work.action import REPAIR, Action
    walk(ledger, "n1", "enrolled", "inspected", "imaging", "failed")
    record = dict(node="n1", pool="lab", reasons=[[900.0, "slurm slurm_drain: NHC: GPU lost"]],
                  failed_recycles=[950.0, 990.0], gate_failures=[], bmc_log=[], summary="n1: 2 failed")
    action = Action("break_fix", "lab", ("n1",), "n1: 2 failed", record=record, stage=REPAIR)

    def read_sel(playbook, extravars, run_id):
        assert playbook == "break_fix" and extravars["gpufleet_targets"] == "n1"
        if runs.rc == 0:
            os.makedirs(str(tmp_path / "break_fix"), exist_ok=True)
            (tmp_path / "break_fix" / "n1.sel.json").write_text(json.dumps({"entries": [
                {"created": "2012-03-07T14:45:00Z", "severity": "Critical", "message": "Fan 3 failed"}]}))
    runs = Runs()
    runs.checks.append(read_sel)
    rec, runs, _p = make_reconciler(actions=[action], runs=runs)
    rec.report_dir = str(tmp_path)
    rec.once()
    rec.drain()
    assert ledger.get("n1")["state"] == "break_fix"
    why = ledger.history("n1")[-1]["why"]
    assert "SEL: 1 entry" in why and str(tmp_path / "break_fix" / "n1.json") in why
    assert json.loads((tmp_path / "break_fix" / "n1.json").read_text())["bmc_log"][0].endswith("Fan 3 failed")
    assert [d["outcome"] for d in records.decisions(ledger)] == ["ok"]


def test_a_failed_sel_read_still_moves_the_node_to_break_fix(ledger, make_reconciler, tmp_path):
    from gpufleet.work.action import REPAIR, Action
    walk(ledger, "n1", "enrolled", "inspected", "imaging", "failed")
    record = dict(node="n1", pool="lab", reasons=[], failed_recycles=[990.0])
    rec, runs, _p = make_reconciler(actions=[Action("break_fix", "lab", ("n1",), "n1", record=record,
                                                    stage=REPAIR)], runs=Runs(rc=2))
    rec.report_dir = str(tmp_path)
    rec.once()
    rec.drain()
    assert ledger.get("n1")["state"] == "break_fix"
    assert "SEL unreadable: no SEL read at" in ledger.history("n1")[-1]["why"]
    assert "rc=2" in ledger.history("n1")[-1]["why"]


def test_idle_health_check_failures_persist_into_a_drain(ledger, make_reconciler):
    from gpufleet.day2 import detect
    in_service(ledger)
    rec, runs, _p = make_reconciler()
    rec.health = lambda views, now: detect.health_check_signals("n1", ["xid"], now)
    for _ in range(3):
        rec.once()
        rec.drain()
    drain, = records.decisions(ledger)
    assert drain["action"] == "drain" and "idle health check xid failed" in drain["reason"]


def test_a_node_a_bmc_reading_made_suspect_is_no_supply_in_the_passes_until_the_next_reading(ledger, make_reconciler):
    """Lab: a hot node powered off behind the controller's back counted as hot in the passes
    between two BMC readings (each reading is handed over once); the planner parked it."""
    from gpufleet.day2.model import Signal
    in_service(ledger)
    rec, runs, planning = make_reconciler()
    readings = [(Signal("n2", "redfish", "power_off", "power Off while the ledger says hot", 1000.0),)]
    rec.redfish = lambda views, now: readings.pop() if readings else ()
    for _ in range(2):                       # the reading's pass, then one without a reading
        rec.once()
        rec.drain()
        supply = {v.node: v for v in planning.seen[-1][1]}
        assert supply["n2"].tier == "unavailable" and supply["n1"].tier == "hot", supply
    assert records.decisions(ledger) == []   # one sighting: no action yet
