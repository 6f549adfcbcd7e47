"""Step 7 of plan(): bring-ups too few for the gate's fabric phase, with no known-good node of
the pool free to measure with, get companions from cold (one run validates them together)."""
from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, WARM

from tests.unit.gpufleet.capacity.fleet_factory import flight, job, make_policy, node, nodes, run


def _bringups(result):
    return [(a.nodes, a.target_tier, a.reason) for a in result.actions if a.kind == "bringup"]


def test_a_lone_cold_bring_up_on_an_empty_pool_gets_a_companion():
    result = run(make_policy(fabric_test_nodes=2), nodes(COLD, 3), [job(1)])
    (first, tier1, _r1), (second, tier2, why) = _bringups(result)
    assert (first, second) == (("p-cold-00",), ("p-cold-01",)) and tier1 == tier2
    assert why.startswith("fabric peer for p-cold-00: the gate measures the fabric over 2 nodes")
    assert result.actions[1].job_id is None      # the companion serves no job


def test_a_free_hot_or_idle_node_is_the_peer_instead():
    hot = run(make_policy(fabric_test_nodes=2, floors={"hot": 2}), nodes(COLD, 3) + (node("p-hot-00", HOT),))
    assert [n for n, _t, _w in _bringups(hot)] == [("p-cold-00",)]
    idle = run(make_policy(fabric_test_nodes=2, floors={"hot": 1}), nodes(COLD, 3) + nodes(IDLE, 1))
    assert [n for n, _t, _w in _bringups(idle)] == [("p-cold-00",)]     # the idle node, no job for it


def test_idle_nodes_pending_jobs_will_take_are_no_peers():
    result = run(make_policy(fabric_test_nodes=2), nodes(COLD, 3) + nodes(IDLE, 1), [job(1), job(2)])
    assert [n for n, _t, _w in _bringups(result)] == [("p-cold-00",), ("p-cold-01",)]


def test_nodes_running_jobs_or_taken_this_pass_are_no_peers():
    # the only hot node is resumed for job 1; job 2 needs a bring-up: nothing left to measure with
    result = run(make_policy(fabric_test_nodes=2), (node("p-hot-00", HOT),) + nodes(BUSY, 2) + nodes(COLD, 3),
                 [job(1), job(2)])
    assert [n for n, _t, _w in _bringups(result)] == [("p-cold-00",), ("p-cold-01",)]


def test_enough_bring_ups_together_need_no_companion_and_size_one_never_does():
    assert len(_bringups(run(make_policy(fabric_test_nodes=2), nodes(COLD, 4), [job(1), job(2)]))) == 2
    assert len(_bringups(run(make_policy(fabric_test_nodes=1), nodes(COLD, 4), [job(1)]))) == 1


def test_nodes_on_their_way_are_not_peers_yet():
    result = run(make_policy(fabric_test_nodes=2), nodes(COLD, 3), [job(1), job(2)],
                 in_flight=[flight("bringup", "p-cold-00")])
    assert [n for n, _t, _w in _bringups(result)] == [("p-cold-01",), ("p-cold-02",)]


def test_no_cold_node_left_notes_why_and_adds_nothing():
    result = run(make_policy(fabric_test_nodes=2), nodes(COLD, 1), [job(1)])
    assert len(_bringups(result)) == 1
    assert "fabric peer for p-cold-00" in result.notes["p"]["held_back"][0]


def test_a_short_bring_up_waits_when_the_limits_leave_no_room_for_its_companion():
    # three wakes under way and a limit of 4: one slot left, the bring-up needs two
    in_flight = [flight("wake", "p-warm-%02d" % i) for i in range(3)]
    policy = make_policy(fabric_test_nodes=2, max_concurrent_bringups=4)
    result = run(policy, nodes(WARM, 3) + nodes(COLD, 3), [job(1), job(2), job(3), job(4)], in_flight)
    assert _bringups(result) == []
    assert any("waiting for a later pass" in n for n in result.notes["p"]["held_back"])
    # with room for both they go together
    roomy = run(make_policy(fabric_test_nodes=2, max_concurrent_bringups=5), nodes(WARM, 3) + nodes(COLD, 3),
                [job(1), job(2), job(3), job(4)], in_flight)
    assert len(_bringups(roomy)) == 2


def test_limits_below_the_set_size_let_it_come_up_alone():
    result = run(make_policy(fabric_test_nodes=2, max_concurrent_bringups=1), nodes(COLD, 3), [job(1)])
    assert len(_bringups(result)) == 1
    assert "it comes up alone" in result.notes["p"]["held_back"][0]


def test_bring_ups_to_different_tiers_each_get_a_companion():
    """The launcher runs a pass's bring-ups per target tier (to warm: bring up, then park): a job's
    bring-up and a warm floor's were two runs of one node each, each failing the fabric phase."""
    result = run(make_policy(fabric_test_nodes=2, floors={"warm": 1}), nodes(COLD, 5), [job(1)])
    by_tier = {}
    for nodes_, tier, _why in _bringups(result):
        by_tier.setdefault(tier, []).extend(nodes_)
    assert sorted(len(v) for v in by_tier.values()) == [2, 2] and len(by_tier) == 2, _bringups(result)


def test_a_lone_bring_up_with_no_cold_companion_waits_for_a_node_on_its_way():
    """Lab, four nodes drained by a health checker: a node brought up alone for the hot floor
    while the others were still coming up failed "needs 2 nodes per set", twice, and a healthy
    node went to break_fix. A node on its way is a validated peer soon: the bring-up waits."""
    policy = make_policy(fabric_test_nodes=2)
    moving = [flight("bringup", "p-cold-00")]
    result = run(policy, nodes(COLD, 2), [job(1), job(2)], in_flight=moving)
    assert _bringups(result) == []
    assert any("waiting for a validated peer" in n and "p-cold-00" in n for n in result.notes["p"]["held_back"])
    # nothing on its way: waiting never helps, it still goes alone (and the note says so)
    alone = run(policy, nodes(COLD, 1), [job(1)])
    assert len(_bringups(alone)) == 1 and "it comes up alone" in alone.notes["p"]["held_back"][0]
