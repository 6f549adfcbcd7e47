# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the acceptance gate: parse failures and invalid threshold profiles.

A parser never returns a partial result: unknown format, missing field or unknown
version raise ``ParseError`` naming the tool, the line and what was expected. A profile
that names an unknown check, omits a unit or holds an impossible value raises
``ProfileError`` naming the profile, the key and the fix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["GateError", "ParseError", "ProfileError", "NotReported"]

_EXCERPT_LEN = 120


def _excerpt(line):
    if line is None:
        return None
    line = line.rstrip("\r\n")
    if len(line) > _EXCERPT_LEN:
        return line[:_EXCERPT_LEN] + "..."
    return line


class GateError(GpufleetError):
    """Base of every acceptance-gate error."""


class ParseError(GateError):
    """A tool's output could not be read: the check fails closed with this reason.

    ``tool`` names the tool (``dcgmi diag``), ``expected`` says what the parser looked
    for, ``line_no`` (1-based) and ``line`` point at the offending input when known.
    """

    def __init__(self, tool, expected, line_no=None, line=None, why=None):
        self.tool = tool
        self.expected = expected
        self.line_no = line_no
        self.excerpt = _excerpt(line)
        where = "" if line_no is None else " at line %d" % line_no
        if self.excerpt is not None:
            where += ' ("%s")' % self.excerpt
        msg = "Cannot parse %s output%s: expected %s" % (tool, where, expected)
        msg += " (%s)." % why.rstrip(".") if why else "."
        msg += " Check that the tool ran to completion and that its version is supported; the check fails closed."
        super(ParseError, self).__init__(
            msg, tool=tool, expected=expected, line_no=line_no, excerpt=self.excerpt)


class NotReported(GateError):
    """The tool ran and its output parsed, but it reported a value as N/A for some items.

    Not a parse failure: nvidia-smi prints ``[N/A]`` for counters a GPU does not expose
    (with MIG enabled, or on models without the feature). The check still fails closed.
    """

    def __init__(self, tool, what, items, hint):
        self.tool = tool
        self.items = tuple(items)
        msg = "%s not reported by %s for %s (it printed N/A or Not Supported). %s" % (
            what, tool, ", ".join(self.items) or "any item", hint.rstrip(".") + ".")
        super(NotReported, self).__init__(msg, tool=tool, what=what, items=list(self.items))


class ProfileError(GateError):
    """A threshold profile is invalid: names the profile, the key and the fix."""

    def __init__(self, profile, key, problem, fix):
        self.profile = profile
        self.key = key
        msg = 'Threshold profile "%s" is invalid at "%s": %s. %s' % (
            profile, key, problem.rstrip("."), fix.rstrip(".") + ".")
        super(ProfileError, self).__init__(msg, profile=profile, key=key)
