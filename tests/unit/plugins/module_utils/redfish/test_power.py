import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import power
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    UnsupportedValueError, WaitTimeoutError,
)

SYSTEM = "/redfish/v1/Systems/1"
RESET = SYSTEM + "/Actions/ComputerSystem.Reset"
LANDS = {"On": "On", "ForceOn": "On", "ForceOff": "Off", "GracefulShutdown": "Off",
         "GracefulRestart": "On", "ForceRestart": "On", "PowerCycle": "On"}


def bmc(rf, state="Off", ignore=()):
    """A BMC whose reset lands at once, except reset types in ``ignore``."""
    transport = rf.FakeTransport(rf.load_tree("generic"))
    transport.tree[SYSTEM]["PowerState"] = state

    def reset(call):
        reset_type = call["body"]["ResetType"]
        if reset_type not in ignore:
            transport.tree[SYSTEM]["PowerState"] = LANDS[reset_type]
        return rf.ok(None, 204)

    transport.on("POST", RESET, reset)
    return transport


def resets(transport):
    return [c["body"]["ResetType"] for c in transport.calls("POST", RESET)]


@pytest.mark.parametrize("state, start, sent, end", [
    ("on", "Off", ["On"], "On"),
    ("off", "On", ["GracefulShutdown"], "Off"),
    ("force_off", "On", ["ForceOff"], "Off"),
    ("restart", "On", ["GracefulRestart"], "On"),
    ("restart", "Off", ["On"], "On"),
    ("force_restart", "On", ["ForceRestart"], "On"),
])
def test_state_sends_the_right_reset(rf, clock, state, start, sent, end):
    transport = bmc(rf, start)
    result = power.set_power(rf.make_client(transport, clock), None, state)
    assert resets(transport) == sent
    assert result == dict(changed=True, before=start, state=end, reset_type=sent[0], warnings=[])


@pytest.mark.parametrize("state, start", [("on", "On"), ("off", "Off"), ("force_off", "Off")])
def test_already_there_sends_nothing(rf, state, start):
    transport = bmc(rf, start)
    result = power.set_power(rf.make_client(transport), "1", state)
    assert result["changed"] is False and resets(transport) == []


def test_check_mode_predicts_and_sends_nothing(rf):
    transport = bmc(rf, "Off")
    result = power.set_power(rf.make_client(transport), "1", "on", check_mode=True)
    assert result["changed"] is True and result["state"] == "On" and resets(transport) == []


def test_power_cycle_not_allowed_fails_before_sending(rf):
    transport = bmc(rf, "On")
    with pytest.raises(UnsupportedValueError) as err:
        power.set_power(rf.make_client(transport), "1", "power_cycle")
    assert "PowerCycle" in err.value.msg and "node-1" in err.value.msg
    assert "Allowed: On, ForceOff" in err.value.msg
    assert resets(transport) == []


def test_allowed_values_from_action_info(rf):
    transport = bmc(rf, "On")
    action = transport.tree[SYSTEM]["Actions"]["#ComputerSystem.Reset"]
    del action["ResetType@Redfish.AllowableValues"]
    action["@Redfish.ActionInfo"] = SYSTEM + "/ResetActionInfo"
    transport.tree[SYSTEM + "/ResetActionInfo"] = {"Parameters": [
        {"Name": "ResetType", "AllowableValues": ["On", "ForceOff", "PowerCycle"]}]}
    result = power.set_power(rf.make_client(transport), "1", "power_cycle")
    assert result["reset_type"] == "PowerCycle"
    # and GracefulShutdown is not allowed there: off falls back to ForceOff
    transport2 = bmc(rf, "On")
    transport2.tree[SYSTEM]["Actions"]["#ComputerSystem.Reset"][
        "ResetType@Redfish.AllowableValues"] = ["On", "ForceOff"]
    assert power.set_power(rf.make_client(transport2), "1", "off")["reset_type"] == "ForceOff"


def test_graceful_off_falls_back_to_force_after_timeout(rf, clock):
    transport = bmc(rf, "On", ignore=("GracefulShutdown",))
    result = power.set_power(rf.make_client(transport, clock), "1", "off", timeout=300,
                             graceful_timeout=20, poll=5)
    assert resets(transport) == ["GracefulShutdown", "ForceOff"]
    assert result["state"] == "Off" and clock.now >= 20


def test_wait_timeout_names_node_and_state(rf, clock):
    transport = bmc(rf, "Off", ignore=("On",))
    with pytest.raises(WaitTimeoutError) as err:
        power.set_power(rf.make_client(transport, clock), "1", "on", timeout=30, poll=5)
    assert "still Off, not On, after 30 s" in err.value.msg and "node-1" in err.value.msg


def test_no_wait_returns_current_state(rf):
    transport = bmc(rf, "Off", ignore=("On",))
    result = power.set_power(rf.make_client(transport), "1", "on", wait=False)
    assert result["changed"] is True and result["state"] == "Off"
