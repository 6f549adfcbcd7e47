import time

from gpufleet.capacity.model import Action
from gpufleet.controller.actuator import Actuator
from gpufleet.work.action import REPAIR, ROLLOUT
from gpufleet.work.kinds import playbook_for
from tests.unit.gpufleet.controller.conftest import Runs


def act(kind, *nodes, **kw):
    return Action(kind=kind, pool="lab", nodes=nodes or ("n1",), reason="why", **kw)


def test_each_kind_runs_its_playbook_on_exactly_its_nodes():
    assert playbook_for(act("bringup", "n1", "n2"))[0] == "bringup"
    assert playbook_for(act("bringup", "n1", "n2"))[1]["gpufleet_targets"] == "n1,n2"
    assert playbook_for(act("wake"))[0] == "wake"
    assert playbook_for(act("park"))[1]["gpufleet_park_power_off"] is True
    assert "gpufleet_park_drain" not in playbook_for(act("park"))[1]
    # Slurm's SuspendProgram: powered off, not drained (Slurm must be able to pick it again)
    assert playbook_for(act("park", target_tier="suspended"))[1]["gpufleet_park_drain"] is False
    assert playbook_for(act("hold"))[0] == "hold"
    pb, extra = playbook_for(act("admit", "n1", "n2", job_id="9", gang_id="job-9"))
    assert pb == "admit" and extra["gpufleet_admit_nodes"] == ["n1", "n2"] and extra["gpufleet_gang_id"] == "job-9"
    assert playbook_for(act("break_fix")) == (None, {})


def test_records_run_no_playbook_and_a_warm_bringup_parks_after():
    assert playbook_for(act("substitute", "n4", gang_id="g", replaces="n2")) == (None, {})
    assert playbook_for(act("reserve", "n1", "n2", gang_id="g")) == (None, {})
    assert playbook_for(act("bringup", target_tier="warm"))[0] == ("bringup", "park")


def test_concurrency_is_bounded_and_one_decision_runs_once():
    runs = Runs()
    runs.gate.clear()
    actuator = Actuator("inv", concurrency=2, run=runs)
    for i in range(4):
        assert actuator.submit_many([(i, act("bringup", "n%d" % i))], "bringup", {})
    assert not actuator.submit_many([(0, act("bringup", "n0"))], "bringup", {})
    deadline = time.monotonic() + 10
    while len(runs.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(runs.calls) == 2                 # two at once, the others queued behind them
    runs.gate.set()
    done = actuator.collect(wait=True)
    assert sorted(d[0] for d in done) == [0, 1, 2, 3] and {d[2] for d in done} == {"ok"}
    actuator.shutdown()


def test_day2_kinds_map_to_their_playbooks():
    playbook, extra = playbook_for(Action("drain", "lab", ("n1",), "NHC: check_gpu failed", stage=REPAIR))
    assert playbook == "drain" and extra["gpufleet_targets"] == "n1" and "NHC" in extra["gpufleet_reason"]
    playbook, extra = playbook_for(Action("recycle", "lab", ("n1",), "drained", peers=("n2",), stage=REPAIR))
    assert playbook == "recycle" and extra["gpufleet_fabric_peers"] == ["n2"]
    assert extra["gpufleet_recycle_hold"] and extra["gpufleet_recycle_drained"]
    playbook, extra = playbook_for(Action("requeue", "lab", ("n1",), "timeout", jobs=("7", "8"), stage=REPAIR))
    assert playbook == "requeue" and extra["gpufleet_requeue_jobs"] == ["7", "8"]
    playbook, extra = playbook_for(Action("readmit", "lab", ("n1",), "back", target_tier="joined", stage=REPAIR))
    assert playbook == "admit" and extra["gpufleet_admit_nodes"] == ["n1"]
    playbook, extra = playbook_for(Action("readmit", "lab", ("n1",), "back", target_tier="warm", stage=REPAIR))
    assert playbook == "park" and extra["gpufleet_park_power_off"] is True
    assert playbook_for(Action("readmit", "lab", ("n1",), "back", target_tier="hot", stage=REPAIR)) == (None, {})


def test_a_replacement_resumes_in_its_jobs_reservation_and_the_bind_names_it():
    playbook, extra = playbook_for(Action("resume", "lab", ("n2",), "job 7 lost n1", job_id="7", replaces="n1",
                                          reservation="7@100", reserve_nodes=("n2", "n5"),
                                          release_nodes=("n1",), stage=REPAIR))
    assert playbook == "admit" and extra["gpufleet_admit_nodes"] == ["n2"] and extra["gpufleet_admit_job"] == "7"
    assert extra["gpufleet_replace_reservation"] == "7@100" and extra["gpufleet_replace_nodes"] == ["n2", "n5"]
    assert extra["gpufleet_replace_failed"] == ["n1"]
    playbook, extra = playbook_for(Action("bind", "lab", ("n2",), "pending again", job_id="7",
                                          reservation="7@100", reserve_nodes=("n2", "n5"), stage=REPAIR))
    assert playbook == "bind_replacement" and (extra["gpufleet_bind_job"], extra["gpufleet_bind_reservation"],
                                               extra["gpufleet_bind_nodes"]) == ("7", "7@100", "n2,n5")
    # the planner's own resume is a plain one
    _playbook, extra = playbook_for(Action("resume", "lab", ("n2",), "demand", stage=REPAIR))
    assert "gpufleet_replace_reservation" not in extra


def test_a_rollout_recycle_installs_its_image_and_gate_profile():
    image = {"gpufleet_image_version": "v2", "gpufleet_image_url": "https://m/v2.tgz",
             "gpufleet_image_manifest": "/img/v2/manifest.json"}
    action = Action("recycle", "lab", ("n1",), "rollout 1 canary", rollout={"gate_profile": "strict"},
                    image=image, peers=("n2",), stage=ROLLOUT)
    playbook, extra = playbook_for(action)
    assert playbook == "recycle" and extra["gpufleet_fabric_peers"] == ["n2"]
    assert {k: extra[k] for k in image} == image and extra["gpufleet_gate_profile"] == "strict"
    # a repair: the files' image
    plain = playbook_for(Action("recycle", "lab", ("n1",), "NHC", peers=("n2",), stage=REPAIR))[1]
    assert "gpufleet_image_version" not in plain and "gpufleet_gate_profile" not in plain
