"""Refresh rollout: move a pool to a new image version (or gate profile), canaries first.

``plan_refresh(rollout, nodes, results, jobs, rules, room)`` is one pass:
1. no canaries chosen yet: pick ``rules.canaries`` free nodes (by name) and refresh them;
2. canary gate failures above ``rules.max_canary_failures``: halt, redeploy the previous
   version on every canary that left it; no other node is touched;
3. canaries pending: wait;
4. canaries passed: the next batch of free old nodes, at most ``room`` (the budget left).
A node is free when it runs no job: one job never spans two image versions, because a node
of a running job is never moved mid-job. ``mixed_jobs`` checks that invariant.
"""
from dataclasses import dataclass, replace
from typing import Tuple

from gpufleet.capacity.model import BUSY, PROVISIONING, UNAVAILABLE
from gpufleet.day2.stage import running_on

__all__ = ["Rollout", "RefreshStep", "plan_refresh", "mixed_jobs"]


@dataclass(frozen=True)
class Rollout:
    pool: str
    target: str                   # the new version
    previous: str                 # redeployed on rollback
    canaries: Tuple[str, ...] = ()
    halted: bool = False
    reason: str = ""


@dataclass(frozen=True)
class RefreshStep:
    kind: str                     # refresh | rollback | wait | done | halted
    nodes: Tuple[str, ...]
    version: str
    reason: str


def _free(node, busy):
    return (node.tier not in (BUSY, PROVISIONING, UNAVAILABLE) and not node.jobs
            and node.node not in busy)


def plan_refresh(rollout, nodes, results, jobs, rules, room, versions=None):
    """nodes: the pool's NodeViews; results: {node: True/False} gate results on the target
    version (absent: pending); jobs: running Jobs; rules: day2.refresh; room: budget left;
    versions: {node: version} where it differs from ``NodeView.image_version`` (a gate-profile
    rollout keeps the image: the caller names who is on the target already).

    -> (Rollout, RefreshStep)."""
    pool = [n for n in nodes if n.pool == rollout.pool]
    if versions:
        pool = [replace(n, image_version=versions.get(n.node, n.image_version)) for n in pool]
    busy = running_on(jobs)
    if rollout.halted:
        return rollout, _rollback(rollout, pool, rollout.reason)
    if not rollout.canaries:
        free = sorted(n.node for n in pool if n.image_version != rollout.target
                      and _free(n, busy))
        chosen = tuple(free[:min(rules.canaries, max(room, 0))])
        if not chosen:
            return rollout, RefreshStep("wait", (), rollout.target,
                                        "no free node (or no budget) for a canary")
        return replace(rollout, canaries=chosen), RefreshStep(
            "refresh", chosen, rollout.target, f"canaries {', '.join(chosen)} first")
    failed = sorted(n for n in rollout.canaries if results.get(n) is False)
    if len(failed) > rules.max_canary_failures:
        why = (f"{len(failed)} canary gate failure(s) ({', '.join(failed)}), threshold "
               f"{rules.max_canary_failures}: rollout halted")
        halted = replace(rollout, halted=True, reason=why)
        return halted, _rollback(halted, pool, why)
    pending = [n for n in rollout.canaries if n not in results]
    if pending:
        return rollout, RefreshStep("wait", tuple(pending), rollout.target,
                                    "waiting for the canaries' gate")
    return rollout, _batch(rollout, pool, busy, room)


def _batch(rollout, pool, busy, room):
    old = [n for n in pool if n.image_version != rollout.target
           and n.node not in rollout.canaries]
    if not old:
        return RefreshStep("done", (), rollout.target, f"pool {rollout.pool} on "
                           f"{rollout.target}")
    free = sorted(n.node for n in old if _free(n, busy))
    batch = tuple(free[:max(room, 0)])
    if not batch:
        return RefreshStep("wait", (), rollout.target, f"{len(old)} node(s) left, none free "
                           "within the budget (busy nodes wait for their jobs to end)")
    return RefreshStep("refresh", batch, rollout.target, f"batch of {len(batch)} "
                       f"({len(old) - len(batch)} left after it)")


def _rollback(rollout, pool, why):
    moved = tuple(sorted(n.node for n in pool if n.node in rollout.canaries
                         and n.image_version != rollout.previous))
    if not moved:
        return RefreshStep("halted", (), rollout.previous, why)
    return RefreshStep("rollback", moved, rollout.previous,
                       f"{why}; redeploy {rollout.previous} on {', '.join(moved)}")


def mixed_jobs(jobs, versions):
    """Running jobs whose nodes run more than one version ({node: version}) -> job ids."""
    return tuple(sorted(job.job_id for job in jobs if job.state == "RUNNING"
                        and len({versions.get(n) for n in job.nodes_assigned}) > 1))
