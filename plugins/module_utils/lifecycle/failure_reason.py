# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The reason a node failed, in an operator's words, from what Ansible reported.

A node that stops answering in the middle of a task (power lost, crashed, network down)
reaches the ledger through Ansible's side of the story: "Module result deserialization
failed: No start of json char found" (the module's output was cut off) or an unreachable
host. Neither says what happened to the node. These functions name the node, the
lifecycle step it was in, the task, and the power state its BMC reported afterwards.
Every other failure keeps Ansible's message: the task's own error is the best reason.

Which error text the connection produced depends on the connection and on pipelining (with
pipelining a stopped lab container reads as a failed module, and a task that caught that
failure fails with its own message). So when the result does not say, the rescue asks the
node itself (record_failure.yml: a short ``wait_for_connection``): no answer means it
stopped answering, whatever the text.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["answer_unknown", "connection_lost", "bmc_power", "failure_reason", "lost_node_reason"]

# Ansible's message when a module's output is not JSON (here: nothing, the node went away).
_CUT_OFF = "Module result deserialization failed"
# The transport's own words for a node that is gone (a task's output never says these):
# docker exec into a stopped container (the lab's power loss), ssh that cannot connect.
_TRANSPORT_GONE = re.compile(r"Error response from daemon: (Container \S+ is not running|No such container)"
                             r"|Failed to connect to the host via ssh|Data could not be sent to remote host")
# A wait for the node to come back that timed out: the wait's own message is the better reason.
_WAIT_TIMED_OUT = "timed out waiting for"
# Words for the step a node was in (its ledger state when the task ran).
_STEPS = {
    "imaging": "imaging",
    "configuring": "configuration",
    "validating": "the acceptance gate",
    "ready": "registration with the scheduler",
    "hot": "registration with the scheduler",
    "waking": "wake-up",
}
_MESSAGE_LIMIT = 600
_ANSIBLE_SAID_LIMIT = 200


def _truncate(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _message(result):
    """Ansible's message of a failed task result (its msg, else its reason, else 'failed')."""
    if not isinstance(result, dict):
        return "failed"
    return str(result.get("msg") or result.get("reason") or "failed")


def _lost_item(result):
    """The first item of a looped task's result that failed because the node went away, or None.

    A loop's own message is only "One or more items failed"; which task of a role meets the
    dead node first (a looped copy or a single command) is a matter of timing.
    """
    items = result.get("results") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return None
    return next((item for item in items if isinstance(item, dict) and connection_lost(item)), None)


def _said_by_result(result):
    """True, False, or None when the result alone cannot tell whether the node went away."""
    if not isinstance(result, dict) or not result:
        return False
    if _lost_item(result) is not None:
        return True
    if result.get("unreachable"):
        return True
    message = _message(result)
    if message.startswith(_WAIT_TIMED_OUT):
        return False
    if message.startswith(_CUT_OFF) and not str(result.get("module_stdout") or "").strip():
        return True
    if _TRANSPORT_GONE.search(message):
        return True
    return None


def _delegated(result):
    """True when the task (or an item of it) ran on another host than the node (delegate_to)."""
    if result.get("_ansible_delegated_vars"):
        return True
    items = result.get("results")
    return isinstance(items, list) and any(isinstance(item, dict) and item.get("_ansible_delegated_vars")
                                           for item in items)


def answer_unknown(result):
    """True when a failed task ran on the node and its result does not tell whether the node went away.

    Then the node is asked (``probe`` of :func:`connection_lost`). Not for a task delegated to
    another host (the node may be legitimately off during imaging) nor a timed-out wait for the
    node (its own message is the better reason).
    """
    return isinstance(result, dict) and _said_by_result(result) is None and not _delegated(result)


def _did_not_answer(probe):
    """True when the registered probe of the node (wait_for_connection) ran and got no answer."""
    if not isinstance(probe, dict) or not probe or probe.get("skipped"):
        return False
    return bool(probe.get("unreachable") or probe.get("failed"))


def connection_lost(result, probe=None):
    """True when the task failed because the node stopped answering, not because of its work.

    Unreachable, a module whose output was empty when Ansible tried to read it (a module
    that printed something else than JSON is a broken module, not a lost node), or the
    connection's own error for a node that is gone; for a looped task, any item of it.
    A timed-out wait for the node is not. Otherwise, when the task ran on the node, the
    ``probe`` (a registered ``wait_for_connection`` after the failure) decides: no answer, lost.
    """
    said = _said_by_result(result)
    if said is not None:
        return said
    return not _delegated(result) and _did_not_answer(probe)


def bmc_power(info):
    """The power state from a registered ``redfish_info`` result: (state, error).

    (None, None) when the BMC was not read (no result, or the task was skipped).
    """
    if not isinstance(info, dict) or not info or info.get("skipped"):
        return None, None
    if info.get("failed"):
        return None, _truncate(_message(info), _ANSIBLE_SAID_LIMIT)
    system = (info.get("facts") or {}).get("system") or {}
    state = system.get("power_state") if isinstance(system, dict) else None
    if not state:
        return None, "it answered without a PowerState"
    return str(state), None


def _what_the_bmc_says(power):
    state, error = bmc_power(power)
    if error:
        return ("its BMC could not be read afterwards (%s); check the node's power and console, "
                "then re-run the playbook for it" % error)
    if state is None:
        return "its BMC was not read; check the node's power and console, then re-run the playbook for it"
    if state == "Off":
        return ("its BMC reports PowerState Off afterwards: the node lost power; check its power feed "
                "and the BMC event log, then re-run the playbook for it")
    return ("its BMC reports PowerState %s afterwards: the node crashed, rebooted or lost its network; "
            "check its console and network, then re-run the playbook for it" % state)


def _step(state):
    return _STEPS.get(state or "", "its %s step" % state if state else "provisioning")


def lost_node_reason(node, state, power=None, context=None):
    """Why a node that stopped answering failed: the node, its step, and what its BMC says.

    ``context`` says where, e.g. 'task "Run the acceptance gate"' or 'gang train-42'.
    """
    where = " (%s)" % context if context else ""
    return "%s stopped answering during %s%s: %s." % (node, _step(state), where, _what_the_bmc_says(power))


def failure_reason(result, task, node, state=None, power=None, probe=None):
    """The ledger reason of a failed task: the lost node in plain words, else the task's error.

    ``probe``: the registered reachability probe of the node after the failure (see connection_lost).
    """
    if not connection_lost(result, probe):
        return "%s: %s" % (task, _truncate(_message(result), _MESSAGE_LIMIT))
    said = _truncate(_message(_lost_item(result) or result), _ANSIBLE_SAID_LIMIT)
    return "%s Ansible reported: %s" % (lost_node_reason(node, state, power, 'task "%s"' % task), said)
