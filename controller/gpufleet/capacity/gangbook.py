"""The gangs in progress after a plan's actions: the one bookkeeping rule the controller (in
the ledger) and the simulator (in memory) share, so both hand the planner the same gangs."""
from dataclasses import replace

from gpufleet.capacity.model import Gang, GangMember

__all__ = ["fold"]


def _reserve(action):
    members = tuple(GangMember(node, action.deadline_at) for node in action.nodes)
    return Gang(gang_id=action.gang_id, job_id=action.job_id, pool=action.pool,
                size=len(action.nodes), deadline_at=action.deadline_at, members=members)


def _with_member(gang, old, new):
    members = tuple(new if m.node == old else m for m in gang.members)
    return replace(gang, members=members)


def fold(gangs, actions):
    """-> the gangs after ``actions`` (in order): reserve adds, substitute swaps a member,
    a member's wake/bringup/hold sets its own deadline, admit and rollback end the gang."""
    book = {gang.gang_id: gang for gang in gangs}
    for action in actions:
        gang = book.get(action.gang_id)
        if action.kind == "reserve":
            book[action.gang_id] = _reserve(action)
        elif gang is None:
            continue
        elif action.kind in ("admit", "rollback"):
            del book[action.gang_id]
        elif action.kind == "substitute":
            swapped = _with_member(gang, action.replaces,
                                   GangMember(action.nodes[0], action.deadline_at))
            book[action.gang_id] = replace(swapped, replaced=gang.replaced + (action.replaces,))
        elif action.kind in ("wake", "bringup", "hold"):
            node = action.nodes[0]
            book[action.gang_id] = _with_member(gang, node, GangMember(node, action.deadline_at))
    return tuple(book.values())
