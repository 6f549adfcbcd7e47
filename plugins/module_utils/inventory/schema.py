# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Field access for the rack description: typed, required or defaulted, named errors."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
                                   "Fix the value's type.")
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


def fmt(pattern, entry, **values):
    """Expand a ``str.format`` pattern; unknown placeholders name the entry and the choices."""
    try:
        return pattern.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise RackDescriptionError(entry, "pattern %r cannot be expanded (%s)" % (pattern, exc),
                                   "Use only the placeholders %s." % ", ".join("{%s}" % k for k in sorted(values)))


def is_template(value):
    """True when ``value`` is a Jinja reference such as ``{{ vault_bmc_password }}``."""
    return isinstance(value, (str, type(u""))) and "{{" in value and "}}" in value
