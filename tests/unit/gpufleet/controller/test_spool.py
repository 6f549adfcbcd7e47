import json
import os

import pytest

from gpufleet.controller import records, spool
from gpufleet.controller.errors import ControllerError
from gpufleet.main import main


def test_the_slurm_program_queues_one_request_and_returns(tmp_path, capsys):
    assert main(["slurm", "resume", "lab-r1n[1-2]", "--spool", str(tmp_path)]) == 0
    (path, request), = spool.pending(str(tmp_path))
    assert request["kind"] == "resume" and request["nodes"] == ["lab-r1n1", "lab-r1n2"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]     # no half-written file left
    assert "queued resume" in capsys.readouterr().out


def test_an_unwritable_spool_fails_with_the_fix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ControllerError) as err:
        spool.submit(str(blocker / "spool"), "suspend", "n1")
    assert "SlurmUser" in str(err.value)


def test_requests_become_actions_on_exactly_their_nodes():
    states = {"a": "parked", "b": "hot", "c": None, "d": "joined"}
    acts = spool.actions_for({"kind": "resume", "nodes": ["a", "b", "c", "d"]}, states, lambda n: "lab")
    assert [(a.kind, a.nodes, a.target_tier) for a in acts] == [
        ("wake", ("a",), "joined"), ("resume", ("b",), "joined"), ("bringup", ("c",), "joined")]
    acts = spool.actions_for({"kind": "suspend", "nodes": ["a", "b"]}, states, lambda n: "lab")
    assert [(a.kind, a.nodes, a.target_tier) for a in acts] == [("park", ("b",), spool.SLURM_SUSPENDED)]
    acts = spool.actions_for({"kind": "resume-fail", "nodes": ["c"]}, states, lambda n: "lab")
    assert acts[0].kind == "park" and "ResumeTimeout" in acts[0].reason and acts[0].target_tier == "warm"


def test_a_garbled_request_is_reported_not_guessed(tmp_path):
    (tmp_path / "1-resume-x.json").write_text("{not json")
    (path, request), = spool.pending(str(tmp_path))
    assert request["kind"] == "invalid" and request["error"]


def test_the_loop_records_and_runs_a_spooled_resume_then_removes_it(tmp_path, ledger, make_reconciler):
    spool.submit(str(tmp_path / "spool"), "resume", "n2")
    rec, runs, _p = make_reconciler()
    rec.spool_dir = str(tmp_path / "spool")
    rec.once()
    rec.drain()
    decision, = records.decisions(ledger)
    assert (decision["action"], decision["nodes"], decision["outcome"]) == ("bringup", ["n2"], "ok")
    assert runs.calls[0][1]["gpufleet_bringup_hold"] is False
    assert spool.pending(str(tmp_path / "spool")) == []
    assert json.dumps(decision["demand"]["action"]["target_tier"]) == '"joined"'


def test_a_request_on_a_busy_node_waits_in_the_spool_and_only_its_waiting_nodes_stay(tmp_path, ledger, make_reconciler):
    """A suspend for n1 (a recycle's fabric peer in flight) and n3 (free): n3 is parked now,
    n1's part stays in the spool until the recycle ends; before, the whole request was deleted
    and Slurm believed n1 suspended while it ran."""
    from gpufleet.work.action import REPAIR, Action
    for node in ("n1", "n2", "n3"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
    folder = str(tmp_path / "spool")
    rec, runs, _p = make_reconciler()
    rec.spool_dir = folder
    runs.gate.clear()                                   # the recycle stays in flight
    recycle = Action("recycle", "lab", ("n2",), "drained", peers=("n1",), stage=REPAIR)
    rec.launcher.launch([(rec.journal.intent(recycle, (), (), 1000.0), recycle)], {})
    spool.submit(folder, "suspend", "n1,n3")
    rec.once()
    parks = [d for d in records.decisions(ledger) if d["action"] == "park"]
    assert [d["nodes"] for d in parks] == [["n3"]]
    (_path, left), = spool.pending(folder)
    assert (left["kind"], left["nodes"]) == ("suspend", ["n1"])
    rec.once()                                          # still lent: the request is kept as it is
    assert [r["nodes"] for _p, r in spool.pending(folder)] == [["n1"]]
    runs.gate.set()
    rec.drain()
    rec.once()
    rec.drain()
    assert [d["nodes"] for d in records.decisions(ledger) if d["action"] == "park"] == [["n3"], ["n1"]]
    assert spool.pending(folder) == []
