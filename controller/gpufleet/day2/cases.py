"""Open repair cases, folded from the controller's recorded day-2 decisions.

The decision log is the case book (as gangs in progress are folded from it): a restarted
controller finds every case where the last one left it, without state of its own. Per node,
oldest first: a drain opens a case; its outcome moves the phase (drain ok -> draining, recycle
ok -> recycled, recycle failed -> recycle_failed, counting the failure); a readmit or
break_fix that succeeded closes it. A decision without outcome is in flight: the node waits.
"""
from dataclasses import dataclass, replace
from typing import Tuple

from gpufleet.day2.repair import Case
from gpufleet.work import folds
from gpufleet.work.codec import is_day2

__all__ = ["OpenCase", "NOT_STARTED", "fold_cases", "ended"]

# Outcome prefix of a step recorded but never started (too few fabric peers, ...).
NOT_STARTED = "not started:"


@dataclass(frozen=True)
class OpenCase:
    case: Case
    reasons: Tuple[Tuple[float, str], ...] = ()   # (when, why) of each step, for break_fix
    in_flight: bool = False                        # its last decision has no outcome yet
    not_started: str = ""                          # the last 'not started' outcome, said once


def ended(decision):
    return float(decision.get("outcome_at") or decision["at"])


def _step(open_case, decision):
    """The case after one decision of its node (None: closed)."""
    kind, outcome = decision["action"], decision["outcome"]
    case = open_case.case
    reasons = open_case.reasons + ((float(decision["at"]), "%s: %s" % (kind, decision["reason"])),)
    if outcome is None:
        return replace(open_case, reasons=reasons, in_flight=True,
                       case=replace(case, phase="recycling") if kind == "recycle" else case)
    if outcome.startswith(NOT_STARTED):
        return replace(open_case, in_flight=False, not_started=outcome)
    ok = outcome == "ok"
    opened = replace(open_case, reasons=reasons, in_flight=False, not_started="")
    if kind in ("readmit", "break_fix") and ok:
        return None
    if kind == "drain":
        phase = "draining" if ok else "detected"
        return replace(opened, case=replace(case, phase=phase, since=ended(decision)))
    if kind == "recycle":
        if ok:
            return replace(opened, case=replace(case, phase="recycled", since=ended(decision)))
        return replace(opened, case=replace(case, phase="recycle_failed", since=ended(decision),
                                            failed_recycles=case.failed_recycles
                                            + (ended(decision),)))
    return opened   # requeue, or a failed readmit / break_fix: the phase stays, tried again


def fold_cases(decisions):
    """decisions: the ledger's decision dicts, oldest first -> {node: OpenCase}."""
    def opened(decision, node):   # a drain opens a case
        return OpenCase(Case(node, decision["pool"], "detected", float(decision["at"]))) \
            if decision["action"] == "drain" else None
    return folds.per_node([d for d in decisions if is_day2(d)], opened, _step)
