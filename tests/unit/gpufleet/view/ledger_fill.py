"""Write the hand-made history (history.py) into a real ledger through its public API."""
import json

from gpufleet.capacity.policy import parse_policy
from gpufleet.controller.inventory import Host

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.unit.gpufleet.view.history import POOL, SAMPLES, T0, H, transitions

POLICY = """
version: 1
fleet: {concurrency_limit: 4}
pools:
  h100:
    sku: h100-sxm-8x
    gpus_per_node: 8
    members: {groups: [h100]}
    match: {partitions: [gpu], gres: [gpu]}
    max_concurrent_bringups: 2
"""
INVENTORY = """
all:
  children:
    h100:
      hosts:
        n1: {gpufleet_sku: h100-sxm-8x}
        n2: {gpufleet_sku: h100-sxm-8x}
        n3: {gpufleet_sku: h100-sxm-8x}
        n4: {gpufleet_sku: h100-sxm-8x}
"""
SQUEUE = {"jobs": [
    {"job_id": 101, "job_state": "RUNNING", "state_reason": "None", "partition": "gpu", "node_count": 1,
     "nodes": "n1", "submit_time": T0 + 2 * H, "start_time": T0 + 2.5 * H, "tres_per_node": "gres:gpu:8"},
    {"job_id": 102, "job_state": "PENDING", "state_reason": "Resources", "partition": "gpu", "node_count": 5,
     "nodes": "", "submit_time": T0 + 3 * H, "start_time": 0, "tres_per_node": "gres:gpu:8"},
]}
SINFO = {"nodes": [{"name": "n1", "state": "allocated", "state_flags": [], "partitions": ["gpu"]},
                   {"name": "n2", "state": "idle", "state_flags": ["DRAIN"], "reason": "held", "partitions": ["gpu"]}]}


HOSTS = dict((n, Host(name=n, groups=("h100",), sku="h100-sxm-8x")) for n in ("n1", "n2", "n3", "n4"))


def policy():
    return parse_policy(POLICY)


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


def fill(path):
    clock = Clock()
    book = Ledger(str(path), clock=clock)
    for item in transitions():
        clock.now = item.at
        book.transition(item.node, item.to_state, "test", item.why, sku=POOL.sku)
    for sample in SAMPLES:
        decisions.record_node_sample(book, sample.at, sample.node, sample.slurm_state.upper())
    clock.now = T0 + 3 * H
    decisions.record_decision(book, "ctl-1", "h100", "wake", ["n2"], "hot floor 1", outcome="ok")
    decisions.record_demand(book, "h100", T0 + 3 * H, 8, 40, 32)
    return book


def write_inputs(tmp_path):
    """(ledger path, policy path, squeue path, sinfo path, inventory path) with the history filled in."""
    fill(tmp_path / "ledger.sqlite").close()
    (tmp_path / "policy.yml").write_text(POLICY)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "squeue.json").write_text(json.dumps(SQUEUE))
    (tmp_path / "sinfo.json").write_text(json.dumps(SINFO))
    return [str(tmp_path / n) for n in ("ledger.sqlite", "policy.yml", "squeue.json", "sinfo.json", "inventory.yml")]


def write_gate(tmp_path):
    """Gate reports: n1 passed two checks, n2 failed dcgm_diag; returns the folder."""
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "n1.json").write_text(json.dumps({"node": "n1", "verdict": "pass", "phases": [{"name": "gpu", "checks": [
        {"name": "gpu_count", "verdict": "pass"}, {"name": "dcgm_diag", "verdict": "pass"}]}]}))
    (gate / "n2.json").write_text(json.dumps({"node": "n2", "verdict": "fail", "phases": [{"name": "gpu", "checks": [
        {"name": "gpu_count", "verdict": "pass"}, {"name": "dcgm_diag", "verdict": "fail"}]}]}))
    return str(gate)
