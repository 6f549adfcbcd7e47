# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the rack description (inventory) package."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["RackDescriptionError"]


class RackDescriptionError(GpufleetError):
    """The rack description is invalid; ``entry`` names the offending entry (or YAML line).

    The message reads "Rack description entry ENTRY is invalid: PROBLEM. Fix: FIX", so a user
    (and a test) finds the fix after a fixed marker whatever the problem was.
    """

    def __init__(self, entry, problem, fix, source=None):
        where = " in %s" % source if source else ""
        msg = "Rack description entry %s%s is invalid: %s. Fix: %s" % (entry, where, problem, fix)
        super(RackDescriptionError, self).__init__(msg, entry=entry, problem=problem)
        self.entry = entry
        self.problem = problem
        self.fix = fix
