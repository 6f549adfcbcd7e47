"""The four-layer answers on the lab's pool, one scenario per layer, from a real ledger and
Slurm JSON in Slurm 22.05's shape.

Slurm side: each job record is the real ``squeue --json`` record captured from the lab's
slurmctld (tests/unit/gpufleet/controller/fixtures/squeue-22.05-pending.json, Debian 12's
Slurm 22.05.8) with the scenario's id, state, reason, node count and nodes set; node records
are written in the same openapi v0.0.38 shape (that capture has no registered node). Ledger
side: transitions, node samples and the controller's gang decision are written through the
ledger's and the controller's own record functions, as the controller loop writes them.
These run without the lab (docs/fleet-view.md says why and what a lab run adds).
"""
import copy
import json
import os
import time

from gpufleet.capacity.model import Action
from gpufleet.controller import records
from gpufleet.main import main
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.helpers import ROOT

CAPTURE = os.path.join(ROOT, "tests", "unit", "gpufleet", "controller", "fixtures", "squeue-22.05-pending.json")
POLICY = os.path.join(ROOT, "lab", "config", "capacity.yml")
NODES = ("lab-r1n1", "lab-r1n2", "lab-r1n3", "lab-r1n4")
# `gpufleet why` reads the real clock: the history ends shortly before now (the controller's
# gang decisions are read back GANG_LOOKBACK_S).
T0 = float(int(time.time()) - 3600)
BRINGUP = ("enrolled", "inspected", "imaging", "configuring", "validating", "ready")

INVENTORY = "all:\n  children:\n    sku_lab:\n      hosts:\n" + "".join(
    "        %s: {gpufleet_sku: lab}\n" % n for n in NODES)


class Clock:
    now = T0

    def __call__(self):
        return self.now


def _job(base, job_id, state, reason, count, nodes="", dependency="", reservation=""):
    record = copy.deepcopy(base)
    record.update(job_id=job_id, job_state=state, state_reason=reason, node_count=count, nodes=nodes,
                  dependency=dependency, partition="batch", submit_time=int(T0 + 600),
                  start_time=int(T0 + 700) if state == "RUNNING" else 0, resv_name=reservation)
    return record


def _squeue():
    with open(CAPTURE) as handle:
        capture = json.load(handle)
    base = capture["jobs"][0]
    capture["jobs"] = [
        _job(base, 54, "PENDING", "Resources", 6),                               # L1: the pool owns 4
        _job(base, 55, "PENDING", "Resources", 2),                               # L2: gang, one validating
        _job(base, 56, "PENDING", "Dependency", 1, dependency="afterok:57"),     # L3: n3 idle
        _job(base, 57, "RUNNING", "None", 1, nodes="lab-r1n4"),                  # L4
        _job(base, 58, "PENDING", "BeginTime", 2),                               # L2: its bind is due
        _job(base, 59, "PENDING", "BeginTime", 2, reservation="59@1"),           # L3: bound, Slurm's delay
    ]
    return capture


def _sinfo():
    def node(name, state, flags=(), reason=""):
        return {"name": name, "hostname": name, "state": state, "state_flags": list(flags), "reason": reason,
                "partitions": ["batch"], "features": "", "active_features": "", "gres": ""}
    return {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "nodes": [
        node("lab-r1n1", "idle", ["DRAIN"], "gpufleet:awaiting-acceptance-gate"),
        node("lab-r1n3", "idle"), node("lab-r1n4", "allocated")]}


def _ledger(path):
    clock = Clock()
    book = Ledger(path, clock=clock)

    def walk(node, states, start):
        for index, state in enumerate(states):
            clock.now = start + index * 60
            book.transition(node, state, "controller", "to " + state, sku="lab")
    walk("lab-r1n1", BRINGUP + ("hot",), T0)                          # hot, held for the gang
    walk("lab-r1n2", BRINGUP[:-1], T0 + 300)                          # validating since T0 + 540
    walk("lab-r1n3", BRINGUP + ("joined",), T0)
    walk("lab-r1n4", BRINGUP + ("joined",), T0)
    for node in ("lab-r1n3", "lab-r1n4"):
        decisions.record_node_sample(book, T0 + 420, node, "IDLE")
    decisions.record_node_sample(book, T0 + 700, "lab-r1n4", "ALLOCATED")
    # The controller reserved lab-r1n1 and lab-r1n2 for job 55's gang (its decision log).
    gang = Action("reserve", "lab", ("lab-r1n1", "lab-r1n2"), "gang job 55 needs 2 nodes of pool lab",
                  job_id="55", gang_id="55@%d" % (T0 + 610), deadline_at=T0 + 610 + 1200)
    records.record_decision(book, "ctl-test", gang, {"action": {"gang_id": gang.gang_id, "deadline_at": gang.deadline_at}},
                            {}, at=T0 + 610)
    # Day-2 replaced a failed member of jobs 58 and 59 (replace, then repair): a spare resumed
    # inside JOB@EPOCH on the survivor and the spare; 59's bind ran, 58's has not yet.
    for job in ("58", "59"):
        resume = Action("resume", "lab", ("lab-r1n3",), "replacement for a failed member of job " + job,
                        job_id=job)
        records.record_decision(book, "ctl-test", resume, {"action": {
            "day2": True, "reservation": job + "@1", "reserve_nodes": ["lab-r1n4", "lab-r1n3"]}}, {},
            outcome="ok", at=T0 + 900)
    bind = Action("bind", "lab", ("lab-r1n3",), "job 59 is pending again", job_id="59")
    records.record_decision(book, "ctl-test", bind, {"action": {"day2": True, "reservation": "59@1"}}, {},
                            outcome="ok", at=T0 + 1200)
    book.close()


def _why(tmp_path, capsys, subject):
    (tmp_path / "squeue.json").write_text(json.dumps(_squeue()))
    (tmp_path / "sinfo.json").write_text(json.dumps(_sinfo()))
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    if not (tmp_path / "ledger.sqlite").exists():
        _ledger(str(tmp_path / "ledger.sqlite"))
    code = main(["why", subject, "--json", "--ledger", str(tmp_path / "ledger.sqlite"), "--policy", POLICY,
                 "--inventory", str(tmp_path / "inventory.yml"), "--squeue-json", str(tmp_path / "squeue.json"),
                 "--sinfo-json", str(tmp_path / "sinfo.json")])
    out = capsys.readouterr()
    assert out.out, out.err
    return code, json.loads(out.out)


def test_l1_a_job_asking_for_more_nodes_than_the_pool_owns(tmp_path, capsys):
    code, answer = _why(tmp_path, capsys, "54")
    assert (code, answer["layer"]) == (11, "L1")
    assert answer["details"] == {"pool": "lab", "needed": 6, "owned": 4}


def test_l2_a_gang_waiting_on_a_member_in_validation(tmp_path, capsys):
    code, answer = _why(tmp_path, capsys, "55")
    assert (code, answer["layer"]) == (12, "L2")
    assert answer["details"]["gang"]["members_missing"] == ["lab-r1n2"]
    assert answer["evidence"][0].endswith("has 1 of 2 members validated; waiting for lab-r1n2 validating")
    assert any(line.startswith("lab-r1n2 validating for ") for line in answer["evidence"])


def test_l3_a_job_held_by_a_dependency_while_nodes_idle(tmp_path, capsys):
    code, answer = _why(tmp_path, capsys, "56")
    assert (code, answer["layer"]) == (13, "L3")
    assert answer["details"]["nodes_that_fit"] == ["lab-r1n3"]
    assert "dependency afterok:57" in answer["evidence"][0]


def test_l4_a_running_job_and_the_node_it_runs_on(tmp_path, capsys):
    code, answer = _why(tmp_path, capsys, "57")
    assert (code, answer["layer"], answer["blocking"]) == (0, "L4", False)
    code, node = _why(tmp_path, capsys, "lab-r1n4")
    assert (code, node["layer"], node["details"]["jobs"]) == (0, "L4", ["57"])


def test_a_replaced_members_job_l2_while_its_bind_is_due_l3_once_bound(tmp_path, capsys):
    code, answer = _why(tmp_path, capsys, "58")
    assert (code, answer["layer"]) == (12, "L2")
    assert answer["summary"].endswith("(bind due on the controller's next pass)")
    assert answer["details"]["reservation"] == "58@1" and answer["details"]["replacement"] == ["lab-r1n3"]
    code, answer = _why(tmp_path, capsys, "59")
    assert (code, answer["layer"]) == (13, "L3")
    assert answer["summary"].startswith("bound to its replacement's reservation; Slurm holds the job")
    assert answer["evidence"][1].startswith("Slurm's reason: BeginTime")
