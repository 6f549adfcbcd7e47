from gpufleet.capacity.model import Job
from gpufleet.view.seam import by_node
from gpufleet.view.startup import bringups, expected_left, job_start_breakdown, pool_step_durations
from tests.unit.gpufleet.view.history import H, POOL, T0, transitions


def test_time_to_schedulable_per_node_and_step():
    history = by_node(transitions())
    [n1] = bringups(history["n1"])
    assert n1["kind"] == "bringup" and n1["seconds"] == 3 * H
    assert n1["steps"] == [("enrolled", H), ("inspected", 0.5 * H), ("imaging", 0.5 * H),
                           ("configuring", 0.5 * H), ("validating", 0.25 * H), ("ready", 0.25 * H)]
    # n2's wake (+3 h) has not reached joined: only its first bring-up is complete.
    assert [b["kind"] for b in bringups(history["n2"])] == ["bringup"]
    # n3 failed: no completed bring-up.
    assert bringups(history["n3"]) == []


def test_expected_time_left_comes_from_the_pools_measured_stays():
    durations = pool_step_durations(by_node(transitions()), POOL.members)
    # validating: n1 0.25 h, n2 0.15 h -> median 0.2 h = 720 s.
    left, how = expected_left(durations, "validating", 600.0)
    assert round(left, 6) == 120.0 and "median of 2" in how
    assert expected_left(durations, "validating", 5000.0)[0] == 0.0
    assert expected_left(durations, "waking", 300.0)[0] == 600.0  # n2 woke in 900 s
    assert expected_left(durations, "recycling", 0.0) == (None, "no measured recycling duration in this pool yet")


def test_job_start_breakdown_follows_its_last_node():
    job = Job("7", 1, 8, "gpu", submit_time=T0 + 4000, state="RUNNING", nodes_assigned=("n1",))
    result = job_start_breakdown(job, T0 + 7500, by_node(transitions()))
    assert result["wait_seconds"] == 3500 and result["last_node"] == "n1"
    assert result["state_at_submit"] == "configuring"
    assert result["steps"] == {"configuring": 1400.0, "validating": 900.0, "ready": 900.0, "scheduling": 300.0}
