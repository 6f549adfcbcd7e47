"""`gpufleet controller status`: pools, operator drains, open day-2 cases, decisions."""
from gpufleet.capacity.model import NodeView
from gpufleet.controller.stages import World
from gpufleet.controller.status import render_status
from gpufleet.day2.cases import OpenCase
from gpufleet.day2.model import OperatorDrain
from gpufleet.day2.repair import Case
from gpufleet.day2.stage import Day2Pass


def test_status_shows_operator_drains_and_open_day2_cases():
    day2 = Day2Pass(operator=(OperatorDrain("n3", "IDLE+DRAIN", "rack move, ticket 42"),))
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", 0.0),
                            reasons=((0.0, "drain: slurm slurm_drain: NHC: check_gpu"),), in_flight=True)}
    world = World((), (), (), (NodeView("n1", "lab", "unavailable", "draining"),), cases=cases)
    text = render_status(world, [], [], (None, None), day2=day2)
    assert "operator drains (left alone): n3 IDLE+DRAIN: rack move, ticket 42" in text
    line = next(l for l in text.splitlines() if l.strip().startswith("n1"))
    assert "draining" in line and "1970-01-01 00:00:00" in line and "(in flight)" in line and "NHC" in line


def test_status_says_none_when_day2_has_nothing():
    text = render_status(World((), (), (), ()), [], [], (None, None))
    assert "operator drains (left alone): none" in text and "day-2 cases: none" in text


def test_status_shows_a_rollout_in_progress_with_its_canaries_results_and_nodes_out():
    from gpufleet.day2.rollout_book import Book, Item
    rollouts = [{"id": 4, "pool": "lab", "from_version": "v1", "to_version": "v2", "gate_profile": None,
                 "phase": "batches", "updated_at": 0.0, "reason": "canaries passed", "canaries": ["n1"]}]
    book = Book(items={"n3": Item("n3", "lab", 4, "batch", "v2", None, "joined", "recycling", 0.0,
                                  in_flight=True)},
                results={4: {"n1": True, "n2": False}}, moved={4: frozenset({"n1", "n2"})})
    text = render_status(World((), (), (), (), rollouts=rollouts, rollout_book=book), [], [], (None, None))
    assert "rollout 4 pool lab: v1 -> v2, phase batches since 1970-01-01 00:00:00 (canaries passed)" in text
    assert "canaries: n1; passed: n1; failed: n2; on the new version: 2; out now: n3 recycling (in flight)" in text
    assert "rollouts in progress: none" in render_status(World((), (), (), ()), [], [], (None, None))


def test_status_shows_each_replacement_with_its_job_failed_node_and_outcome():
    def resume(nodes, outcome, replaces="n1"):
        return {"id": 1, "at": 0.0, "pool": "lab", "action": "resume", "nodes": nodes, "job": "7",
                "outcome": outcome, "reason": "job 7 lost n1",
                "demand": {"action": {"day2": True, "replaces": replaces}}}
    planner = dict(resume(["n4"], "ok"), job=None, demand={"action": {"replaces": None}})
    reserved = resume(["n3"], "ok")
    reserved["demand"]["action"].update(reservation="7@100", reserve_nodes=["n2", "n3"])
    recent = [reserved, resume([], "not started: job 7 lost n1; no hot node in pool 'lab'"), planner]
    text = render_status(World((), (), (), ()), [], recent, (None, None))
    all_lines = text.splitlines()
    start = next(i for i, l in enumerate(all_lines) if l.startswith("replacements"))
    end = next(i for i, l in enumerate(all_lines) if l.startswith("break_fix"))
    lines = all_lines[start + 1:end]
    assert len(lines) == 2 and "n1" in lines[0] and "-> n3" in lines[0] and lines[0].endswith("ok in 7@100 (n2,n3)")
    assert "(none)" in lines[1] and "no hot node" in lines[1]
    assert "n4" not in "".join(lines)                     # the planner's own resume is not a replacement


def test_status_says_no_replacements_when_there_are_none():
    text = render_status(World((), (), (), ()), [], [], (None, None))
    assert "replacements (failed member of a running job -> hot node): none" in text


def test_status_lists_break_fix_nodes_with_the_ledgers_own_time_text():
    # a lab demo: the ledger's node rows carry ISO text, and status crashed on it
    nodes = [{"node": "n7", "state": "break_fix", "updated_at": "2026-11-24T18:22:40.123456Z",
              "reason": "failed 2 times in a row; record build/lab/reports/break_fix/n7.json"},
             {"node": "n8", "state": "joined", "updated_at": "2026-11-24T18:00:00.000000Z", "reason": None}]
    text = render_status(World((), (), (), ()), [], [], (None, None), ledger_nodes=nodes)
    line = next(l for l in text.splitlines() if "n7" in l)
    assert "2026-11-24 18:22:40" in line and "n7.json" in line and "n8" not in text
