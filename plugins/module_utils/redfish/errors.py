# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the Redfish layer.

Every message names the node, the BMC address, the resource, the cause and the fix.
Structured fields (HTTP status, Redfish MessageId, node) ride in ``details``; no
credential ever does.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = [
    "RedfishError", "BmcConnectionError", "OutcomeUnknownError", "BmcConflictError",
    "BmcHTTPError", "BmcAuthError",
    "BmcResponseError", "DiscoveryError", "UnsupportedValueError", "ParameterError",
    "TaskFailedError", "WaitTimeoutError",
]


class RedfishError(GpufleetError):
    """Base of every Redfish failure; its message is always one line.

    Messages quote what the BMC sent (allowed values, ids, error text); a line break or
    control character in there would split the one line per failed node of a fan-out.
    """

    def __init__(self, msg, **details):
        super(RedfishError, self).__init__(_one_line(msg), **details)


def _one_line(msg):
    if not isinstance(msg, (str, type(u""))):
        return msg
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", msg)


class BmcConnectionError(RedfishError):
    """The BMC did not answer: refused, reset, TLS failure or timeout."""


class OutcomeUnknownError(BmcConnectionError):
    """An action (POST, PATCH) got no answer after it may have reached the BMC: it is never
    sent again blindly; the caller reads the state it should have changed."""


class BmcConflictError(RedfishError):
    """A PATCH whose answer was lost: the re-read resource changed, but not to its values
    (someone else changed it meanwhile); it is not sent again."""


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


class ParameterError(RedfishError):
    """A module parameter cannot work on any BMC; refused before anything is sent."""


class TaskFailedError(RedfishError):
    """A Redfish task monitor ended in a failed state."""


class WaitTimeoutError(RedfishError):
    """The BMC did not reach the requested state in time."""
