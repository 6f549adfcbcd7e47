"""Each owned node's category over a period: ledger states, split by Slurm samples while joined.

Rules (docs/fleet-view.md): before its first transition an owned node is ``not_enrolled``;
after ``decommissioned`` it is no longer owned (no interval). While joined, Slurm's state
counts from the first sample taken during that joined stretch until the next sample; before
that first sample the stretch is ``unsampled``.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.view.categories import ledger_category, slurm_category

__all__ = ["ledger_segments", "node_intervals", "state_at"]


def ledger_segments(transitions, start, end):
    """[(state, t0, t1)] of one node's ledger state clipped to [start, end); state None
    before the first transition."""
    out = []
    state, since = None, float("-inf")
    for item in transitions:
        if item.at > since:
            _clip(out, state, since, item.at, start, end)
        state, since = item.to_state, max(since, item.at)
    _clip(out, state, since, float("inf"), start, end)
    return out


def _clip(out, state, t0, t1, start, end):
    lo, hi = max(t0, start), min(t1, end)
    if hi > lo:
        out.append((state, lo, hi))


def _joined_intervals(samples, t0, t1):
    """[(category, a, b)] of a joined stretch [t0, t1) from the samples taken in it."""
    inside = [s for s in samples if t0 <= s.at < t1]
    out = []
    edge, category = t0, "unsampled"
    for sample in inside:
        if sample.at > edge:
            out.append((category, edge, sample.at))
        edge, category = max(edge, sample.at), slurm_category(sample.slurm_state)
    if t1 > edge:
        out.append((category, edge, t1))
    return out


def node_intervals(transitions, samples, start, end):
    """[(category, t0, t1)] covering the node's owned time in [start, end).

    ``transitions`` and ``samples`` are this node's, oldest first. Decommissioned time is
    left out (not owned); the samples of a joined stretch are the ones taken within it.
    """
    out = []
    for state, t0, t1 in ledger_segments(transitions, start, end):
        if state == states.DECOMMISSIONED:
            continue
        if state == states.JOINED:
            # Samples taken during the whole joined stretch count, even before ``start``.
            stretch_start = _stretch_start(transitions, t0)
            for category, a, b in _joined_intervals(samples, stretch_start, t1):
                if b > t0:
                    out.append((category, max(a, t0), b))
            continue
        out.append((ledger_category(state), t0, t1))
    return out


def _stretch_start(transitions, t0):
    """When the joined stretch that covers time ``t0`` began."""
    joins = [t.at for t in transitions if t.at <= t0 and t.to_state == states.JOINED]
    return joins[-1] if joins else t0


def state_at(transitions, when):
    """(state, since) of one node at time ``when`` from its transitions (None, None before any)."""
    state, since = None, None
    for item in transitions:
        if item.at > when:
            break
        if item.to_state != state:
            state, since = item.to_state, item.at
    return state, since
