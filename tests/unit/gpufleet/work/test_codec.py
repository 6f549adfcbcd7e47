"""An action to its journal line and back: every stage's payload survives a restart."""
import pytest

from gpufleet.work import codec
from gpufleet.work.action import CAPACITY, REPAIR, ROLLOUT, Action


def line(action, outcome=None):
    """The decision row the ledger hands back for ``action`` (as records.record_decision writes it)."""
    return {"id": 1, "at": 100.0, "action": action.kind, "pool": action.pool, "nodes": list(action.nodes),
            "reason": action.reason, "job": action.job_id, "outcome": outcome,
            "demand": {"pending_jobs": 0, "action": codec.encode(action)}}


@pytest.mark.parametrize("action", [
    Action("reserve", "lab", ("n1", "n2"), "gang", job_id="9", gang_id="9@1", deadline_at=500.0),
    Action("substitute", "lab", ("n3",), "late", gang_id="9@1", replaces="n2", deadline_at=450.0),
    Action("park", "lab", ("n1",), "slurm", target_tier="suspended"),
    Action("recycle", "lab", ("n1",), "drained", peers=("n2", "n3"), stage=REPAIR),
    Action("requeue", "lab", ("n1",), "timeout", jobs=("7", "8"), stage=REPAIR),
    Action("break_fix", "lab", ("n1",), "2 failed", record={"summary": "2 failed", "reasons": []}, stage=REPAIR),
    Action("resume", "lab", ("n4",), "job 7 lost n1", job_id="7", replaces="n1", reservation="7@5",
           reserve_nodes=("n2", "n4"), release_nodes=("n1",), stage=REPAIR),
    Action("readmit", "lab", ("n1",), "back", target_tier="joined", stage=REPAIR),
    Action("recycle", "lab", ("n1",), "canary", peers=("n2",), image={"gpufleet_image_version": "v2"},
           rollout={"rollout_id": 3, "role": "canary", "version": "v2"}, stage=ROLLOUT),
    Action("readmit", "lab", ("n1",), "back", target_tier="hot", rollout={"rollout_id": None, "role": "renewal"},
           stage=ROLLOUT),
])
def test_a_decision_decodes_to_the_action_that_was_recorded(action):
    assert codec.decode(line(action)) == action


def test_each_stage_writes_only_its_own_payload():
    gang = codec.encode(Action("reserve", "lab", ("n1",), "g", gang_id="g", deadline_at=5.0))
    assert gang == {"gang_id": "g", "replaces": None, "target_tier": None, "deadline_at": 5.0}
    repair = codec.encode(Action("drain", "lab", ("n1",), "x", stage=REPAIR))
    assert repair["day2"] is True and "rollout" not in repair
    rollout = codec.encode(Action("drain", "lab", ("n1",), "x", rollout={"role": "batch"}, stage=ROLLOUT))
    assert "day2" not in rollout and rollout["rollout"] == {"role": "batch"}   # no repair case takes it


def test_the_books_tell_their_decisions_apart():
    repair = line(Action("drain", "lab", ("n1",), "x", stage=REPAIR))
    rollout = line(Action("drain", "lab", ("n1",), "x", rollout={"role": "batch"}, stage=ROLLOUT))
    plain = line(Action("break_fix", "lab", ("n1",), "x"))
    assert codec.is_day2(repair) and not codec.is_day2(rollout) and not codec.is_day2(plain)
    assert codec.rollout_of(rollout) == {"role": "batch"} and codec.rollout_of(repair) is None
    assert codec.rollout_of(line(Action("drain", "lab", ("n1",), "x", rollout={"role": "?"}, stage=ROLLOUT))) is None
    assert codec.decode(plain).stage == CAPACITY and codec.extra_of({"demand": None}) == {}


def test_a_day2_flag_on_a_kind_day2_never_asks_for_decodes_as_the_planners():
    decision = line(Action("reserve", "lab", ("n1",), "g", gang_id="g"))
    decision["demand"]["action"]["day2"] = True
    assert codec.decode(decision).stage == CAPACITY and codec.decode(decision).gang_id == "g"
