# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Task monitors: an action answered 202 Accepted is followed until it ends.

Redfish (DSP0266 "Asynchronous operations"): the 202 carries a ``Location`` task monitor;
GET on it answers 202 while running and the final answer (or a Task with TaskState)
when done. A task ending in Exception/Killed/Cancelled is a failure, never a pass.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError, TaskFailedError, WaitTimeoutError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["wait_task", "FAILED_STATES"]

FAILED_STATES = frozenset(["Exception", "Killed", "Cancelled", "Interrupted"])


def wait_task(client, rsp, what, timeout=300, poll=2.0):
    """Return the final response of ``rsp`` (itself when it is not 202)."""
    if rsp.status != 202:
        return rsp
    monitor = rsp.headers.get("location")
    if not monitor:
        monitor = Fields(rsp.json(client.node, what), client.node, what).text("@odata.id")
    if not monitor:
        raise BmcResponseError(
            "BMC of node %s accepted %s (HTTP 202) but gave no task monitor to follow; "
            "the outcome is unknown. Check the node's state on the BMC." % (client.node, what),
            node=client.node)
    deadline = client.clock() + timeout
    while True:
        rsp = client.request("GET", monitor)
        if rsp.status != 202 and _finished(client, rsp, what, monitor):
            return rsp
        if client.clock() >= deadline:
            raise WaitTimeoutError(
                "Task %s for %s on node %s did not finish within %s s; raise task_timeout or "
                "check the BMC's task list." % (monitor, what, client.node, timeout),
                node=client.node, task=monitor)
        client.sleep(_retry_after(rsp, poll))


def _finished(client, rsp, what, monitor):
    task = rsp.json(client.node, monitor)
    state = Fields(task, client.node, monitor).text("TaskState")
    if state in FAILED_STATES:
        messages = "; ".join(_messages(task.get("Messages"))) or state
        raise TaskFailedError(
            "Task for %s on node %s ended %s: %s." % (what, client.node, state, messages),
            node=client.node, task_state=state)
    return state in (None, "Completed")


def _messages(messages):
    """The texts of a task's Messages, whatever their shape (a failed task is failed anyway)."""
    items = messages if isinstance(messages, list) else [messages]
    texts = [m.get("Message") if isinstance(m, dict) else m for m in items]
    return [" ".join(t.split()) for t in texts if isinstance(t, (str, type(u""))) and t.strip()]


def _retry_after(rsp, default):
    try:
        return float(rsp.headers.get("retry-after", default))
    except ValueError:
        return default
