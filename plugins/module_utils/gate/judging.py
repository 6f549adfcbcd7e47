# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Judging: one measured value against a profile's threshold -> ``CheckResult``.

The only place where numbers are compared with thresholds. Measured values arrive in the
check's canonical unit (``CheckSpec.unit``, what the parsers return); results show both
numbers in the profile's unit. How a check is judged is its catalog ``kind``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import check_spec
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import FAIL, PASS, CheckResult
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import convert, is_number

__all__ = ["judge", "judge_local", "diag_key"]


def judge(check, measured, profile, details=()):
    """Judge one check: ``measured`` in the catalog's canonical unit -> ``CheckResult``.

    ``measured`` is a number, or for per-item checks a mapping (GPU, GPU pair, HCA ->
    value) where every item must meet the limit; for ``gpu_model`` a name or a mapping of
    names, for ``xid`` a list of XID numbers, for ``firmware_pins`` a mapping of component
    to version, for ``dcgm_diag`` (test, entity, status) triples or a mapping of test name
    to pass/fail/skip/warn. ``None`` (nothing measured) always fails.
    """
    threshold = profile.threshold(check)
    if measured is None:
        return _result(threshold, None, FAIL, "%s: nothing was measured, so the check fails closed" % check, details)
    verdict, shown, reason, extra = _JUDGES[threshold.kind](threshold, measured)
    return _result(threshold, shown, verdict, reason, tuple(details) + tuple(extra))


def judge_local(check, measured, expected, passed, reason):
    """A result for a check the gate judges itself (no profile threshold): phase and unit from the catalog."""
    spec = check_spec(check)
    return CheckResult(name=check, phase=spec.phase, measured=measured, threshold=expected, unit=spec.unit,
                       verdict=PASS if passed else FAIL, reason=reason)


def _result(threshold, measured, verdict, reason, details):
    return CheckResult(name=threshold.check, phase=threshold.phase, measured=measured, threshold=threshold.limit,
                       unit=threshold.unit, verdict=verdict, reason=reason, details=tuple(details))


def _items(measured):
    """(label, value) pairs from a number or a mapping; label None for a single value."""
    if isinstance(measured, dict):
        return tuple(sorted(measured.items(), key=lambda kv: str(kv[0])))
    if isinstance(measured, tuple) and measured and all(isinstance(m, tuple) and len(m) == 2 for m in measured):
        return measured
    return ((None, measured),)


def _fmt(value):
    return ("%.2f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _judge_bound(threshold, measured):
    items = tuple((label, int(value) if isinstance(value, bool) else value) for label, value in _items(measured))
    bad_type = [label for label, value in items if not is_number(value) or math.isnan(value)]
    if bad_type or not items or (isinstance(measured, dict) and not measured):
        return FAIL, None, "%s: measured value %r is not a number" % (threshold.check, measured), ()
    shown = tuple((label, convert(value, threshold.spec.unit, threshold.unit)) for label, value in items)
    floor = threshold.kind == "min"
    worst_label, worst = (min if floor else max)(shown, key=lambda kv: kv[1])
    offenders = [(label, v) for label, v in shown if (v < threshold.limit if floor else v > threshold.limit)]
    extra = (("values", shown),) if worst_label is not None else ()
    at = "" if worst_label is None else " (worst: %s)" % worst_label
    want = threshold.param("hcas")
    if want is not None and len(shown) < want:
        return FAIL, worst, "%s: %d of %d expected HCAs reported a result" % (
            threshold.check, len(shown), want), extra
    if not offenders:
        word = ">=" if floor else "<="
        return PASS, worst, "%s: %s %s%s %s %s %s" % (
            threshold.check, _fmt(worst), threshold.unit, at, word, _fmt(threshold.limit), threshold.unit), extra
    side = "below the floor" if floor else "above the limit"
    names = ", ".join(str(label) for label, _v in offenders if label is not None)
    reason = "%s: %s %s%s is %s of %s %s" % (
        threshold.check, _fmt(worst), threshold.unit, at, side, _fmt(threshold.limit), threshold.unit)
    if names:
        reason += "; offending: " + names
    return FAIL, worst, reason, extra


def _judge_equals(threshold, measured):
    if not is_number(measured):
        return FAIL, None, "%s: measured value %r is not a number" % (threshold.check, measured), ()
    if measured == threshold.limit:
        return PASS, measured, "%s: %s %s as expected" % (threshold.check, _fmt(measured), threshold.unit), ()
    return FAIL, measured, "%s: found %s %s, expected %s" % (
        threshold.check, _fmt(measured), threshold.unit, _fmt(threshold.limit)), ()


def _judge_one_of(threshold, measured):
    items = tuple(enumerate(measured)) if isinstance(measured, list) else _items(measured)
    wrong = [(label, v) for label, v in items if v not in threshold.limit]
    shown = sorted(set(str(v) for _l, v in items))
    if not items:
        return FAIL, None, "%s: no names were reported" % threshold.check, ()
    if not wrong:
        return PASS, ", ".join(shown), "%s: %s is allowed" % (threshold.check, ", ".join(shown)), ()
    label, value = wrong[0]
    where = "" if label is None else " on %s" % label
    return FAIL, ", ".join(shown), '%s: "%s"%s is not one of %s' % (
        threshold.check, value, where, ", ".join(threshold.limit)), ()


def _judge_deny(threshold, measured):
    if not isinstance(measured, (list, tuple, set, frozenset)) or not all(is_number(x) for x in measured):
        return FAIL, None, "%s: expected a list of XID numbers, got %r" % (threshold.check, measured), ()
    seen = tuple(sorted(set(int(x) for x in measured)))
    denied = [x for x in seen if x in threshold.limit]
    if denied:
        return FAIL, seen, "%s: deny-listed XID %s found in the kernel log" % (
            threshold.check, ", ".join(str(x) for x in denied)), ()
    tail = "" if not seen else " (seen, allowed: %s)" % ", ".join(str(x) for x in seen)
    return PASS, seen, "%s: no deny-listed XID%s" % (threshold.check, tail), ()


def _judge_pins(threshold, measured):
    found = dict(_items(measured)) if isinstance(measured, (dict, tuple)) else None
    if not found or None in found:
        return FAIL, None, "%s: expected a mapping of component to version, got %r" % (threshold.check, measured), ()
    wrong = ["%s is %s, pinned %s" % (c, found.get(c, "missing"), v) for c, v in threshold.limit if found.get(c) != v]
    shown = tuple((c, found.get(c)) for c, _v in threshold.limit)
    if wrong:
        return FAIL, shown, "%s: %s" % (threshold.check, "; ".join(wrong)), ()
    return PASS, shown, "%s: all %d components match their pins" % (threshold.check, len(shown)), ()


# DCGM 3.x test names whose DCGM 4.x name differs beyond case and spacing.
_DIAG_ALIASES = {"gpu_memory": "memory", "eud_test": "eud"}


def diag_key(name):
    """A DCGM test name for comparison: case-insensitive, spaces, hyphens and underscores equal,
    3.x names mapped to 4.x ("Memory Bandwidth" = "memory_bandwidth", "GPU Memory" = "memory")."""
    key = "_".join(str(name).lower().replace("-", " ").replace("_", " ").split())
    return _DIAG_ALIASES.get(key, key)


def _diag_results(measured):
    """(test, entity, status) triples from triples or a {test: status} mapping; None when neither."""
    if isinstance(measured, dict):
        return tuple((test, "", status) for test, status in sorted(measured.items()))
    if isinstance(measured, (tuple, list)) and all(isinstance(r, tuple) and len(r) == 3 for r in measured):
        return tuple(measured)
    return None


def _where(results):
    """``diagnostic on GPU3; pcie on GPU1, GPU5`` (``(node)`` for node-wide results)."""
    by_test = {}
    for test, entity, _status in results:
        by_test.setdefault(test, []).append(entity or "(node)")
    return "; ".join("%s on %s" % (test, ", ".join(sorted(set(ents)))) for test, ents in sorted(by_test.items()))


def _diag_problems(threshold, results):
    allowed_warn = set(diag_key(n) for n in threshold.param("allow_warnings", ()))
    allowed_skip = set(diag_key(n) for n in threshold.param("allow_skips", ()))
    failed = [r for r in results if r[2] == "fail"]
    warned = [r for r in results if r[2] == "warn" and diag_key(r[0]) not in allowed_warn]
    skipped = [r for r in results if r[2] == "skip" and diag_key(r[0]) not in allowed_skip]
    ran = set(diag_key(r[0]) for r in results if r[2] != "skip")
    missing = [n for n in threshold.param("required", ()) if diag_key(n) not in ran]
    problems = []
    failed_tests = sorted(set(r[0] for r in failed))
    if len(failed_tests) > threshold.limit:
        problems.append("%d test(s) failed: %s" % (len(failed_tests), _where(failed)))
    if warned:
        problems.append("warning(s): %s (a profile may accept them with allow_warnings: [%s])" % (
            _where(warned), ", ".join(sorted(set(r[0] for r in warned)))))
    if skipped:
        problems.append("skipped: %s (a profile may accept them with allow_skips: [%s])" % (
            _where(skipped), ", ".join(sorted(set(r[0] for r in skipped)))))
    if missing:
        problems.append("required test(s) did not run: %s" % ", ".join(missing))
    if not any(r[2] == "pass" for r in results):
        problems.append("no test passed")
    bad_tests = set(r[0] for r in warned + skipped) | set(failed_tests) | set(missing)
    return problems, len(bad_tests), failed_tests


def _judge_all_pass(threshold, measured):
    results = _diag_results(measured)
    if not results:
        return FAIL, None, "%s: no diagnostic test results were reported" % threshold.check, ()
    problems, bad, failed_tests = _diag_problems(threshold, results)
    extra = (("tests", tuple("%s %s: %s" % (t, e or "(node)", s) for t, e, s in results)),)
    if problems:
        return FAIL, bad, "%s: %s" % (threshold.check, "; ".join(problems)), extra
    tests = len(set(r[0] for r in results))
    return PASS, len(failed_tests), "%s: %d test(s) ran, %d failed (allowed %d)" % (
        threshold.check, tests, len(failed_tests), threshold.limit), extra


_JUDGES = {"min": _judge_bound, "max": _judge_bound, "equals": _judge_equals, "one_of": _judge_one_of,
           "deny": _judge_deny, "pins": _judge_pins, "all_pass": _judge_all_pass}
