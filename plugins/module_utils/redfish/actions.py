# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Send a state-changing request once; when its answer is lost, judge it by the node's state.

The client never re-sends an action that may have reached the BMC (a timeout or a reset
after sending): a second ForceRestart restarts the node twice. Instead the caller re-reads
what the action should have changed (a PATCH is settled by the client first:
``RedfishClient.patch``). If the node shows the wanted state the action is reported as
done, with a warning saying how it was learned; otherwise the node fails with a reason
that says the outcome is unknown and what to check.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    OutcomeUnknownError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.tasks import wait_task

__all__ = ["send_once", "patch_once", "settled_note", "unknown_outcome"]


def send_once(client, target, body, what):
    """POST an action and follow its task; the OutcomeUnknownError if the answer was lost."""
    try:
        wait_task(client, client.post(target, body), what)
    except OutcomeUnknownError as exc:
        return exc
    return None


def patch_once(client, path, body, applied=None):
    """PATCH ``path``; the OutcomeUnknownError if its answer was lost, else None.

    ``applied(resource)``: does the resource show the PATCH? The client settles a lost
    answer with it (client.patch); the error is returned both when that proved the PATCH in
    place and when it could not tell, and the caller reads back what it changed either way.
    """
    try:
        return client.patch(path, body, applied).lost
    except OutcomeUnknownError as exc:
        return exc


def settled_note(client, what, exc, observed):
    """Warning for an action whose lost answer was settled by reading the node."""
    return ("Node %s: %s got no answer (%s) and was not sent again; the BMC now reports %s, "
            "so it took effect." % (client.node, what, exc.details.get("cause"), observed))


def unknown_outcome(client, what, exc, observed, check):
    """The node's failure when the re-read state does not prove the action happened."""
    return OutcomeUnknownError(
        "%s on node %s got no answer (%s) and was not sent again, because it may have run; "
        "the outcome is unknown: the BMC now reports %s. %s"
        % (what, client.node, exc.details.get("cause"), observed, check),
        node=client.node, action=what, cause=exc.details.get("cause"))
