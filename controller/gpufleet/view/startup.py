"""Time to schedulable: per node (enrolled, recycling or waking -> joined) and per step, the
pool's measured time in each state, and per job the wait from submit to start by step.

All pure over ``inputs.Transition`` lists; the clock is passed in where it matters.
"""
import statistics

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states

__all__ = ["bringups", "pool_step_durations", "expected_left", "job_start_breakdown"]

# A bring-up starts when a node enters one of these and ends when it is next joined.
_STARTS = {states.ENROLLED: "bringup", states.RECYCLING: "recycle", states.WAKING: "wake"}


def bringups(transitions):
    """One node's completed bring-ups: [{kind, start, joined_at, seconds, steps}], where
    ``steps`` is [(state, seconds)] in the order the node went through them."""
    out, current = [], None
    for index, item in enumerate(transitions):
        if item.to_state in _STARTS and current is None:
            current = {"kind": _STARTS[item.to_state], "start": item.at, "steps": []}
        if current is None:
            continue
        if item.to_state == states.JOINED:
            current.update(joined_at=item.at, seconds=item.at - current["start"])
            out.append(current)
            current = None
            continue
        if item.to_state in (states.FAILED, states.BREAK_FIX, states.DECOMMISSIONED):
            current = None
            continue
        following = transitions[index + 1].at if index + 1 < len(transitions) else None
        if following is not None:
            current["steps"].append((item.to_state, following - item.at))
    return out


def pool_step_durations(transitions_by_node, members):
    """{state: [seconds, ...]}: every completed stay in a state by the pool's nodes."""
    out = {}
    for node in members:
        history = transitions_by_node.get(node, ())
        for item, following in zip(history, history[1:]):
            out.setdefault(item.to_state, []).append(following.at - item.at)
    return out


def expected_left(durations, state, elapsed):
    """(seconds left or None, how it was measured): the pool's median stay in ``state``
    minus the time already spent; None when this pool never finished that state."""
    measured = durations.get(state) or []
    if not measured:
        return None, "no measured %s duration in this pool yet" % state
    median = statistics.median(measured)
    return max(0.0, median - elapsed), "median of %d measured %s stays: %.0f s" % (
        len(measured), state, median)


def _critical_node(job, start_time, transitions_by_node):
    """The job's node that joined last before its start (the one the job waited for)."""
    best, best_at = None, float("-inf")
    for node in job.nodes_assigned:
        joins = [t.at for t in transitions_by_node.get(node, ())
                 if t.to_state == states.JOINED and t.at <= start_time]
        at = joins[-1] if joins else float("-inf")
        if best is None or at > best_at:
            best, best_at = node, at
    return best, best_at


def job_start_breakdown(job, start_time, transitions_by_node):
    """Submit -> start of one started job, split by the states its last node went through.

    ``job`` (capacity.model.Job) gives ``submit_time`` and ``nodes_assigned``. The wait before
    the last node was joined is split by that node's ledger states (its tier at submit
    names where it came from); the rest, after it joined, is ``scheduling`` (Slurm's share).
    """
    node, joined_at = _critical_node(job, start_time, transitions_by_node)
    wait = max(0.0, start_time - job.submit_time)
    steps = {}
    tier_at_submit = None
    if node is not None and joined_at > job.submit_time:
        history = transitions_by_node.get(node, ())
        for index, item in enumerate(history):
            following = history[index + 1].at if index + 1 < len(history) else start_time
            lo, hi = max(item.at, job.submit_time), min(following, joined_at)
            if item.at <= job.submit_time < following:
                tier_at_submit = item.to_state
            if hi > lo:
                steps[item.to_state] = steps.get(item.to_state, 0.0) + hi - lo
    provisioning = sum(steps.values())
    steps["scheduling"] = wait - provisioning
    return {"job": job.job_id, "submit": job.submit_time, "start": start_time,
            "wait_seconds": wait, "last_node": node, "state_at_submit": tier_at_submit or "joined",
            "steps": steps}
