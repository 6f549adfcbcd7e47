"""Fabric peers: known-good, free, same fabric set; hot before idle, same rack first."""
from gpufleet.day2.peers import PeerNode, pick_peers


def _n(name, fabric="f1", rack="r1", tier="hot", valid=True, jobs=()):
    return PeerNode(name, fabric, rack, tier, valid, jobs)


NODES = [_n("lone"), _n("z-hot-r1"), _n("a-hot-r2", rack="r2"), _n("b-idle", tier="idle"),
         _n("c-busy", tier="busy", jobs=("j",)), _n("d-stale", valid=False),
         _n("e-other", fabric="f2"), _n("f-warm", tier="warm")]


def test_picks_hot_same_rack_first():
    pick = pick_peers("lone", NODES, count=3)
    assert pick.ok and pick.peers == ("z-hot-r1", "a-hot-r2", "b-idle")


def test_not_enough_peers_is_refused_with_the_count():
    pick = pick_peers("lone", NODES, count=4)
    assert not pick.ok and "has 3 known-good" in pick.reason


def test_excluded_and_unknown_nodes():
    assert pick_peers("lone", NODES, exclude=("z-hot-r1",)).peers == ("a-hot-r2",)
    assert not pick_peers("ghost", NODES).ok


def test_a_peer_lent_to_a_run_in_flight_comes_last_and_is_named_when_it_must_serve():
    # each fabric phase stops the iperf3 server on its first peer: a shared one is cut mid-test
    pick = pick_peers("lone", NODES, shared=("z-hot-r1", "a-hot-r2"))
    assert pick.peers == ("b-idle",) and "shared" not in pick.reason
    pick = pick_peers("lone", NODES, count=3, shared=("z-hot-r1",))
    assert pick.ok and pick.peers == ("a-hot-r2", "b-idle", "z-hot-r1")
    assert pick.reason.endswith("(shared with a run in flight: z-hot-r1)")
