from gpufleet.work import codec, folds
from gpufleet.work.action import REPAIR, Action


def row(at, action):
    return {"at": at, "action": action.kind, "pool": action.pool, "nodes": list(action.nodes),
            "reason": action.reason, "job": action.job_id, "outcome": "ok",
            "demand": {"action": codec.encode(action)}}


def test_one_read_covers_every_book():
    assert folds.LOOKBACK_S >= folds.GANG_LOOKBACK_S and folds.LOOKBACK_S >= folds.DAY2_LOOKBACK_S
    assert folds.GANG_LOOKBACK_S == 2 * 86400 and folds.DAY2_LOOKBACK_S == 7 * 86400


def test_within_keeps_the_look_back_inclusive():
    rows = [{"at": 10.0}, {"at": 50.0}, {"at": 60.0}]
    assert folds.within(rows, 100.0, 50) == rows[1:] and folds.within(rows, 100.0, 1) == []


def test_gang_actions_are_the_decisions_of_a_gang_decoded():
    reserve = Action("reserve", "lab", ("n1", "n2"), "g", job_id="9", gang_id="9@1", deadline_at=50.0)
    rows = [row(1.0, reserve), row(2.0, Action("park", "lab", ("n3",), "idle")),
            row(3.0, Action("drain", "lab", ("n1",), "x", stage=REPAIR))]
    assert folds.gang_actions(rows) == [reserve]


def test_per_node_opens_moves_and_closes_each_nodes_item():
    rows = [{"action": "step", "nodes": ["n1"]},            # opened by nothing: older than the look-back
            {"action": "open", "nodes": ["n1", "n2"]},
            {"action": "step", "nodes": ["n1"]},
            {"action": "close", "nodes": ["n2"]},
            {"action": "step", "nodes": None}]

    def opened(decision, node):
        return (node, 0) if decision["action"] == "open" else None

    def step(item, decision):
        return None if decision["action"] == "close" else (item[0], item[1] + 1)
    assert folds.per_node(rows, opened, step) == {"n1": ("n1", 2)}


def test_an_admit_ends_its_gang_only_once_it_succeeded():
    reserve = Action("reserve", "lab", ("n1", "n2"), "g", job_id="9", gang_id="9@1", deadline_at=50.0)
    admit = Action("admit", "lab", ("n1", "n2"), "all ready", job_id="9", gang_id="9@1")
    running, failed, done = (dict(row(2.0, admit), outcome=outcome) for outcome in (None, "failed: rc 2", "ok"))
    assert folds.gang_actions([row(1.0, reserve), running]) == [reserve]       # under way: in progress
    assert folds.gang_actions([row(1.0, reserve), failed]) == [reserve]        # failed: still in progress
    assert folds.gang_actions([row(1.0, reserve), done]) == [reserve, admit]   # admitted: the gang ends
