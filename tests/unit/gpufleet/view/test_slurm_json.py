import json

import pytest

from gpufleet.view.slurm_json import SlurmJsonError, expand_hostlist, parse_sinfo, parse_squeue

# The shapes of Slurm 22.05 (openapi v0.0.38: plain values) and 23.02+ (lists, {set, number}).
SQUEUE_2205 = {"jobs": [
    {"job_id": 11, "job_state": "RUNNING", "state_reason": "None", "partition": "gpu", "node_count": 2,
     "nodes": "n[1-2]", "submit_time": 100, "start_time": 160, "tres_per_node": "gres:gpu:8", "features": ""},
    {"job_id": 12, "job_state": "PENDING", "state_reason": "Dependency", "partition": "gpu", "node_count": 1,
     "nodes": "", "submit_time": 120, "start_time": 0, "dependency": "afterok:11", "features": "h100&ib"},
    {"job_id": 13, "job_state": "COMPLETED", "partition": "gpu", "node_count": 1},
]}
SQUEUE_2302 = {"jobs": [
    {"job_id": 21, "job_state": ["PENDING"], "state_reason": "Resources", "partition": "cpu,gpu",
     "node_count": {"set": True, "infinite": False, "number": 4}, "submit_time": {"set": True, "number": 5},
     "start_time": {"set": False, "number": 0}, "tres_per_node": "gres/gpu:4", "nodes": ""}]}


def test_squeue_of_slurm_2205_and_2302_map_to_jobs_and_pools():
    jobs, extras = parse_squeue(json.dumps(SQUEUE_2205), {"gpu": "h100"})
    assert [(j.job_id, j.state, j.nodes, j.pool) for j in jobs] == [("11", "RUNNING", 2, "h100"),
                                                                   ("12", "PENDING", 1, "h100")]
    assert jobs[0].nodes_assigned == ("n1", "n2") and jobs[0].gpus_per_node == 8
    assert jobs[1].features == ("h100", "ib") and extras["12"]["dependency"] == "afterok:11"
    assert extras["11"]["start_time"] == 160
    [job], extras = parse_squeue(json.dumps(SQUEUE_2302), {"gpu": "h100"})
    assert (job.nodes, job.gpus_per_node, job.pool, job.submit_time) == (4, 4, "h100", 5.0)
    assert extras["21"]["start_time"] is None


def test_sinfo_states_and_flags_become_words():
    text = json.dumps({"nodes": [
        {"name": "n1", "state": "idle", "state_flags": ["DRAIN"], "reason": "held", "partitions": ["gpu"]},
        {"hostname": "n2", "state": ["ALLOCATED"], "partitions": ["gpu"]}]})
    nodes = parse_sinfo(text)
    assert nodes["n1"].states == frozenset({"IDLE", "DRAIN"}) and nodes["n1"].reason == "held"
    assert nodes["n2"].states == frozenset({"ALLOCATED"})


@pytest.mark.parametrize("text, words", [
    ("not json", "not JSON"), ('{"jobs": 3}', 'no "jobs" list'),
    ('{"jobs": [{"job_id": 1, "job_state": "PENDING", "node_count": "four"}]}', "field node_count"),
])
def test_bad_squeue_fails_closed_naming_the_field(text, words):
    with pytest.raises(SlurmJsonError, match=words):
        parse_squeue(text, {})


def test_hostlists_expand_with_padding():
    assert expand_hostlist("node[01-03,07],ctl") == ["node01", "node02", "node03", "node07", "ctl"]
    assert expand_hostlist("") == []
