from gpufleet.work.action import REPAIR, ROLLOUT, Action


def test_an_action_is_frozen_and_hashable_whatever_its_payload():
    plain = Action("park", "lab", ("n1",), "idle")
    repair = Action("break_fix", "lab", ("n1",), "x", record={"summary": "x"}, stage=REPAIR)
    rollout = Action("recycle", "lab", ("n1",), "x", rollout={"role": "canary"}, image={"v": 1}, stage=ROLLOUT)
    assert len({plain, repair, rollout}) == 3
    assert Action("park", "lab", ("n1",), "idle") == plain and plain != Action("park", "lab", ("n1",), "idle",
                                                                                stage=REPAIR)
    try:
        plain.kind = "wake"
    except AttributeError:
        pass
    else:
        raise AssertionError("an Action must be frozen")
