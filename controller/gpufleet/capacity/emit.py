"""The state of one planning pass and the one way actions are added to it.

Every step (gangs, reactive, floors, scale-down) calls ``Pass.add`` so each node gets at most
one action per pass, and ``warm_up`` so every bring-up outside a gang takes the fastest tier
the limits allow (gang.py picks its own, bounded by the gang deadline).
"""
from dataclasses import dataclass, field
from typing import Dict, List

from gpufleet.capacity.model import COLD, HOT, WARM, Action

__all__ = ["Pass", "warm_up", "ago"]


def ago(seconds):
    """Seconds as the short words a log reader wants: 45s, 12m, 3.5h."""
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


@dataclass
class Pass:
    """One planning pass: inputs, working views, budgets, and what was decided so far."""
    policy: object
    now: float
    views: Dict[str, object]
    budget: object
    actions: List[Action] = field(default_factory=list)
    notes: Dict[str, dict] = field(default_factory=dict)

    def add(self, kind, pool, nodes, reason, **extra):
        action = Action(kind=kind, pool=pool, nodes=tuple(nodes), reason=reason, **extra)
        self.actions.append(action)
        return action

    def note(self, pool, key, value):
        """Append ``value`` to the pool's note list ``key`` (shortfalls, waits)."""
        self.notes.setdefault(pool, {}).setdefault(key, []).append(value)


# Fastest first; failed nodes below the break_fix limit are retried last, as cold.
_SOURCES = ((WARM, "wake", "parked"), (COLD, "bringup", "cold"), ("retry", "bringup", "failed"))


def warm_up(run, pool, why, target=HOT, job_id=None):
    """Start one node of ``pool`` towards ``target`` from the fastest tier with a free node.

    ``why`` is the reason's opening; the chosen node and tier are appended. Returns the
    action, or None when no node is free or the limits hold the bring-up back (noted).
    """
    view = run.views[pool]
    for tier, kind, word in _SOURCES:
        if tier == WARM and target == WARM:
            continue  # a parked node is warm already
        names = view.retryable if tier == "retry" else view.free.get(tier)
        if not names:
            continue
        if not run.budget.spend(pool, kind):
            run.note(pool, "held_back", f"{why}: concurrency limit reached")
            return None
        node = names.pop(0)
        verb = "waking" if kind == "wake" else f"bringing up ({word})"
        return run.add(kind, pool, (node,), f"{why}: {verb} {node}", target_tier=target,
                       job_id=job_id)
    return None
