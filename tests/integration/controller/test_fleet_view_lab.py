"""The four-layer view on the live lab, after the capacity scenarios (same lab, same running
controller): `gpufleet why` answers a job at each layer from the real ledger and the real
slurmctld, and the controller's /metrics agree with the ledger. The gang-waiting (L2) answer
is checked while the gang of test_controller_lab.py waits for its members.
"""
import collections
import subprocess
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from lab import controller_demo as demo
from tests.integration.controller.steps import LAB_MARKS, METRICS_PORT, decisions, why

pytestmark = LAB_MARKS


def _submit(*args):
    out = demo.slurm("sbatch", "--chdir=/tmp", "--output=/dev/null", *args)
    return out.split()[-1]


@pytest.fixture(scope="module")
def jobs():
    submitted = []
    yield submitted
    for job_id in submitted:
        demo.slurm("scancel", job_id)


def _sbatch(count):
    return subprocess.run(["docker", "exec", demo.SLURMCTLD, "sbatch", "-N%d" % count, "--chdir=/tmp",
                           "--output=/dev/null", "--wrap", "true"], capture_output=True, text=True, timeout=60)


def test_l1_a_job_the_pools_available_nodes_cannot_hold(lab, jobs):
    """Nine nodes from the 8-node pool when Slurm takes such a job; Slurm 22.05 refuses it at
    submit when the partition is the pool, so then eight while the gang test's faulty node is
    failed (or in break_fix): L1 either way, with the numbers."""
    proc = _sbatch(9)
    if "Submitted batch job" in proc.stdout:
        jobs.append(proc.stdout.split()[-1])
        code, answer = why(jobs[-1])
        assert (code, answer["layer"]) == (11, "L1"), answer
        assert answer["details"] == {"pool": "lab", "needed": 9, "owned": 8}, answer
        return
    assert "node configuration is not available" in proc.stderr or "Node count" in proc.stderr, proc.stderr
    unavailable = {n for n, s in demo.states().items() if s in ("failed", "break_fix")}
    assert unavailable, "the gang test's faulty node should be failed or in break_fix: %s" % demo.states()
    proc = _sbatch(8)
    assert "Submitted batch job" in proc.stdout, proc.stderr
    jobs.append(proc.stdout.split()[-1])
    code, answer = why(jobs[-1])
    demo.slurm("scancel", jobs[-1])   # before the controller provisions for it
    assert (code, answer["layer"]) == (11, "L1"), answer
    assert answer["details"]["needed"] == 8 and answer["details"]["usable"] <= 8 - len(unavailable), answer
    assert any(n in " ".join(answer["evidence"]) for n in unavailable), answer


def test_l4_and_l3_a_running_job_and_one_held_by_its_dependency_while_a_node_idles(lab, jobs):
    long_job = _submit("-N1", "-J", "long", "--wrap", "sleep 900")
    jobs.append(long_job)
    demo.wait_for("job %s to run" % long_job, lambda: demo.job(long_job)["state"] == "RUNNING", 900)
    code, answer = why(long_job)
    node = demo.job(long_job)["nodes"][0]
    assert (code, answer["layer"], answer["blocking"]) == (0, "L4", False), answer
    code, on_node = why(node)
    assert (code, on_node["layer"]) == (0, "L4") and long_job in on_node["details"]["jobs"], on_node
    # a short job leaves its node joined and idle (until the pool's idle_time parks it)
    short = _submit("-N1", "-J", "short", "--wrap", "true")
    demo.wait_for("job %s to end" % short, lambda: demo.job(short)["state"] in ("COMPLETED", "GONE"), 900)
    held = _submit("-N1", "-J", "held", "--dependency=afterok:%s" % long_job, "--wrap", "true")
    jobs.append(held)
    answers = []

    def l3():
        code, answer = why(held)
        answers.append((code, answer["layer"], answer["summary"]))
        return answer if answer["layer"] == "L3" else None
    try:
        answer = demo.wait_for("why %s to answer L3" % held, l3, 60, poll=2)
    except demo.DemoError as exc:
        pytest.fail("%s; answers: %s; nodes: %s" % (exc, answers[-3:], demo.slurm("sinfo", "-N", "-h", "-o", "%N %T %E")))
    assert "Dependency" in answer["evidence"][0] and "afterok:%s" % long_job in answer["evidence"][0], answer
    assert answer["details"]["nodes_that_fit"], answer


def _scrape():
    text = requests.get("http://127.0.0.1:%d/metrics" % METRICS_PORT, timeout=30).text
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def _decision_classes(rows):
    out = collections.Counter()
    for d in rows:
        outcome = "pending" if d["outcome"] is None else ("ok" if d["outcome"] == "ok" else "failed")
        out[(d["action"], outcome)] += 1
    return out


def test_the_controllers_metrics_agree_with_the_ledger(lab):
    for _attempt in range(30):
        states_before, decided_before = demo.states(), _decision_classes(decisions())
        samples = _scrape()
        states_after, decided_after = demo.states(), _decision_classes(decisions())
        if states_before == states_after:
            break
        time.sleep(2)
    else:
        pytest.fail("the ledger's node states kept changing for a minute; cannot compare")
    assert [v for _l, v in samples["gpufleet_ledger_up"]] == [1.0]
    by_state = collections.Counter()
    for labels, value in samples["gpufleet_nodes"]:
        assert labels["pool"] == "lab", labels
        by_state[labels["state"]] += int(value)
    expected = collections.Counter(states_after.values())
    expected["not_enrolled"] = 8 - len(states_after)
    assert +by_state == +expected, (by_state, expected)
    scraped = collections.Counter()
    for labels, value in samples["gpufleet_decisions_total"]:
        scraped[(labels["action"], labels["outcome"])] += int(value)
    # decisions only grow and outcomes only move out of pending: the scrape lies between the
    # ledger read before it and the one after it
    for key in set(decided_before) | set(decided_after) | set(scraped):
        low = min(decided_before[key], decided_after[key])
        high = max(decided_before[key], decided_after[key])
        assert low <= scraped[key] <= high, (key, decided_before[key], scraped[key], decided_after[key])
    assert sum(scraped.values()) >= sum(decided_before.values()) > 0
