# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The result of one acceptance-gate check, shared by thresholds, phases and reports.

Every check reports what was measured, the threshold it was held to, the unit, the
verdict and a reason a human can act on. ``measured`` is ``None`` when nothing could be
measured (missing tool, parse failure, timeout): such a result is always a failure.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
from typing import Any, Optional

__all__ = ["PASS", "FAIL", "SKIP", "VERDICTS", "CheckResult", "failed_closed"]

PASS = "pass"
FAIL = "fail"
# Only for checks the runner did not reach (an earlier phase failed); never a judgement.
SKIP = "skip"
VERDICTS = (PASS, FAIL, SKIP)


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One check's outcome. ``details`` is a tuple of (key, value) pairs (immutable)."""

    name: str
    phase: str
    measured: Any
    threshold: Any
    unit: str
    verdict: str
    reason: str
    details: tuple = ()

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError("verdict must be one of %s, not %r" % (", ".join(VERDICTS), self.verdict))
        if self.verdict == PASS and self.measured is None:
            raise ValueError("check %s cannot pass without a measured value" % self.name)

    @property
    def passed(self):
        return self.verdict == PASS

    def to_dict(self):
        """JSON-ready form used by reports."""
        return {
            "name": self.name,
            "phase": self.phase,
            "measured": _plain(self.measured),
            "threshold": _plain(self.threshold),
            "unit": self.unit,
            "verdict": self.verdict,
            "reason": self.reason,
            "details": dict((k, _plain(v)) for k, v in self.details),
        }


def _plain(value):
    """Tuples of pairs become dicts, other tuples lists, so json.dumps gives readable output."""
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return dict((k, _plain(v)) for k, v in value)
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def failed_closed(name, phase, reason, threshold=None, unit="", details=()):
    # type: (str, str, str, Optional[Any], str, tuple) -> CheckResult
    """A failure with nothing measured: missing tool, parse error, timeout, empty output."""
    return CheckResult(name=name, phase=phase, measured=None, threshold=threshold,
                       unit=unit, verdict=FAIL, reason=reason, details=tuple(details))
