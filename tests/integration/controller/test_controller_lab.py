"""The capacity controller on ONE lab, in order (each test starts from the state the last left).

Run under the lab lock:  flock /tmp/gpufleet-lab.lock .venv/bin/python -m pytest tests/integration/controller

1. --dry-run on an all-cold lab prints the hot-floor bring-ups and records nothing;
2. `controller run` fills the hot floor; a second controller exits naming the lease holder;
   `status` shows the pool;
3. an `sbatch -N2` job starts on nodes that were hot when it was submitted;
4. the controller is SIGKILLed while it has work in flight; the restarted one resumes the
   unfinished decisions, and no node is imaged twice for one decision;
5. an `sbatch -N4` gang with a gate fault on one member: the member is replaced by a spare,
   every rank starts after the last member became hot and within one second of the others;
6. idle nodes are parked: ledger parked, BMC power Off, containers gone.
"""
import json
import os
import random
import signal
import time

import pytest

from lab import controller_demo as demo
from tests.helpers import ROOT
from tests.integration.controller.steps import (LAB_MARKS, POLICY, decisions, gpufleet, history, power_state,
                                                start_controller, why)

pytestmark = LAB_MARKS


def test_dry_run_plans_the_hot_floor_and_changes_nothing(lab):
    proc = gpufleet("controller", "once", "--lab", "--policy", POLICY, "--dry-run")
    assert "bringup" in proc.stdout, proc.stdout
    assert decisions() == [] and demo.states() == {}


def test_the_controller_fills_the_hot_floor_and_holds_the_lease(lab):
    lab["controller"] = start_controller()
    demo.wait_for("two hot nodes", lambda: lab["controller"].check_alive() and demo.count("hot") >= 2, 1500)
    second = gpufleet("controller", "once", "--lab", "--policy", POLICY, check=False)
    assert second.returncode == 1 and "holds the lease" in second.stderr, second.stderr
    status = gpufleet("controller", "status", "--lab", "--policy", POLICY).stdout
    assert "lab" in status and "last decisions:" in status and "bringup" in status, status
    # job_submit.lua's list (playbooks/image_features.yml) follows the image feature the hot
    # nodes registered with in Slurm
    listed = demo.wait_for("the image features file", lambda: demo._try(
        demo.slurm, "cat", "/etc/slurm/gpufleet-image-features"), 120, poll=2)
    assert [line for line in listed.splitlines() if line and not line.startswith("#")] == ["image_lab"], listed


def test_a_two_node_job_starts_on_hot_nodes(lab):
    hot = {n for n, s in demo.states().items() if s == "hot"}
    # it runs on while the -N4 gang forms, so the gang needs nodes the controller brings up
    job_id = demo.sbatch(2, "two", sleep=3600)
    demo.wait_for("job %s to start" % job_id, lambda: demo.job(job_id)["start"], 300, poll=0.5)
    info = demo.job(job_id)
    assert set(info["nodes"]) <= hot, (info, hot)
    timeline = demo.timeline(job_id, info)
    assert all(n["tier_at_submit"] == "hot" for n in timeline["nodes"].values()), timeline
    lab["two"] = (job_id, timeline)


def test_a_killed_controller_converges_without_provisioning_twice(lab):
    # the two hot nodes went to the job: the controller refills the floor; kill it mid-way
    demo.wait_for("a bring-up in flight", lambda: any(d["outcome"] is None and d["action"] in ("bringup", "wake")
                                                      for d in decisions()), 300, poll=0.5)
    time.sleep(random.uniform(0, 20))
    lab["controller"].stop(signal.SIGKILL, timeout=60)
    unfinished = [d["id"] for d in decisions() if d["outcome"] is None]
    lab["controller"] = start_controller()
    demo.wait_for("the unfinished decisions to end", lambda: all(
        d["outcome"] is not None for d in decisions() if d["id"] in unfinished), 1500, poll=3)
    bringups = {}
    for d in decisions():
        if d["action"] in ("bringup",):
            for node in d["nodes"]:
                bringups[node] = bringups.get(node, 0) + 1
    imaged = {}
    for step in history():
        if step["to_state"] == "imaging":
            imaged[step["node"]] = imaged.get(step["node"], 0) + 1
    assert all(imaged.get(n, 0) <= bringups.get(n, 0) for n in imaged), (imaged, bringups)


def test_a_gang_gets_a_spare_for_a_faulty_member_and_starts_all_at_once(lab):
    job_id = demo.sbatch(4, "four")
    # the fault goes on a member the controller brings up, before its gate runs (a GPU fault
    # injected without an index once hit no GPU, and the "faulty" member passed)
    faulty = demo.fault_on_a_cold_member(job_id, demo.job(job_id)["submit"])
    # While the gang waits, `gpufleet why` answers at L2 (provisioning) naming what it waits for.
    seen = []

    def started_or_explained():
        if demo.job(job_id)["start"]:
            return True
        code, answer = why(job_id, check=False)
        if answer:
            seen.append((code, answer["layer"], answer["evidence"][:2]))
        return False
    demo.wait_for("job %s to start" % job_id, started_or_explained, 2700, poll=1)
    assert any(layer == "L2" and code == 12 for code, layer, _e in seen), seen[-5:]
    info = demo.job(job_id)
    ranks = demo.wait_for("rank output", lambda: demo._try(demo.rank_starts, job_id, info["batch_host"]), 120)
    gpufleet("lab", "clear-faults")
    demo.slurm("scancel", lab["two"][0])
    assert sorted(ranks) == sorted(info["nodes"]) and faulty not in info["nodes"], (ranks, info, faulty)
    assert max(ranks.values()) - min(ranks.values()) < 1.0, ranks
    mine = [d for d in decisions() if d["job"] == job_id]
    kinds = [d["action"] for d in mine]
    assert "reserve" in kinds and "admit" in kinds, kinds
    if faulty:   # None: the gang needed no bring-up (served from hot and warm nodes)
        assert [d for d in mine if d["action"] == "substitute" and faulty in d["reason"]], mine
    # a woken member is used, not replaced (it once came back DOWN from its power-off)
    assert not [d["reason"] for d in mine if d["action"] == "substitute" and " is hot" in d["reason"]], mine
    # no rank before the last member passed its gate (became hot)
    hot_at = {}
    for step in history():
        if step["to_state"] == "hot" and step["node"] in info["nodes"]:
            hot_at[step["node"]] = demo._iso(step["at"])
    assert min(ranks.values()) >= max(hot_at.values()), (ranks, hot_at)
    lab["four"] = (job_id, demo.timeline(job_id, info))


def test_idle_nodes_are_parked_powered_off_and_gone(lab):
    demo.wait_for("a parked node", lambda: demo._parked(), 900, poll=5)
    demo.wait_for("parked containers gone", lambda: not (demo._containers() & demo._parked()), 300)
    parked = sorted(demo._parked())
    assert all(power_state(n) == "Off" for n in parked), parked
    report = os.path.join(ROOT, "build", "lab", "controller-report.json")
    with open(report, "w") as handle:
        json.dump({k: lab.get(k) for k in ("two", "four")}, handle, indent=2)
