# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Field access for the rack description: typed, required or defaulted, named errors."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import string

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError

__all__ = ["MISSING", "field", "integer", "mapping", "fmt", "is_template"]

MISSING = object()
_TYPE_NAMES = {dict: "a mapping", list: "a list", int: "an integer", str: "a string", bool: "true or false"}


def _type_ok(value, kind):
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, (str, type(u"")))
    return isinstance(value, kind)


def field(data, key, entry, kind, default=MISSING):
    """``data[key]`` checked against ``kind``; a missing required key names ``entry``."""
    if not isinstance(data, dict):
        raise RackDescriptionError(entry, "expected a mapping, got %s" % type(data).__name__,
                                   "Write this entry as key: value pairs.")
    if key not in data or data[key] is None:
        if default is MISSING:
            raise RackDescriptionError(entry, "required field %r is missing" % key,
                                       "Add %s.%s." % (entry, key))
        return default
    value = data[key]
    if not _type_ok(value, kind):
        raise RackDescriptionError("%s.%s" % (entry, key), "expected %s, got %r" % (_TYPE_NAMES[kind], value),
                                   "Write %s there." % _TYPE_NAMES[kind])
    return value


def integer(data, key, entry, low, high=None, default=MISSING):
    """An integer field within ``low..high`` (``high`` None: no upper bound)."""
    value = field(data, key, entry, int, default)
    if value < low or (high is not None and value > high):
        span = "%d..%d" % (low, high) if high is not None else "at least %d" % low
        raise RackDescriptionError("%s.%s" % (entry, key), "%d is out of range (%s)" % (value, span),
                                   "Set %s to a value in that range." % key)
    return value


def mapping(data, key, entry):
    """An optional mapping field, empty when absent."""
    return field(data, key, entry, dict, {})


# A placeholder's format spec: optional fill and alignment, zero padding and a width of at most
# two digits, then a type ("{slot:02d}", "{rack:>4}", "{rack_index:x}"). Anything more (attribute
# or index access, nested fields, huge widths) is refused before str.format sees it.
_SPEC = re.compile(r"^(?:[0-9A-Za-z_-]?[<>^])?0?[0-9]{0,2}[dsxX]?$")


def _placeholder_error(pattern, entry, values, problem):
    choices = ", ".join("{%s}" % k for k in sorted(values))
    return RackDescriptionError(entry, "pattern %r cannot be expanded (%s)" % (pattern, problem),
                                "Use only the placeholders %s, each with at most a width such as {slot:02d}." % choices)


def _check_placeholders(pattern, entry, values):
    """Refuse any placeholder other than the named ``values`` with a simple format spec."""
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:  # a lone { or }
        raise _placeholder_error(pattern, entry, values, exc)
    for _literal, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in values:
            raise _placeholder_error(pattern, entry, values, "{%s} is not a placeholder" % name)
        if conversion is not None or not _SPEC.match(spec or ""):
            raise _placeholder_error(pattern, entry, values, "{%s} takes no conversion and only a width of at most "
                                                             "2 digits, got %r" % (name, (conversion or "") + (spec or "")))


def fmt(pattern, entry, **values):
    """Expand a pattern's ``{placeholder}``s; anything else names the entry and the choices."""
    _check_placeholders(pattern, entry, values)
    try:
        return pattern.format(**values)
    except (KeyError, IndexError, ValueError) as exc:  # e.g. {rack:d}: a number format on text
        raise _placeholder_error(pattern, entry, values, exc)


def is_template(value):
    """True when ``value`` is a Jinja reference such as ``{{ vault_bmc_password }}``."""
    return isinstance(value, (str, type(u""))) and "{{" in value and "}}" in value
