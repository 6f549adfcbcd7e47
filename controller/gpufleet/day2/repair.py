"""Repair: drain -> recycle (reimage + full gate) -> back to the tier the floors need, with
break_fix after ``max_recycles`` failed recycles within ``recycle_window``, and "replace,
then repair" for a node under a running multi-node job.

``next_step(case, rules, now, target_tier)`` is one decision for one actionable node; the
controller runs the step and records the new phase. ``replacements`` picks hot nodes for the
multi-node jobs a failed node was running, before its drain.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

from gpufleet.capacity.model import HOT

__all__ = ["Case", "Step", "BreakFixRecord", "next_step", "replacements", "break_fix_record",
           "PHASES"]

# detected: actionable, nothing done yet; draining: Slurm drain set, jobs may still run;
# recycling: reimage + gate under way; recycle_failed: the last recycle's gate failed;
# recycled: the gate passed, waiting to go back to its tier.
PHASES = ("detected", "draining", "recycling", "recycle_failed", "recycled")


@dataclass(frozen=True)
class Case:
    node: str
    pool: str
    phase: str                           # one of PHASES
    since: float                         # when the phase began
    jobs: Tuple[str, ...] = ()           # jobs still running on the node
    failed_recycles: Tuple[float, ...] = ()   # when each failed recycle ended


@dataclass(frozen=True)
class Step:
    kind: str      # drain | wait | requeue | recycle | readmit | break_fix | replace
    node: str
    pool: str
    reason: str
    jobs: Tuple[str, ...] = ()
    target_tier: Optional[str] = None
    replacement: Optional[str] = None
    job_id: Optional[str] = None


@dataclass(frozen=True)
class BreakFixRecord:
    """What a technician needs: the node, its reasons over time, the last gate failures and
    the BMC's log entries (SEL), as the controller read them."""
    node: str
    pool: str
    reasons: Tuple[Tuple[float, str], ...]
    failed_recycles: Tuple[float, ...]
    gate_failures: Tuple[str, ...]
    bmc_log: Tuple[str, ...]
    summary: str


def _recent_failures(case, rules, now):
    return tuple(t for t in case.failed_recycles if now - t <= rules.recycle_window)


def next_step(case, rules, now, target_tier):
    """rules: the pool's ``day2`` policy section; target_tier: what the floors need back."""
    if case.phase not in PHASES:
        raise ValueError(f"case {case.node}: unknown phase {case.phase!r}; fix: use one of "
                         f"{', '.join(PHASES)}")
    failures = _recent_failures(case, rules, now)
    if case.phase == "recycle_failed" and len(failures) >= rules.max_recycles:
        return Step("break_fix", case.node, case.pool,
                    f"{len(failures)} failed recycles within {rules.recycle_window:g}s "
                    f"(limit {rules.max_recycles}): handing it to a technician")
    if case.phase == "detected":
        return Step("drain", case.node, case.pool, "drain so nothing new starts on it",
                    jobs=case.jobs)
    if case.phase == "draining":
        return _draining(case, rules, now)
    if case.phase == "recycle_failed":
        return Step("recycle", case.node, case.pool,
                    f"recycle again ({len(failures)} of {rules.max_recycles} failed in window)")
    if case.phase == "recycled":
        return Step("readmit", case.node, case.pool, f"gate passed: back to {target_tier}",
                    target_tier=target_tier)
    return Step("wait", case.node, case.pool, "recycle under way")


def _draining(case, rules, now):
    if not case.jobs:
        return Step("recycle", case.node, case.pool, "drained: reimage and run the full gate")
    waited = now - case.since
    if waited < rules.drain_timeout:
        return Step("wait", case.node, case.pool,
                    f"{len(case.jobs)} job(s) still running, waited {waited:g}s of "
                    f"{rules.drain_timeout:g}s", jobs=case.jobs)
    if rules.on_drain_timeout == "requeue":
        return Step("requeue", case.node, case.pool,
                    f"drain timeout {rules.drain_timeout:g}s passed: requeue the jobs",
                    jobs=case.jobs)
    return Step("wait", case.node, case.pool,
                f"drain timeout {rules.drain_timeout:g}s passed; policy says wait for the "
                "jobs", jobs=case.jobs)


def replacements(failed, jobs, nodes):
    """failed: node names now actionable; jobs: capacity Job records; nodes: NodeViews.

    For each running multi-node job on a failed node, a hot node of the same pool (by name,
    never one already picked) -> Step 'replace'; none left -> Step 'wait' saying so."""
    pool_of = {n.node: n.pool for n in nodes}
    free = sorted(n.node for n in nodes if n.tier == HOT and not n.jobs and n.node not in failed)
    steps = []
    for job in sorted(jobs, key=lambda j: j.job_id):
        if job.state != "RUNNING" or job.nodes <= 1:
            continue
        for node in sorted(set(job.nodes_assigned) & set(failed)):
            pool = pool_of.get(node, "")
            spare = next((n for n in free if pool_of[n] == pool), None)
            if spare is None:
                steps.append(Step("wait", node, pool, f"job {job.job_id} lost {node}; no hot "
                                  f"node in pool {pool!r} to replace it", job_id=job.job_id))
                continue
            free.remove(spare)
            steps.append(Step("replace", node, pool, f"job {job.job_id} lost {node}: "
                              f"{spare} from the hot tier replaces it, {node} recycles "
                              "in the background", replacement=spare, job_id=job.job_id))
    return tuple(steps)


def break_fix_record(case, reasons, gate_failures, bmc_log, failed_what="recycle"):
    """reasons: (time, words) pairs from the persistence tracks and the ledger; ``failed_what``:
    what ``case.failed_recycles`` counts (the planner's break_fix counts failed bring-ups)."""
    ordered = tuple(sorted(reasons))
    last = ordered[-1][1] if ordered else "no reason recorded"
    return BreakFixRecord(case.node, case.pool, ordered, tuple(case.failed_recycles),
                          tuple(gate_failures), tuple(bmc_log),
                          f"{case.node}: {len(case.failed_recycles)} failed {failed_what}(s); last "
                          f"reason: {last}; last gate failures: "
                          f"{', '.join(gate_failures) or 'none recorded'}")
