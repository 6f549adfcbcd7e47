# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Per-SKU threshold profiles: the check catalog, profile validation and judgement.

A profile (``profiles/gate/<sku>.yml``) maps check names from ``CATALOG`` to a limit,
a unit and check parameters. ``profile_from_dict`` validates it (unknown check, missing
or wrong unit, impossible value -> ``ProfileError``). ``judge`` compares one measured
value with the profile and returns a ``CheckResult``: the only place where numbers are
compared with thresholds. Measured values arrive in the check's canonical unit (what
the parsers return); reports show both numbers in the profile's unit.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import dataclasses
import math
import numbers
import os
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError, ProfileError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import FAIL, PASS, CheckResult

__all__ = ["PHASES", "CATALOG", "UNITS", "Threshold", "Profile", "profile_from_dict", "load_profile",
           "profile_path", "judge", "parse_size"]

PHASES = ("attestation", "gpu", "nvlink", "fabric", "storage", "reference", "soak")

# Unit -> (dimension, factor to the dimension's base). Bandwidth base is bytes/s.
UNITS = {
    "GB/s": ("bandwidth", 1e9), "MB/s": ("bandwidth", 1e6), "GiB/s": ("bandwidth", 1073741824.0),
    "MiB/s": ("bandwidth", 1048576.0), "Gb/s": ("bandwidth", 1.25e8), "Mb/s": ("bandwidth", 1.25e5),
    "IOPS": ("rate", 1.0), "count": ("count", 1.0), "gpus": ("count", 1.0), "links": ("count", 1.0),
    "pages": ("count", 1.0), "name": ("name", 1.0), "version": ("version", 1.0),
    "xid": ("xid", 1.0), "tests": ("tests", 1.0),
}

Check = collections.namedtuple("Check", "phase kind canonical upper retryable params")
# kind: min | max | equals | one_of | deny | pins | all_pass. canonical: the unit judge() expects
# measured values in (None = free unit chosen by the profile). upper: the largest plausible
# limit in the canonical unit (a floor above it can never be met). params: extra keys -> type.
CATALOG = {
    "firmware_pins": Check("attestation", "pins", "version", None, False, {}),
    "gpu_count": Check("gpu", "equals", "count", 72, False, {}),
    "gpu_model": Check("gpu", "one_of", "name", None, False, {}),
    "dcgm_diag": Check("gpu", "all_pass", "tests", None, False, {"level": ("int", 1, 4), "required": ("names",)}),
    "ecc_uncorrectable": Check("gpu", "max", "count", 1e6, False, {}),
    "retired_pages": Check("gpu", "max", "pages", 1e6, False, {}),
    "retired_pages_pending": Check("gpu", "max", "gpus", 72, False, {}),
    "row_remap_failures": Check("gpu", "max", "gpus", 72, False, {}),
    "row_remap_pending": Check("gpu", "max", "gpus", 72, False, {}),
    "xid": Check("gpu", "deny", "xid", None, False, {}),
    "gpu_burn": Check("gpu", "min", "gpus", 72, False, {"duration_s": ("int", 10, 86400)}),
    "nvlink_links": Check("nvlink", "min", "links", 36, False, {}),
    "nvbandwidth_d2d": Check("nvlink", "min", "GB/s", 2000, True, {}),
    "nvbandwidth_h2d": Check("nvlink", "min", "GB/s", 256, True, {}),
    "nvbandwidth_d2h": Check("nvlink", "min", "GB/s", 256, True, {}),
    "nccl_single_node": Check("nvlink", "min", "GB/s", 2000, True, {"message_size": ("size",)}),
    "nccl_multi_node": Check("fabric", "min", "GB/s", 2000, True,
                             {"message_size": ("size",), "nodes": ("int", 2, 100000)}),
    "ib_write_bw": Check("fabric", "min", "Gb/s", 1600, True, {"hcas": ("int", 1, 64)}),
    "iperf3_tcp": Check("fabric", "min", "Gb/s", 1600, True, {"duration_s": ("int", 1, 3600)}),
    "fio_seq_read": Check("storage", "min", "MB/s", 200000, True, {"size": ("size",), "runtime_s": ("int", 1, 3600)}),
    "fio_seq_write": Check("storage", "min", "MB/s", 200000, True, {"size": ("size",), "runtime_s": ("int", 1, 3600)}),
    "fio_rand_read": Check("storage", "min", "IOPS", 5e7, True, {"size": ("size",), "runtime_s": ("int", 1, 3600)}),
    "fio_rand_write": Check("storage", "min", "IOPS", 5e7, True, {"size": ("size",), "runtime_s": ("int", 1, 3600)}),
    "reference_job": Check("reference", "min", None, None, False,
                           {"duration_s": ("int", 1, 604800), "metric": ("str",), "command": ("str",)}),
    "soak": Check("soak", "min", None, None, False,
                  {"duration_s": ("int", 1, 604800), "metric": ("str",), "command": ("str",)}),
}
_LIMIT_KEY = {"min": "min", "max": "max", "equals": "equals", "one_of": "one_of", "deny": "deny",
              "pins": "pins", "all_pass": "max_failures"}
_MAX_RETRIES = 5
_SIZE_RE = re.compile(r"^(\d+)\s*([KMGT]?)i?B?$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One check's limit from a profile, in the profile's unit."""

    check: str
    phase: str
    kind: str
    unit: str
    limit: object
    retries: int = 0
    params: tuple = ()

    def param(self, key, default=None):
        return dict(self.params).get(key, default)


@dataclasses.dataclass(frozen=True)
class Profile:
    """A validated profile. ``checks`` is a tuple of (check name, Threshold) in file order."""

    name: str
    sku: str
    description: str
    checks: tuple

    def has(self, check):
        return any(name == check for name, _t in self.checks)

    def threshold(self, check):
        for name, value in self.checks:
            if name == check:
                return value
        raise GateError('Threshold profile "%s" has no "%s" check, so it cannot be judged. Add the check to '
                        'the profile or do not run it.' % (self.name, check), profile=self.name, key=check)

    def phase_checks(self, phase):
        return tuple(name for name, t in self.checks if t.phase == phase)


def parse_size(value):
    """Bytes from an int or an nccl-tests style size (``8G`` = 8 GiB, ``128M``, ``4KiB``)."""
    if isinstance(value, bool):
        raise ValueError("a size, not a boolean")
    if isinstance(value, int):
        return value
    match = _SIZE_RE.match(str(value).strip())
    if not match:
        raise ValueError("a size such as 8589934592, 8G or 128M")
    return int(match.group(1)) * 1024 ** " KMGT".index(match.group(2).upper() or " ")


def profile_path(name, root):
    """Where the profile ``name`` lives under the collection root (``profiles/gate/<name>.yml``)."""
    return os.path.join(root, "profiles", "gate", name + ".yml")


def load_profile(path):
    """Read and validate a YAML profile file (controller side; PyYAML ships with ansible-core)."""
    import yaml  # imported here: target hosts receive profiles as dicts and never need PyYAML
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except (IOError, OSError) as exc:
        raise ProfileError(name, path, "the file cannot be read (%s)" % exc,
                           "Pass an existing profile file or one of profiles/gate/*.yml")
    except yaml.YAMLError as exc:
        raise ProfileError(name, path, "it is not valid YAML (%s)" % exc, "Fix the YAML syntax")
    return profile_from_dict(data, name)


def profile_from_dict(data, name):
    """Validate a profile mapping and return a ``Profile`` (raises ``ProfileError``)."""
    if not isinstance(data, dict):
        raise ProfileError(name, "<top>", "the profile is not a mapping", "Start from profiles/gate/lab.yml")
    unknown = sorted(set(data) - {"profile", "sku", "description", "checks"})
    if unknown:
        raise ProfileError(name, unknown[0], "unknown top-level key",
                           "Use only profile, sku, description and checks")
    if data.get("profile", name) != name:
        raise ProfileError(name, "profile", 'it says "%s" but the file is named "%s"' % (data["profile"], name),
                           "Make the profile key match the file name")
    checks = data.get("checks")
    if not isinstance(checks, dict) or not checks:
        raise ProfileError(name, "checks", "missing or empty", "List at least one check from the catalog")
    built = tuple((check, _threshold(name, check, spec)) for check, spec in checks.items())
    return Profile(name=name, sku=str(data.get("sku", name)), description=str(data.get("description", "")),
                   checks=built)


def _threshold(profile, check, spec):
    where = "checks.%s" % check
    if check not in CATALOG:
        raise ProfileError(profile, where, "unknown check", "Use one of: " + ", ".join(sorted(CATALOG)))
    if not isinstance(spec, dict):
        raise ProfileError(profile, where, "the check is not a mapping", "Give it a limit key and a unit")
    entry = CATALOG[check]
    limit_key = _LIMIT_KEY[entry.kind]
    allowed = {"unit", "retries", limit_key} | set(entry.params)
    if entry.kind == "all_pass":
        allowed.add("max_failures")
    extra = sorted(set(spec) - allowed)
    if extra:
        raise ProfileError(profile, "%s.%s" % (where, extra[0]), "unknown key for this check",
                           "Allowed keys: " + ", ".join(sorted(allowed)))
    unit = _unit(profile, where, entry, spec)
    limit = _limit(profile, "%s.%s" % (where, limit_key), entry, unit, spec.get(limit_key, _MISSING))
    retries = _retries(profile, where, entry, spec.get("retries", 0))
    params = tuple((key, _param(profile, "%s.%s" % (where, key), entry.params[key], spec[key]))
                   for key in sorted(entry.params) if key in spec)
    return Threshold(check=check, phase=entry.phase, kind=entry.kind, unit=unit, limit=limit,
                     retries=retries, params=params)


_MISSING = object()


def _unit(profile, where, entry, spec):
    unit = spec.get("unit")
    if not isinstance(unit, str) or not unit:
        raise ProfileError(profile, where + ".unit", "missing unit",
                           'Add unit: "%s"' % (entry.canonical or "<the metric unit>"))
    if entry.canonical is None:
        return unit
    dimension = UNITS[entry.canonical][0]
    allowed = sorted(u for u, (dim, _f) in UNITS.items() if dim == dimension) if dimension == "bandwidth" \
        else [entry.canonical]
    if unit not in allowed:
        raise ProfileError(profile, where + ".unit", 'unit "%s" does not fit this check' % unit,
                           "Use one of: " + ", ".join(allowed))
    return unit


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _limit(profile, where, entry, unit, value):
    if value is _MISSING:
        if entry.kind == "all_pass":
            return 0
        raise ProfileError(profile, where, "missing limit", "Add %s with the value from the SKU's source" % where)
    if entry.kind in ("min", "max", "equals", "all_pass"):
        return _numeric_limit(profile, where, entry, unit, value)
    if entry.kind in ("one_of", "deny"):
        want = str if entry.kind == "one_of" else int
        if not isinstance(value, list) or not value or not all(
                isinstance(v, want) and not isinstance(v, bool) for v in value):
            raise ProfileError(profile, where, "expected a non-empty list of %s" % (
                "names" if want is str else "XID numbers"), "Write it as a YAML list")
        return tuple(value)
    return _pins(profile, where, value)


def _numeric_limit(profile, where, entry, unit, value):
    if not _number(value):
        raise ProfileError(profile, where, "%r is not a number" % (value,), "Write a plain number")
    canonical = to_canonical(value, unit, entry)
    if entry.kind == "min" and value <= 0:
        raise ProfileError(profile, where, "a floor of %s can never fail" % value,
                           "Set a floor above 0 from the SKU's source, or remove the check")
    if value < 0 or (entry.kind == "equals" and value < 1):
        raise ProfileError(profile, where, "%s is impossible" % value, "Use a value the hardware can report")
    if entry.upper is not None and canonical > entry.upper:
        raise ProfileError(profile, where, "%s %s is above what any supported hardware reaches (%s %s)" % (
            value, unit, entry.upper, entry.canonical), "Check the unit and the value against the datasheet")
    return value


def _pins(profile, where, value):
    if not isinstance(value, dict) or not value:
        raise ProfileError(profile, where, "expected a mapping of component to version", "Write component: \"version\"")
    for component, version in value.items():
        if not isinstance(version, str):
            raise ProfileError(profile, "%s.%s" % (where, component), "version %r is not a string" % (version,),
                               'Quote it (YAML reads 1.10 as the number 1.1): "%s"' % version)
    return tuple(sorted((str(k), v) for k, v in value.items()))


def _retries(profile, where, entry, value):
    if value == 0:
        return 0
    if not entry.retryable:
        raise ProfileError(profile, where + ".retries", "only bandwidth checks may retry",
                           "Remove retries from this check")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_RETRIES:
        raise ProfileError(profile, where + ".retries", "%r is not between 0 and %d" % (value, _MAX_RETRIES),
                           "Use a small whole number of retries")
    return value


def _param(profile, where, kind, value):
    try:
        if kind[0] == "size":
            size = parse_size(value)
            if size <= 0:
                raise ValueError("a size above 0")
            return size
        if kind[0] == "int":
            if not isinstance(value, int) or isinstance(value, bool) or not kind[1] <= value <= kind[2]:
                raise ValueError("a whole number from %d to %d" % (kind[1], kind[2]))
            return value
        if kind[0] == "names":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("a list of names")
            return tuple(value)
        if not isinstance(value, str) or not value:
            raise ValueError("a non-empty string")
        return value
    except ValueError as exc:
        raise ProfileError(profile, where, "%r is not valid" % (value,), "Write %s" % exc)


def to_canonical(value, unit, entry):
    if entry.canonical is None or unit == entry.canonical:
        return value
    return value * UNITS[unit][1] / UNITS[entry.canonical][1]


def from_canonical(value, unit, entry):
    if entry.canonical is None or unit == entry.canonical:
        return value
    return value * UNITS[entry.canonical][1] / UNITS[unit][1]


def judge(check, measured, profile, details=()):
    """Judge one check: ``measured`` in the catalog's canonical unit -> ``CheckResult``.

    ``measured`` is a number, or for per-item checks a mapping (GPU, GPU pair, HCA ->
    value) where every item must meet the limit; for ``gpu_model`` a name or a mapping of
    names, for ``xid`` a list of XID numbers, for ``firmware_pins`` a mapping of component
    to version, for ``dcgm_diag`` a mapping of test name to pass/fail/skip/warn. ``None``
    (nothing measured) always fails.
    """
    threshold = profile.threshold(check)
    entry = CATALOG[check]
    if measured is None:
        return _result(threshold, None, FAIL, "%s: nothing was measured, so the check fails closed" % check, details)
    verdict, shown, reason, extra = _JUDGES[threshold.kind](threshold, entry, measured)
    return _result(threshold, shown, verdict, reason, tuple(details) + tuple(extra))


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


def _judge_bound(threshold, entry, measured):
    items = tuple((label, int(value) if isinstance(value, bool) else value) for label, value in _items(measured))
    bad_type = [label for label, value in items if not _number(value) or math.isnan(value)]
    if bad_type or not items or (isinstance(measured, dict) and not measured):
        return FAIL, None, "%s: measured value %r is not a number" % (threshold.check, measured), ()
    shown = tuple((label, from_canonical(value, threshold.unit, entry)) for label, value in items)
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
    if threshold.check.startswith("nccl_") and worst == 0:
        reason += ("; a busbw of 0 means the ranks never talked to each other (nccl-tests built without MPI "
                   "runs one single-rank job per process): rebuild nccl-tests with MPI=1")
    return FAIL, worst, reason, extra


def _judge_equals(threshold, entry, measured):
    if not _number(measured):
        return FAIL, None, "%s: measured value %r is not a number" % (threshold.check, measured), ()
    if measured == threshold.limit:
        return PASS, measured, "%s: %s %s as expected" % (threshold.check, _fmt(measured), threshold.unit), ()
    return FAIL, measured, "%s: found %s %s, expected %s" % (
        threshold.check, _fmt(measured), threshold.unit, _fmt(threshold.limit)), ()


def _judge_one_of(threshold, entry, measured):
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


def _judge_deny(threshold, entry, measured):
    if not isinstance(measured, (list, tuple, set, frozenset)) or not all(_number(x) for x in measured):
        return FAIL, None, "%s: expected a list of XID numbers, got %r" % (threshold.check, measured), ()
    seen = tuple(sorted(set(int(x) for x in measured)))
    denied = [x for x in seen if x in threshold.limit]
    if denied:
        return FAIL, seen, "%s: deny-listed XID %s found in the kernel log" % (
            threshold.check, ", ".join(str(x) for x in denied)), ()
    tail = "" if not seen else " (seen, allowed: %s)" % ", ".join(str(x) for x in seen)
    return PASS, seen, "%s: no deny-listed XID%s" % (threshold.check, tail), ()


def _judge_pins(threshold, entry, measured):
    found = dict(_items(measured)) if isinstance(measured, (dict, tuple)) else None
    if not found or None in found:
        return FAIL, None, "%s: expected a mapping of component to version, got %r" % (threshold.check, measured), ()
    wrong = ["%s is %s, pinned %s" % (c, found.get(c, "missing"), v) for c, v in threshold.limit if found.get(c) != v]
    shown = tuple((c, found.get(c)) for c, _v in threshold.limit)
    if wrong:
        return FAIL, shown, "%s: %s" % (threshold.check, "; ".join(wrong)), ()
    return PASS, shown, "%s: all %d components match their pins" % (threshold.check, len(shown)), ()


def _judge_all_pass(threshold, entry, measured):
    if not isinstance(measured, dict) or not measured:
        return FAIL, None, "%s: no diagnostic test results were reported" % threshold.check, ()
    failed = sorted(name for name, status in measured.items() if status == "fail")
    missing = [name for name in threshold.param("required", ()) if measured.get(name) != "pass"]
    extra = (("tests", tuple(sorted(measured.items()))),)
    if len(failed) > threshold.limit:
        return FAIL, len(failed), "%s: %d test(s) failed: %s" % (threshold.check, len(failed), ", ".join(failed)), extra
    if missing:
        return FAIL, len(failed), "%s: required test(s) did not pass: %s" % (threshold.check, ", ".join(
            "%s (%s)" % (name, measured.get(name, "not run")) for name in missing)), extra
    return PASS, len(failed), "%s: %d test(s) ran, %d failed (allowed %d)" % (
        threshold.check, len(measured), len(failed), threshold.limit), extra


_JUDGES = {"min": _judge_bound, "max": _judge_bound, "equals": _judge_equals, "one_of": _judge_one_of,
           "deny": _judge_deny, "pins": _judge_pins, "all_pass": _judge_all_pass}
