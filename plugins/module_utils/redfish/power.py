# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Power a system on/off/restart/cycle through ComputerSystem.Reset and wait for the result.

The reset types the BMC allows are read first (``ResetType@Redfish.AllowableValues`` or the
action's ``@Redfish.ActionInfo``); a requested type the BMC does not allow fails with the
allowed list before anything is sent. A reset whose answer is lost is never sent again
(actions.py): the power state is read until it shows the goal, and a restart that cannot
be told from "nothing happened" (the node reads On throughout) fails as unknown.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.actions import (
    send_once, settled_note, unknown_outcome,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    RedfishError, UnsupportedValueError, WaitTimeoutError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import (
    POWER_STATES, Fields,
)

__all__ = ["STATES", "allowed_reset_types", "power_state", "set_power", "state_of", "wait_power"]

RESET_ACTION = "#ComputerSystem.Reset"
# state -> (reset types in order of preference, power state to wait for, no-op when already)
STATES = {
    "on": (("On", "ForceOn"), "On", "On"),
    "off": (("GracefulShutdown", "ForceOff"), "Off", "Off"),
    "force_off": (("ForceOff",), "Off", "Off"),
    "restart": (("GracefulRestart", "ForceRestart"), "On", None),
    "force_restart": (("ForceRestart",), "On", None),
    "power_cycle": (("PowerCycle",), "On", None),
}


def allowed_reset_types(client, system):
    """The reset types the BMC allows, or None when it does not say."""
    action = Fields(system, client.node).sub("Actions").sub(RESET_ACTION)
    values = action.texts("ResetType@Redfish.AllowableValues")
    info_path = action.text("@Redfish.ActionInfo")
    if values is None and info_path:
        info = Fields(discovery.optional(client, info_path) or {}, client.node, info_path)
        for param in info.objects("Parameters"):
            if param.text("Name") == "ResetType":
                values = param.texts("AllowableValues")
    return values


def state_of(client, system, path=None):
    """The PowerState of a system resource; a missing or unknown value is a named error."""
    return Fields(system, client.node, path).text("PowerState", required=True, choices=POWER_STATES)


def power_state(client, system_path):
    return state_of(client, client.get(system_path, cached=False), system_path)


def _choose(client, system_path, state, allowed):
    wanted = STATES[state][0]
    if allowed is None:
        return wanted[0]
    for reset_type in wanted:
        if reset_type in allowed:
            return reset_type
    raise UnsupportedValueError(
        "Power state %r needs reset type %s, which the BMC of node %s (%s) does not allow. "
        "Allowed: %s. Choose a state these support." % (
            state, " or ".join(wanted), client.node, system_path, ", ".join(allowed) or "none"),
        node=client.node, allowed=list(allowed))


def set_power(client, system_id, state, check_mode=False, wait=True, timeout=300,
              graceful_timeout=60, poll=2.0, read_back=True):
    """Bring the system to ``state``; return ``{changed, before, state, reset_type, warnings}``.

    With ``wait`` and ``read_back`` both false the state is not read after the reset
    (``state`` is None): the BMC usually still shows the old one for seconds.
    """
    path = discovery.find_system(client, system_id)
    system = client.get(path)  # read moments ago by discovery, in this run
    before = state_of(client, system, path)
    allowed = allowed_reset_types(client, system)
    reset_type = _choose(client, path, state, allowed)
    noop_when = STATES[state][2]
    if noop_when is not None and before == noop_when:
        return dict(changed=False, before=before, state=before, reset_type=None, warnings=[])
    if state in ("restart",) and before == "Off":
        reset_type = _choose(client, path, "on", allowed)  # restart of an off node powers on
    if check_mode:
        return dict(changed=True, before=before, state=STATES[state][1], reset_type=reset_type,
                    warnings=[])
    warnings = []
    after = _reset(client, path, system, reset_type, state, wait, timeout, graceful_timeout,
                   poll, allowed, read_back, warnings)
    return dict(changed=True, before=before, state=after, reset_type=reset_type,
                warnings=warnings)


def _reset(client, path, system, reset_type, state, wait, timeout, graceful_timeout, poll,
           allowed, read_back, warnings):
    target = (Fields(system, client.node).sub("Actions").sub(RESET_ACTION).text("target")
              or path + "/Actions/ComputerSystem.Reset")
    lost = send_once(client, target, {"ResetType": reset_type}, "reset " + reset_type)
    if lost:
        return _settle(client, path, (system.get("PowerState"), STATES[state][1]), reset_type,
                       lost, timeout, poll, warnings)
    if not wait:
        return power_state(client, path) if read_back else None
    goal = STATES[state][1]
    if reset_type == "GracefulShutdown" and (allowed is None or "ForceOff" in allowed):
        try:
            return wait_power(client, path, goal, min(graceful_timeout, timeout), poll)
        except WaitTimeoutError:
            # The OS ignored ACPI shutdown within graceful_timeout: force it off.
            timeout = max(timeout - graceful_timeout, poll)
            lost = send_once(client, target, {"ResetType": "ForceOff"}, "reset ForceOff")
            if lost:
                return _settle(client, path, ("On", "Off"), "ForceOff", lost, timeout, poll,
                               warnings)
    return wait_power(client, path, goal, timeout, poll)


def _settle(client, path, change, reset_type, lost, timeout, poll, warnings):
    """The reset's answer was lost: judge it by the power state, never by sending it again.

    ``change`` is (power state before the reset, power state it leads to).
    """
    what = "Reset %s (%s)" % (reset_type, path)
    before, goal = change
    check = ("Check the node's power and the BMC event log, then re-run the task if the reset "
             "did not happen.")
    try:
        current = power_state(client, path)
        # A restart leaves an On node On: reading On proves nothing either way.
        unseen = before == goal == current
        if not unseen:
            current = wait_power(client, path, goal, timeout, poll)
    except WaitTimeoutError as exc:
        raise unknown_outcome(client, what, lost, "PowerState %s, not %s, after %s s"
                              % (exc.details.get("power_state"), goal, timeout), check)
    except RedfishError as exc:
        raise unknown_outcome(client, what, lost, "nothing readable (%s)" % exc.msg, check)
    if unseen:
        raise unknown_outcome(client, what, lost, "PowerState %s, as before a restart" % current,
                              "Check the node's uptime or the BMC event log; re-run the task "
                              "only if it did not restart.")
    warnings.append(settled_note(client, "reset " + reset_type, lost, "PowerState " + current))
    return current


def wait_power(client, system_path, goal, timeout, poll=2.0):
    """Poll PowerState until it equals ``goal``; WaitTimeoutError after ``timeout`` s."""
    deadline = client.clock() + timeout
    while True:
        current = power_state(client, system_path)
        if current == goal:
            return current
        if client.clock() >= deadline:
            raise WaitTimeoutError(
                "Node %s (%s) is still %s, not %s, after %s s. Raise timeout, or check the "
                "node's BMC event log." % (client.node, system_path, current, goal, timeout),
                node=client.node, power_state=current)
        client.sleep(poll)
