# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the Redfish layer.

Every message names the node, the BMC address, the resource, the cause and the fix.
Structured fields (HTTP status, Redfish MessageId, node) ride in ``details``; no
credential ever does.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = [
    "RedfishError", "BmcConnectionError", "OutcomeUnknownError", "BmcHTTPError", "BmcAuthError",
    "BmcResponseError", "DiscoveryError", "UnsupportedValueError",
    "TaskFailedError", "WaitTimeoutError",
]


class RedfishError(GpufleetError):
    """Base of every Redfish failure."""


class BmcConnectionError(RedfishError):
    """The BMC did not answer: refused, reset, TLS failure or timeout."""


class OutcomeUnknownError(BmcConnectionError):
    """An action (POST, or PATCH without If-Match) got no answer after it may have reached
    the BMC: it is never sent again; the caller reads the state it should have changed."""


class BmcHTTPError(RedfishError):
    """The BMC answered with an HTTP error status (after retries)."""


class BmcAuthError(BmcHTTPError):
    """The BMC refused the credentials (401/403)."""


class BmcResponseError(RedfishError):
    """The BMC answered with something that is not the Redfish JSON we expect."""


class DiscoveryError(RedfishError):
    """A resource we need (system id, VirtualMedia, UpdateService) does not exist."""


class UnsupportedValueError(RedfishError):
    """The BMC does not allow the requested value (reset type, boot target, media type)."""


class TaskFailedError(RedfishError):
    """A Redfish task monitor ended in a failed state."""


class WaitTimeoutError(RedfishError):
    """The BMC did not reach the requested state in time."""
