# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Typed access to the fields of one Redfish resource; a wrong type is a named error.

Every reader (power, boot, virtual media, inventory, firmware) takes the values it uses
through ``Fields``, so a BMC answering outside the schema (``PowerState: 5``,
``Boot: "Pxe"``, ``Members`` that is not a list) fails the node with an error naming the
node, the resource and the field, never a Python traceback or a silent ``None``.
Absent optional fields stay ``None``; Redfish leaves most properties optional.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError,
)

__all__ = ["Fields", "POWER_STATES"]

POWER_STATES = ("On", "Off", "PoweringOn", "PoweringOff", "Paused")
_TEXT = (str, type(u""))
_KINDS = {
    "text": (lambda v: isinstance(v, _TEXT), "a string"),
    "flag": (lambda v: isinstance(v, bool), "true or false"),
    "number": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    "integer": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
}


class Fields:
    """One resource (a dict) read by field name; ``where`` is its path, ``node`` its node."""

    def __init__(self, resource, node="", where=None, prefix=""):
        self.node = node
        self.where = where or "a resource"
        self.prefix = prefix
        if not isinstance(resource, dict):
            self._fail(prefix.rstrip(".") or "(the resource)", resource, "an object")
        self.data = resource
        if where is None and isinstance(resource.get("@odata.id"), _TEXT):
            self.where = resource["@odata.id"]

    def _fail(self, name, value, expected):
        raise BmcResponseError(
            "%s answered %s with %s = %s, expected %s. The answer does not follow the Redfish "
            "schema: check the BMC firmware, or report it so a quirk can cover it."
            % ("BMC of node " + self.node if self.node else "The BMC", self.where, name,
               _show(value), expected),
            node=self.node, url=self.where, field=name)

    def get(self, key, kind, required=False, choices=None):
        """``resource[key]`` if it has type ``kind`` (and is in ``choices``); None when absent."""
        name = self.prefix + key
        value = self.data.get(key)
        if value is None:
            if required:
                self._fail(name, value, "%s (a required field)" % _KINDS[kind][1])
            return None
        check, expected = _KINDS[kind]
        if not check(value):
            self._fail(name, value, expected)
        if choices is not None and value not in choices:
            self._fail(name, value, "one of " + ", ".join(choices))
        return value

    def text(self, key, required=False, choices=None):
        return self.get(key, "text", required, choices)

    def sub(self, key, required=False):
        """The object at ``key`` as Fields (empty when absent)."""
        value = self.get(key, "object", required)
        return Fields(value or {}, self.node, self.where, self.prefix + key + ".")

    def texts(self, key):
        """A list of strings at ``key`` (None when absent)."""
        values = self.get(key, "list")
        if values is not None:
            for index, value in enumerate(values):
                if not isinstance(value, _TEXT):
                    self._fail("%s%s[%d]" % (self.prefix, key, index), value, "a string")
        return values

    def objects(self, key):
        """A list of objects at ``key`` as Fields (empty when absent)."""
        values = self.get(key, "list") or []
        return [Fields(v, self.node, self.where, "%s%s[%d]." % (self.prefix, key, i))
                for i, v in enumerate(values)]

    def link(self, key):
        """The ``@odata.id`` of the object at ``key`` (None when absent)."""
        return self.sub(key).text("@odata.id")


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
