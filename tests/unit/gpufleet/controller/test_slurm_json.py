import json
import os

import pytest

from gpufleet.controller import slurm_json
from gpufleet.controller.errors import SchedulerOutputError

HERE = os.path.join(os.path.dirname(__file__), "fixtures")


def fixture(name):
    with open(os.path.join(HERE, name)) as handle:
        return handle.read()


def test_real_22_05_squeue_gives_pending_jobs_with_count_partition_reason_and_submit_time():
    jobs = slurm_json.parse_squeue(fixture("squeue-22.05-pending.json"))
    by_id = {j.job_id: j for j in jobs}
    assert set(by_id) == {"1", "3"}
    two = by_id["1"]
    assert (two.nodes, two.partition, two.state, two.reason) == (2, "batch", "PENDING", "Resources")
    assert two.submit_time == 1795513836.0 and two.nodes_assigned == () and two.gang
    assert by_id["3"].reason == "JobHeldUser" and by_id["3"].nodes == 1
    assert two.reservation == ""
    bound = json.loads(fixture("squeue-22.05-pending.json"))
    bound["jobs"][0]["resv_name"] = "7@1800000000"       # as `scontrol update JobId=.. ReservationName=..` leaves it
    assert slurm_json.parse_squeue(json.dumps(bound))[0].reservation == "7@1800000000"


def test_newer_squeue_shape_unwraps_numbers_lists_gpus_and_hostlists():
    jobs = slurm_json.parse_squeue(fixture("squeue-23.11.json"))
    assert [j.job_id for j in jobs] == ["41", "42"]          # COMPLETED is not demand
    train, running = jobs
    assert (train.nodes, train.gpus_per_node, train.state) == (4, 8, "PENDING")
    assert train.features == ("gpu", "h100", "ib") and train.submit_time == 1764000000.0
    assert running.nodes_assigned == ("gpu-r1n1", "gpu-r1n2") and running.gpus_per_node == 4


def test_22_05_gres_spelling_counts_gpus():
    assert slurm_json._gpus("gres:gpu:8") == 8
    assert slurm_json._gpus("gres/gpu:a100:2,gres/nic:1") == 2
    assert slurm_json._gpus("") == 0


def test_unregistered_cloud_nodes_are_absent_from_real_22_05_sinfo():
    assert slurm_json.parse_sinfo(fixture("sinfo-22.05-cloud-unregistered.json")) == {}


def test_22_05_sinfo_node_state_and_flags():
    doc = {"meta": {}, "errors": [], "nodes": [
        {"name": "lab-r1n1", "state": "idle", "state_flags": ["DRAIN"], "reason": "gpufleet:hold",
         "partitions": ["batch"], "features": "lab,emulated", "active_features": "lab,emulated", "gres": "",
         "last_busy": 1795513000},
        {"name": "lab-r1n2", "state": "allocated", "state_flags": [], "partitions": ["batch"], "last_busy": 5}]}
    nodes = slurm_json.parse_sinfo(json.dumps(doc))
    held, busy = nodes["lab-r1n1"], nodes["lab-r1n2"]
    assert held.state == "IDLE" and held.flags == ("DRAIN",) and held.reason == "gpufleet:hold"
    assert held.features == ("lab", "emulated") and held.last_busy == 1795513000
    assert busy.state == "ALLOCATED" and busy.flags == ()


def test_newer_sinfo_groups_are_expanded_and_partitions_merged():
    nodes = slurm_json.parse_sinfo(fixture("sinfo-23.11.json"))
    assert sorted(nodes) == ["gpu-r1n1", "gpu-r1n2", "gpu-r1n3", "gpu-r1n4"]
    assert nodes["gpu-r1n3"].partitions == ("debug", "gpu") and nodes["gpu-r1n3"].flags == ("DRAIN",)
    assert nodes["gpu-r1n4"].reason == "gpufleet:hold" and nodes["gpu-r1n1"].state == "ALLOCATED"


@pytest.mark.parametrize("text, words", [
    ("squeue: error: Unable to contact slurm controller", "no JSON"),
    ("[]", "not an object"),
    ('{"errors": [{"error": "boom"}], "jobs": []}', "boom"),
    ('{"errors": [], "job": []}', "unknown Slurm output shape"),
    ('{"errors": [], "jobs": [{"job_id": 1, "job_state": "PENDING", "submit_time": 1}]}', "node_count"),
    ('{"errors": [], "jobs": [{"job_id": 1, "job_state": 5, "node_count": 1, "submit_time": 1}]}', "job_state"),
    ('{"errors": [], "jobs": [{"job_id": 1, "job_state": "PENDING", "node_count": "2", "submit_time": 1}]}',
     "not a number"),
])
def test_unparseable_squeue_fails_closed_with_a_reason(text, words):
    with pytest.raises(SchedulerOutputError) as err:
        slurm_json.parse_squeue(text)
    assert words in str(err.value)


def test_unknown_sinfo_shape_fails_closed():
    with pytest.raises(SchedulerOutputError) as err:
        slurm_json.parse_sinfo('{"errors": [], "partitions": []}')
    assert "sinfo" in str(err.value) and "unknown Slurm output shape" in str(err.value)
