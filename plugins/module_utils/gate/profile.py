# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Threshold profiles: loading and validation against the catalog.

A profile (``profiles/gate/<sku>.yml``) maps check names from ``catalog.CHECKS`` to a
limit, a unit and check parameters. ``profile_from_dict`` validates it (unknown check,
missing or wrong unit, impossible value -> ``ProfileError`` naming the key and the fix)
and returns a ``Profile`` whose ``Threshold``s carry their ``CheckSpec``, so judging
needs nothing else.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import math
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import (
    CHECKS, HEALTH_CHECKS, HEALTH_DCGM_LEVEL, CheckSpec, check_spec,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError, ProfileError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import UNITS, convert, is_number, parse_size

__all__ = ["Threshold", "Profile", "profile_from_dict", "load_profile", "profile_path"]

_LIMIT_KEY = {"min": "min", "max": "max", "equals": "equals", "one_of": "one_of", "deny": "deny",
              "pins": "pins", "all_pass": "max_failures"}
_MAX_RETRIES = 5
_TOP_KEYS = ("profile", "sku", "description", "checks", "health")
_HEALTH_KEYS = ("checks", "dcgm_required")
_MISSING = object()


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One check's limit from a profile, in the profile's unit."""

    check: str
    spec: CheckSpec
    unit: str
    limit: object
    retries: int = 0
    params: tuple = ()

    @property
    def phase(self):
        return self.spec.phase

    @property
    def kind(self):
        return self.spec.kind

    def param(self, key, default=None):
        return dict(self.params).get(key, default)


@dataclasses.dataclass(frozen=True)
class Profile:
    """A validated profile. ``checks`` is a tuple of (check name, Threshold) in file order."""

    name: str
    sku: str
    description: str
    checks: tuple
    health: tuple = ()     # the health phase's (check name, Threshold); empty: no health section

    def for_health(self):
        """The profile the health phase is judged by: its checks only (DCGM at level 1)."""
        if not self.health:
            raise GateError('Threshold profile "%s" has no health section, so the health phase cannot run. '
                            'Add health: {checks: [xid, ecc_uncorrectable, ...]} to it (docs/gate-profiles.md).'
                            % self.name, profile=self.name, key="health")
        return Profile(self.name, self.sku, self.description, self.health)

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


def profile_path(name, root):
    """Where the profile ``name`` lives under the collection root (``profiles/gate/<name>.yml``)."""
    return os.path.join(root, "profiles", "gate", name + ".yml")


def load_profile(path):
    """Read and validate a YAML profile file (controller side; PyYAML ships with ansible-core).

    The strict reader refuses what PyYAML's ``safe_load`` would take silently: a key given
    twice (the last one would win, so a profile could be loosened unseen), alias bombs,
    deep nesting, non-UTF-8 text and non-regular or oversized files.
    """
    # Imported here: target hosts receive profiles as dicts and never need PyYAML.
    from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        data = strict_yaml.load_file(path)
    except strict_yaml.StrictYamlError as exc:
        raise _yaml_error(name, path, exc)
    return profile_from_dict(data, name)


def _yaml_error(name, path, exc):
    """The strict reader's error as a ``ProfileError``: the key path (for a duplicate), file and line."""
    where = path if exc.line is None else "%s line %d" % (path, exc.line)
    if exc.problem.startswith("cannot read it"):
        return ProfileError(name, where, "the file cannot be read" + exc.problem[len("cannot read it"):],
                            "Pass an existing profile file or one of profiles/gate/*.yml")
    if "appears twice" in exc.problem:
        key = _key_path_at(path, exc.line)
        where = "%s (%s)" % (key, where) if key else where
    fix = exc.fix[:1].upper() + exc.fix[1:]
    return ProfileError(name, where, exc.problem, fix)


def _key_path_at(path, line):
    """Dotted path of the key given a second time on ``line`` (``checks.xid.deny``); None if not found.

    Only called after the strict reader accepted the file's size, encoding and depth.
    """
    import yaml
    try:
        with open(path, "rb") as handle:
            root = yaml.compose(handle.read().decode("utf-8"), Loader=yaml.SafeLoader)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    stack = [(root, ())]
    while stack:
        node, prefix = stack.pop()
        if not isinstance(node, yaml.MappingNode):
            continue
        seen = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key in seen and key_node.start_mark.line + 1 == line:
                return ".".join(prefix + (key,))
            seen.add(key)
            stack.append((value_node, prefix + (str(key),)))
    return None


def profile_from_dict(data, name):
    """Validate a profile mapping and return a ``Profile`` (raises ``ProfileError``)."""
    if not isinstance(data, dict):
        raise ProfileError(name, "<top>", "the profile is not a mapping", "Start from profiles/gate/h100-sxm-8x.yml")
    unknown = sorted(str(k) for k in set(data) - set(_TOP_KEYS))
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
                   checks=built, health=_health(name, data.get("health", _MISSING), dict(built)))


def _health(profile, section, built):
    """The health section: fast checks the profile already has, judged by the same limits;
    dcgm_diag runs at level 1 and requires ``dcgm_required`` (level 1 runs other tests than 3)."""
    if section is _MISSING:
        return ()
    if not isinstance(section, dict):
        raise ProfileError(profile, "health", "not a mapping", "Write health: {checks: [xid, ecc_uncorrectable]}")
    unknown = sorted(str(k) for k in set(section) - set(_HEALTH_KEYS))
    if unknown:
        raise ProfileError(profile, "health.%s" % unknown[0], "unknown key", "Use only checks and dcgm_required")
    names = section.get("checks")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ProfileError(profile, "health.checks", "missing, empty or not a list of check names",
                           "List fast checks, e.g. [xid, ecc_uncorrectable, dcgm_diag]")
    found = []
    for check in names:
        where = "health.checks.%s" % check
        if check not in HEALTH_CHECKS:
            raise ProfileError(profile, where, "not a fast check", "The health phase holds only: "
                               + ", ".join(HEALTH_CHECKS))
        if check not in built:
            raise ProfileError(profile, where, "the profile has no such check",
                               "Add %s under checks first: the health phase judges by its limit" % check)
        found.append((check, _health_threshold(profile, built[check], section)))
    return tuple(found)


def _health_threshold(profile, threshold, section):
    if threshold.check != "dcgm_diag":
        return threshold
    required = _param(profile, "health.dcgm_required", ("names",), section.get("dcgm_required", []))
    params = dict(threshold.params, level=HEALTH_DCGM_LEVEL, required=required)
    return dataclasses.replace(threshold, params=tuple(sorted(params.items())))


def _spec_of(profile, check):
    try:
        spec = check_spec(check)
    except (KeyError, TypeError):
        spec = None
    if spec is None or not spec.in_profile:
        names = sorted(s.name for s in CHECKS if s.in_profile)
        raise ProfileError(profile, "checks.%s" % (check,), "unknown check", "Use one of: " + ", ".join(names))
    return spec


def _threshold(profile, check, spec):
    entry = _spec_of(profile, check)
    where = "checks.%s" % check
    if not isinstance(spec, dict):
        raise ProfileError(profile, where, "the check is not a mapping", "Give it a limit key and a unit")
    limit_key = _LIMIT_KEY[entry.kind]
    kinds = entry.param_kinds()
    allowed = {"unit", "retries", limit_key} | set(kinds)
    extra = sorted(str(k) for k in set(spec) - allowed)
    if extra:
        raise ProfileError(profile, "%s.%s" % (where, extra[0]), "unknown key for this check",
                           "Allowed keys: " + ", ".join(sorted(allowed)))
    unit = _unit(profile, where, entry, spec)
    limit = _limit(profile, "%s.%s" % (where, limit_key), entry, unit, spec.get(limit_key, _MISSING))
    retries = _retries(profile, where, entry, spec.get("retries", 0))
    params = tuple((key, _param(profile, "%s.%s" % (where, key), kinds[key], spec[key]))
                   for key in sorted(kinds) if key in spec)
    _sizes_agree(profile, where, dict(params))
    return Threshold(check=check, spec=entry, unit=unit, limit=limit, retries=retries, params=params)


def _unit(profile, where, entry, spec):
    unit = spec.get("unit")
    if not isinstance(unit, str) or not unit:
        raise ProfileError(profile, where + ".unit", "missing unit",
                           'Add unit: "%s"' % (entry.unit or "<the metric unit>"))
    if entry.unit is None:
        return unit
    dimension = UNITS[entry.unit][0]
    allowed = sorted(u for u, (dim, _f) in UNITS.items() if dim == dimension) if dimension == "bandwidth" \
        else [entry.unit]
    if unit not in allowed:
        raise ProfileError(profile, where + ".unit", 'unit "%s" does not fit this check' % unit,
                           "Use one of: " + ", ".join(allowed))
    return unit


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
    if not is_number(value) or not math.isfinite(value):
        raise ProfileError(profile, where, "%r is not a number" % (value,), "Write a plain number")
    if entry.kind == "min" and value <= 0:
        raise ProfileError(profile, where, "a floor of %s can never fail" % value,
                           "Set a floor above 0 from the SKU's source, or remove the check")
    if value < 0 or (entry.kind == "equals" and value < 1):
        raise ProfileError(profile, where, "%s is impossible" % value, "Use a value the hardware can report")
    if entry.upper is not None and convert(value, unit, entry.unit) > entry.upper:
        raise ProfileError(profile, where, "%s %s is above what any supported hardware reaches (%s %s)" % (
            value, unit, entry.upper, entry.unit), "Check the unit and the value against the datasheet")
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
    if value == 0 and not isinstance(value, bool):
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
        if kind[0] == "bool":
            if not isinstance(value, bool):
                raise ValueError("true or false")
            return value
        if kind[0] == "names":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ValueError("a list of names")
            return tuple(value)
        if not isinstance(value, str) or not value:
            raise ValueError("a non-empty string")
        return value
    except ValueError as exc:
        raise ProfileError(profile, where, "%r is not valid" % (value,), "Write %s" % exc)


def _sizes_agree(profile, where, params):
    """``min_message_size`` (smallest size that counts) cannot exceed the sweep's ``message_size``."""
    smallest, largest = params.get("min_message_size"), params.get("message_size")
    if smallest is not None and largest is not None and smallest > largest:
        raise ProfileError(profile, where + ".min_message_size",
                           "%d bytes is above message_size (%d bytes), so a live run could never count" % (
                               smallest, largest), "Set min_message_size at or below message_size")
