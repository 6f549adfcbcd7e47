"""Fabric peers: known-good nodes of the same fabric set to re-validate a lone node with.

The fabric gate phase needs two nodes per set; recycling one node alone fails there unless
peers are given. Known-good: gate still valid and free (hot first - held, running nothing -
then idle joined, which the controller drains first), same rack preferred, then by name.
A node already lent to another run in flight comes last: each fabric phase starts and stops
an iperf3 server on its first peer, and one run's stop would cut the other's measurement.
"""
from dataclasses import dataclass
from typing import Tuple

from gpufleet.capacity.model import HOT, IDLE

__all__ = ["PeerNode", "PeerPick", "pick_peers"]


@dataclass(frozen=True)
class PeerNode:
    node: str
    fabric_set: str
    rack: str
    tier: str
    gate_valid: bool
    jobs: Tuple[str, ...] = ()


@dataclass(frozen=True)
class PeerPick:
    peers: Tuple[str, ...]
    reason: str
    ok: bool


def pick_peers(node, nodes, count=1, exclude=(), shared=()):
    """-> PeerPick; ok False (with the reason) when not enough known-good peers exist.
    ``shared``: nodes lent as peers to runs in flight, picked only when no other will do."""
    me = next((n for n in nodes if n.node == node), None)
    if me is None:
        return PeerPick((), f"{node} is not in the inventory given; fix: pass its fabric set",
                        False)
    order = {HOT: 0, IDLE: 1}
    good = [n for n in nodes if n.node != node and n.node not in exclude
            and n.fabric_set == me.fabric_set and n.gate_valid and not n.jobs
            and n.tier in order]
    good.sort(key=lambda n: (n.node in shared, order[n.tier], n.rack != me.rack, n.node))
    chosen = tuple(n.node for n in good[:count])
    if len(chosen) < count:
        return PeerPick(chosen, f"fabric set {me.fabric_set!r} has {len(chosen)} known-good "
                        f"free peer(s) for {node}, needs {count}", False)
    also = sorted(set(chosen) & set(shared))
    return PeerPick(chosen, f"peers of {node} in fabric set {me.fabric_set!r}: "
                    f"{', '.join(chosen)}" + (f" (shared with a run in flight: {', '.join(also)})" if also else ""),
                    True)
