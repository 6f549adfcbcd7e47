"""Each action is sent once, whatever the fault: power reset, media insert/eject, provision.

A scripted BMC answers each send of an action from a list of faults. ``ran`` counts the
sends the BMC carried out (what a real BMC would have done); ``sends`` counts what reached it.
"""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import (
    power, provision as pv, virtual_media as vm,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
    TransportError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcHTTPError, OutcomeUnknownError,
)

SYSTEM = "/redfish/v1/Systems/1"
RESET = SYSTEM + "/Actions/ComputerSystem.Reset"
CD = SYSTEM + "/VirtualMedia/Cd"
INSERT = CD + "/Actions/VirtualMedia.InsertMedia"
EJECT = CD + "/Actions/VirtualMedia.EjectMedia"
ISO = "http://images.example.net/gpufleet-2026.09.1.iso"

# fault -> (does the BMC carry the action out?, what the client gets)
FAULTS = {
    "ok": (True, None),
    "timeout": (True, "read_timeout"),        # done, answer lost
    "reset": (True, "reset"),                 # done, connection reset before the answer
    "reset_before": (False, "reset"),         # reset before the BMC took the request
    "refused": (False, "refused"),            # never connected: provably not sent
    "503": (False, 503),
    "429": (False, 429),
    "504": (True, 504),                       # a gateway gave up; the BMC did it
}


class Script:
    """Answers one action path from a list of faults; the last one repeats."""

    def __init__(self, rf, faults, effect):
        self.rf, self.faults, self.effect = rf, list(faults), effect
        self.sends = 0
        self.ran = 0

    def __call__(self, call):
        fault = self.faults[min(self.sends, len(self.faults) - 1)]
        self.sends += 1
        runs, answer = FAULTS[fault]
        if runs:
            self.ran += 1
            self.effect(call["body"])
        if answer is None:
            return self.rf.ok(None, 204)
        if isinstance(answer, int):
            headers = {"Retry-After": "2"} if answer == 429 else {}
            return self.rf.ok({"error": {"message": "busy"}}, answer, headers)
        raise TransportError("lost", sent=answer != "refused", kind=answer)


def bmc(rf, power_state="Off", inserted=None):
    transport = rf.FakeTransport(rf.load_tree("generic"))
    transport.tree[SYSTEM]["PowerState"] = power_state
    if inserted:
        transport.tree[CD].update(Image=inserted, Inserted=True)

    def patch(call):
        transport.tree[SYSTEM]["Boot"].update(call["body"]["Boot"])
        return rf.ok(None, 204)
    transport.on("PATCH", SYSTEM, patch)
    return transport


def script_reset(rf, transport, faults, lands=None):
    def effect(body):
        transport.tree[SYSTEM]["PowerState"] = lands or (
            "Off" if body["ResetType"] in ("ForceOff", "GracefulShutdown") else "On")
    script = Script(rf, faults, effect)
    transport.on("POST", RESET, script)
    return script


def script_media(rf, transport, path, faults):
    def effect(body):
        if path == INSERT:
            transport.tree[CD].update(Image=body["Image"], Inserted=True)
        else:
            transport.tree[CD].update(Image=None, Inserted=False)
    script = Script(rf, faults, effect)
    transport.on("POST", path, script)
    return script


SEQUENCES = ["timeout,503", "reset", "503,503,ok", "429,ok", "refused,ok", "504"]


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_power_on_runs_exactly_once(rf, clock, sequence):
    transport = bmc(rf, "Off")
    script = script_reset(rf, transport, sequence.split(","))
    result = power.set_power(rf.make_client(transport, clock), "1", "on", wait=False)
    assert script.ran == 1 and result["changed"] is True
    assert transport.tree[SYSTEM]["PowerState"] == "On"
    lost = sequence.split(",")[0] in ("timeout", "reset", "504")
    assert script.sends == (1 if lost else len(sequence.split(",")))
    assert bool(result["warnings"]) == lost  # how the outcome was learned is said


def test_force_restart_timeout_then_503_is_never_sent_twice(rf, clock):
    """The issue's case: the answer times out, the BMC then answers 503: one restart only."""
    transport = bmc(rf, "On")
    script = script_reset(rf, transport, ["timeout", "503"], lands="On")
    with pytest.raises(OutcomeUnknownError) as err:
        power.set_power(rf.make_client(transport, clock), "1", "force_restart")
    assert script.sends == 1 and script.ran == 1
    assert "outcome is unknown" in err.value.msg and "uptime" in err.value.msg
    assert err.value.details["cause"].startswith("no answer within the read timeout")


def test_restart_seen_in_progress_is_reported_done(rf, clock):
    transport = bmc(rf, "On")
    script = script_reset(rf, transport, ["reset"], lands="Off")  # power dropped, coming back
    reads = []

    def system(call):
        reads.append(1)
        if len(reads) > 3:
            transport.tree[SYSTEM]["PowerState"] = "On"
        return rf.ok(transport.tree[SYSTEM])
    transport.on("GET", SYSTEM, system)
    result = power.set_power(rf.make_client(transport, clock), "1", "force_restart")
    assert script.sends == 1 and result["state"] == "On" and result["warnings"]


def test_lost_reset_that_did_not_land_fails_with_the_state_read(rf, clock):
    transport = bmc(rf, "Off")
    script = script_reset(rf, transport, ["reset_before"])
    with pytest.raises(OutcomeUnknownError) as err:
        power.set_power(rf.make_client(transport, clock), "1", "on", timeout=10, poll=2)
    assert script.sends == 1 and script.ran == 0
    assert "PowerState Off, not On, after 10 s" in err.value.msg
    assert "BMC event log" in err.value.msg


def test_503_storm_sends_only_refused_copies_and_fails_busy(rf, clock):
    transport = bmc(rf, "Off")
    script = script_reset(rf, transport, ["503"])
    with pytest.raises(BmcHTTPError) as err:
        power.set_power(rf.make_client(transport, clock), "1", "on")
    assert script.ran == 0 and script.sends == 4  # every copy refused with 503
    assert "HTTP 503" in err.value.msg and "stayed busy" in err.value.msg


def test_429_waits_retry_after_then_runs_once(rf, clock):
    transport = bmc(rf, "Off")
    script = script_reset(rf, transport, ["429", "ok"])
    power.set_power(rf.make_client(transport, clock), "1", "on", wait=False)
    assert script.ran == 1 and clock.sleeps[0] == 2.0


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_insert_media_runs_exactly_once(rf, clock, sequence):
    transport = bmc(rf)
    script = script_media(rf, transport, INSERT, sequence.split(","))
    result = vm.insert_media(rf.make_client(transport, clock), "1", ISO)
    assert script.ran == 1 and result["image"] == ISO and result["inserted"] is True
    lost = sequence.split(",")[0] in ("timeout", "reset", "504")
    assert script.sends == (1 if lost else len(sequence.split(",")))


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_eject_media_runs_exactly_once(rf, clock, sequence):
    transport = bmc(rf, inserted=ISO)
    script = script_media(rf, transport, EJECT, sequence.split(","))
    result = vm.eject_media(rf.make_client(transport, clock), "1")
    assert script.ran == 1 and result["changed"] is True and transport.tree[CD]["Inserted"] is False


@pytest.mark.parametrize("path", [INSERT, EJECT])
def test_lost_media_action_that_did_not_land_is_unknown(rf, clock, path):
    transport = bmc(rf, inserted=ISO if path == EJECT else None)
    script = script_media(rf, transport, path, ["reset_before"])
    with pytest.raises(OutcomeUnknownError) as err:
        if path == INSERT:
            vm.insert_media(rf.make_client(transport, clock), "1", ISO)
        else:
            vm.eject_media(rf.make_client(transport, clock), "1")
    assert script.sends == 1 and "outcome is unknown" in err.value.msg
    assert "virtual media page" in err.value.msg


@pytest.mark.parametrize("sequence", ["timeout,503", "reset", "503,ok", "429,ok"])
def test_provision_sends_each_action_once(rf, clock, sequence):
    transport = bmc(rf, "Off")
    insert = script_media(rf, transport, INSERT, sequence.split(","))
    reset = script_reset(rf, transport, sequence.split(","))
    result = pv.provision(rf.make_client(transport, clock), "1", "cd", image_url=ISO,
                          power="on")
    assert insert.ran == 1 and reset.ran == 1 and result["changed"] is True
    assert transport.tree[SYSTEM]["PowerState"] == "On"


def test_provision_names_the_step_when_the_outcome_is_unknown(rf, clock):
    transport = bmc(rf, "Off")
    script_media(rf, transport, INSERT, ["ok"])
    script_reset(rf, transport, ["reset_before"])
    with pytest.raises(pv.ProvisionStepError) as err:
        pv.provision(rf.make_client(transport, clock), "1", "cd", image_url=ISO, power="on",
                     timeout=6)
    assert err.value.details["step"] == "power"
    assert err.value.details["changed_steps"] == ["media", "boot"]
    assert "outcome is unknown" in err.value.msg
