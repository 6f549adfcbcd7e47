# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the lifecycle package: state machine, ledger, gang and warm pool."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["LifecycleError", "IllegalTransition", "LedgerError", "GangError", "UnknownNode"]


class LifecycleError(GpufleetError):
    """Base of every lifecycle error."""


class IllegalTransition(LifecycleError):
    """A requested state change is not an edge of the state machine."""


class UnknownNode(LifecycleError):
    """The ledger holds no record of the node."""


class LedgerError(LifecycleError):
    """The ledger database cannot be opened, read or written."""


class GangError(LifecycleError):
    """A gang request cannot be planned, admitted or rolled back."""
