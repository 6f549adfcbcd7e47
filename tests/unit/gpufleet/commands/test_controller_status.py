"""``gpufleet controller status --json``: the facts of the text status, as JSON."""
import json

from gpufleet.capacity.model import Job, NodeView
from gpufleet.controller.stages import World
from gpufleet.controller.status import render_status, status_document
from gpufleet.day2.cases import OpenCase
from gpufleet.day2.model import OperatorDrain
from gpufleet.day2.repair import Case
from gpufleet.day2.rollout_book import Book, Item
from gpufleet.day2.stage import Day2Pass
from gpufleet.main import build_parser


def _facts():
    nodes = (NodeView("n1", "lab", "unavailable", "draining"), NodeView("n2", "lab", "hot", "hot"),
             NodeView("n5", "gpu", "cold", "enrolled"))
    jobs = (Job("7", 2, pool="lab"), Job("8", 1, pool="lab", state="RUNNING"))
    day2 = Day2Pass(operator=(OperatorDrain("n3", "IDLE+DRAIN", "rack move"),))
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", 5.0), reasons=((5.0, "drain: NHC check_gpu"),),
                            in_flight=True)}
    rollouts = [{"id": 4, "pool": "lab", "from_version": "v1", "to_version": "v2", "gate_profile": None,
                 "phase": "batches", "updated_at": 0.0, "reason": "canaries passed", "canaries": ["n1"]}]
    book = Book(items={"n3": Item("n3", "lab", 4, "batch", "v2", None, "joined", "recycling", 0.0,
                                  in_flight=True)},
                results={4: {"n1": True, "n2": False}}, moved={4: frozenset({"n1", "n2"})})
    replacement = {"id": 11, "at": 60.0, "pool": "lab", "action": "resume", "nodes": ["n2"], "job": "7",
                   "outcome": "ok", "reason": "job 7 lost n1",
                   "demand": {"action": {"day2": True, "replaces": "n1", "reservation": "7@100",
                                         "reserve_nodes": ["n2", "n4"]}}}
    planner = {"id": 12, "at": 61.0, "pool": "gpu", "action": "bringup", "nodes": ["n5"], "job": None,
               "outcome": None, "reason": "floor"}
    ledger_nodes = [{"node": "n7", "state": "break_fix", "updated_at": "2026-11-24T18:22:40Z", "reason": "n7.json"},
                    {"node": "n8", "state": "joined", "updated_at": "2026-11-24T18:00:00Z", "reason": None}]
    world = World((), jobs, ((Job("9", 99), "asks for 99 nodes"),), nodes, cases=cases, rollouts=rollouts,
                  rollout_book=book)
    return world, [planner], [replacement, planner], ("ctl:1", 120.0), ledger_nodes, day2


def test_json_holds_every_fact_the_text_shows():
    facts = _facts()
    text = render_status(*facts[:4], ledger_nodes=facts[4], day2=facts[5])
    doc = json.loads(json.dumps(status_document(*facts[:5], day2=facts[5])))     # JSON-ready as it is
    assert doc["lease"] == {"holder": "ctl:1", "until": 120.0} and "held by ctl:1" in text
    assert doc["pools"]["lab"]["tiers"]["hot"] == 1 and doc["pools"]["lab"]["tiers"]["unavailable"] == 1
    assert (doc["pools"]["lab"]["pending_jobs"], doc["pools"]["lab"]["pending_nodes"]) == (1, 2) and " 1/2" in text
    assert doc["pools"]["gpu"]["tiers"]["cold"] == 1
    assert doc["unservable"] == [{"job": "9", "reason": "asks for 99 nodes"}] and "9: asks for 99 nodes" in text
    assert doc["operator_drains"] == [{"node": "n3", "state": "IDLE+DRAIN", "reason": "rack move"}]
    assert doc["day2_cases"] == [{"node": "n1", "phase": "draining", "since": 5.0, "in_flight": True,
                                  "last_reason": "drain: NHC check_gpu"}] and "NHC check_gpu" in text
    rollout, = doc["rollouts"]
    assert (rollout["id"], rollout["phase"], rollout["passed"], rollout["failed"], rollout["on_new_version"]) == \
        (4, "batches", ["n1"], ["n2"], 2)
    assert rollout["out_now"] == [{"node": "n3", "phase": "recycling", "in_flight": True}]
    replacement, = doc["replacements"]
    assert (replacement["job"], replacement["replaces"], replacement["nodes"], replacement["reservation"],
            replacement["reserve_nodes"]) == ("7", "n1", ["n2"], "7@100", ["n2", "n4"])
    assert "7@100 (n2,n4)" in text
    assert doc["break_fix"] == [{"node": "n7", "since": "2026-11-24T18:22:40Z", "reason": "n7.json"}]
    assert doc["in_flight"] == [{"id": 12, "action": "bringup", "nodes": ["n5"]}] and "12 bringup n5" in text
    assert [d["id"] for d in doc["last_decisions"]] == [11, 12] and doc["last_decisions"][1]["outcome"] is None


def test_an_empty_status_is_empty_lists_and_a_free_lease():
    doc = status_document(World((), (), (), ()), [], [], (None, None))
    assert doc["lease"] == {"holder": None, "until": None} and doc["pools"] == {}
    assert all(doc[key] == [] for key in ("unservable", "operator_drains", "day2_cases", "rollouts",
                                          "replacements", "break_fix", "in_flight", "last_decisions"))


def test_status_takes_json_and_durations_take_compound_forms():
    args = build_parser().parse_args(["controller", "status", "--policy", "p.yml", "--json", "--lease-ttl", "1m30s"])
    assert args.json is True and args.lease_ttl == 90.0
    run = build_parser().parse_args(["controller", "run", "--policy", "p.yml", "--interval", "2m"])
    assert run.interval == 120.0
