"""The rollout stage alone: budget, canaries, halt, rollback, renewal, never a busy node."""
from gpufleet.capacity.model import BUSY, HOT, IDLE, NodeView
from gpufleet.capacity.policy import Day2, Members, Pool, Refresh
from gpufleet.day2.rollout_book import Book, Item
from gpufleet.day2.rollout_stage import decide, label

NOW = 100000.0


def pool(budget=2, canaries=1, validity="1d"):
    return {"p": Pool(sku="s", members=Members(groups=("g",)), gate_validity=validity,
                      day2=Day2(budget=budget, refresh=Refresh(canaries=canaries)))}


def views(spec):
    """spec: name -> (tier, version[, jobs])."""
    out = []
    for name, (tier, version, *jobs) in sorted(spec.items()):
        state = "hot" if tier == HOT else "joined"
        out.append(NodeView(name, "p", tier, state, gate_passed_at=NOW - 60, image_version=version,
                            jobs=tuple(jobs[0]) if jobs else ()))
    return out


def rollout(phase="canary", canaries=(), **kw):
    return dict({"id": 7, "pool": "p", "from_version": "v1", "to_version": "v2", "gate_profile": None,
                 "from_gate_profile": None, "phase": phase, "canaries": list(canaries), "reason": "r",
                 "created_at": 0.0}, **kw)


def test_canaries_are_chosen_recorded_and_drained():
    fleet = views({"a": (IDLE, "v1"), "b": (HOT, "v1"), "c": (IDLE, "v1")})
    passed = decide([rollout()], fleet, (), pool(), Book(), {}, set(), set(), NOW)
    assert [u.canaries for u in passed.updates] == [("a",)]
    drain, = passed.actions
    assert (drain.kind, drain.nodes, drain.rollout["role"], drain.rollout["version"]) == ("drain", ("a",), "canary", "v2")
    assert "a" in passed.claimed


def test_repairs_out_leave_no_room_for_a_canary():
    fleet = views({"a": (IDLE, "v1"), "b": (IDLE, "v1")})
    passed = decide([rollout()], fleet, (), pool(budget=1), Book(), {"p": 1}, {"x"}, set(), NOW)
    assert passed.actions == () and passed.updates == ()


def test_a_busy_node_is_never_a_canary_and_a_drained_node_with_a_job_waits():
    fleet = views({"a": (BUSY, "v1", ["j1"]), "b": (IDLE, "v1", ["j2"])})
    item = Item("b", "p", 7, "batch", "v2", None, "joined", "draining", NOW)
    passed = decide([rollout("batches", canaries=["z"])], fleet, (), pool(), Book(items={"b": item},
                    results={7: {"z": True}}), {}, set(), set(), NOW)
    assert [a for a in passed.actions if a.kind in ("drain", "recycle")] == []
    assert any("waiting for job(s) j2" in n for n in passed.notes)


def test_canary_failures_over_the_threshold_move_the_rollout_to_rolling_back():
    fleet = views({"a": (IDLE, "v2"), "b": (IDLE, "v1")})
    book = Book(results={7: {"a": False}}, moved={7: frozenset({"a"})})
    passed = decide([rollout(canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    update, = passed.updates
    assert update.phase == "rolling_back" and update.reason.startswith("halted: 1 canary gate failure")
    assert passed.actions == ()


def test_rolling_back_redeploys_the_previous_version_on_moved_nodes_only():
    fleet = views({"a": (IDLE, "v2"), "b": (IDLE, "v1"), "c": (IDLE, "v2")})
    book = Book(results={7: {"a": False, "c": True}}, moved={7: frozenset({"a", "c"})})
    passed = decide([rollout("rolling_back", canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    assert sorted((a.nodes[0], a.rollout["role"], a.rollout["version"]) for a in passed.actions) == [
        ("a", "rollback", "v1"), ("c", "rollback", "v1")]
    done = decide([rollout("rolling_back", canaries=["a"])], fleet, (), pool(), Book(), {}, set(), set(), NOW)
    assert [u.phase for u in done.updates] == ["rolled_back"]


def test_a_halted_rollout_starts_nothing_new():
    fleet = views({"a": (IDLE, "v1")})
    passed = decide([rollout("halted")], fleet, (), pool(), Book(), {}, set(), set(), NOW)
    assert passed.actions == () and passed.updates == ()


def test_done_once_every_node_in_service_is_on_the_target():
    fleet = views({"a": (IDLE, "v2"), "b": (HOT, "v2")})
    book = Book(results={7: {"a": True}}, moved={7: frozenset({"a", "b"})})
    passed = decide([rollout("batches", canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    assert [(u.phase, u.expect) for u in passed.updates] == [("done", ("canary", "batches"))]


def test_a_gate_profile_rollout_moves_nodes_that_already_run_the_image():
    record = rollout(to_version="v1", gate_profile="strict")
    assert label(record) == "v1+strict"
    fleet = views({"a": (IDLE, "v1"), "b": (IDLE, "v1")})
    passed = decide([record], fleet, (), pool(), Book(), {}, set(), set(), NOW)
    drain, = passed.actions
    assert drain.rollout["gate_profile"] == "strict" and drain.rollout["version"] == "v1"


def test_renewal_waits_while_its_pool_has_a_rollout_and_runs_otherwise():
    fleet = views({"a": (IDLE, "v1")})
    stale = pool(validity="30s")
    passed = decide([rollout("halted")], fleet, (), stale, Book(), {}, set(), set(), NOW)
    assert passed.actions == ()
    passed = decide([], fleet, (), stale, Book(), {}, set(), set(), NOW)
    drain, = passed.actions
    assert drain.rollout["role"] == "renewal" and drain.rollout["rollout_id"] is None and "last gate" in drain.reason


def test_a_node_failing_its_rollback_max_recycles_times_is_left_for_a_person():
    fleet = views({"a": (IDLE, "v2"), "b": (IDLE, "v1")})
    book = Book(results={7: {"a": False}}, moved={7: frozenset({"a"})}, rollback_failures={7: {"a": 1}})
    passed = decide([rollout("rolling_back", canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    assert [a.rollout["role"] for a in passed.actions] == ["rollback"]           # once more (max_recycles 2)
    book = Book(results={7: {"a": False}}, moved={7: frozenset({"a"})}, rollback_failures={7: {"a": 2}})
    passed = decide([rollout("rolling_back", canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    update, = passed.updates
    assert passed.actions == () and update.phase == "rolled_back" and "left failed for a person" in update.reason


def test_a_canary_that_failed_its_gate_is_held_from_the_planner_while_the_rollout_is_open():
    fleet = views({"a": (IDLE, "v2"), "b": (IDLE, "v1")})
    book = Book(results={7: {"a": False}}, moved={7: frozenset({"a"})})
    passed = decide([rollout("rolling_back", canaries=["a"])], fleet, (), pool(), book, {}, set(), set(), NOW)
    assert "a" in passed.claimed and "b" not in passed.claimed
    assert "a" not in decide([], fleet, (), pool(), book, {}, set(), set(), NOW).claimed


def test_a_rollout_recycle_picks_a_peer_lent_to_another_run_last():
    fleet = views({"a": (IDLE, "v1"), "b": (HOT, "v1"), "c": (HOT, "v1")})
    item = Item("a", "p", 7, "canary", "v2", None, "joined", "draining", NOW)

    def recycle(lent):
        passed = decide([rollout(canaries=["a"])], fleet, (), pool(), Book(items={"a": item}), {}, set(), set(), NOW,
                        lent=lent)
        action, = [a for a in passed.actions if a.kind == "recycle"]
        return action
    assert recycle(set()).peers == ("b",)
    assert recycle({"b"}).peers == ("c",)
    assert recycle({"b", "c"}).reason.endswith("(shared with a run in flight: b))")
