import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import provision as pv

SYSTEM = "/redfish/v1/Systems/1"
CD = SYSTEM + "/VirtualMedia/Cd"
INSERT = CD + "/Actions/VirtualMedia.InsertMedia"
RESET = SYSTEM + "/Actions/ComputerSystem.Reset"
ISO = "http://images.example.net/gpufleet-2026.09.1.iso"
LANDS = {"On": "On", "ForceRestart": "On", "GracefulRestart": "On", "ForceOff": "Off"}


def bmc(rf, power="Off"):
    """A BMC that applies media inserts, Boot PATCHes and resets to its tree."""
    transport = rf.FakeTransport(rf.load_tree("generic"))
    system = transport.tree[SYSTEM]
    system["PowerState"] = power

    def insert(call):
        transport.tree[CD].update(Image=call["body"]["Image"], Inserted=True)
        return rf.ok(None, 204)

    def patch(call):
        system["Boot"].update(call["body"]["Boot"])
        return rf.ok(None, 204)

    def reset(call):
        system["PowerState"] = LANDS[call["body"]["ResetType"]]
        return rf.ok(None, 204)

    transport.on("POST", INSERT, insert).on("PATCH", SYSTEM, patch).on("POST", RESET, reset)
    return transport


def sent(transport):
    return [(c["method"], c["path"]) for c in transport.sent]


def test_one_session_covers_all_three_steps(rf):
    transport = bmc(rf)
    result = pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO)
    # Root and system are read once for the three steps; each step reads back what it changed.
    assert sent(transport) == [
        ("GET", "/redfish/v1/"), ("GET", SYSTEM),
        ("GET", SYSTEM + "/VirtualMedia"), ("GET", CD), ("GET", SYSTEM + "/VirtualMedia/Floppy"),
        ("POST", INSERT), ("GET", CD),
        ("PATCH", SYSTEM), ("GET", SYSTEM),
        ("POST", RESET),
    ]
    assert result["changed"] is True and result["warnings"] == []
    assert result["media"]["image"] == ISO and result["media"]["inserted"] is True
    assert result["boot"]["applied"] == {"target": "Cd", "enabled": "Once", "mode": "UEFI"}
    assert result["power"] == dict(changed=True, before="Off", state=None, reset_type="On")


def test_second_run_sends_no_change(rf):
    transport = bmc(rf)
    pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO)
    transport.tree[SYSTEM]["PowerState"] = "On"
    transport.sent.clear()
    result = pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO)
    assert result["changed"] is False
    assert [m for m, dummy in sent(transport) if m != "GET"] == []
    assert result["warnings"] == []  # nothing staged, so nothing waits for a reboot


def test_check_mode_only_reads(rf):
    transport = bmc(rf)
    result = pv.provision(rf.make_client(transport), "1", "pxe", image_url=ISO, check_mode=True)
    assert result["changed"] is True
    assert set(m for m, dummy in sent(transport)) == {"GET"}
    assert result["power"]["state"] == "On" and result["boot"]["applied"]["target"] == "Pxe"


def test_running_node_with_power_on_warns_that_settings_wait(rf):
    transport = bmc(rf, power="On")
    result = pv.provision(rf.make_client(transport), "1", "pxe")
    assert not transport.calls("POST", RESET)
    assert len(result["warnings"]) == 1 and "already On" in result["warnings"][0]
    assert "force_restart" in result["warnings"][0]


def test_force_restart_reboots_a_running_node(rf):
    transport = bmc(rf, power="On")
    result = pv.provision(rf.make_client(transport), "1", "pxe", power="force_restart", wait=True,
                          poll=0)
    assert [c["body"]["ResetType"] for c in transport.calls("POST", RESET)] == ["ForceRestart"]
    assert result["power"]["state"] == "On" and result["warnings"] == []


def test_without_image_and_power_none_only_the_boot_step_runs(rf):
    transport = bmc(rf)
    result = pv.provision(rf.make_client(transport), "1", "uefi_http", power="none")
    assert result["media"] is None and result["power"] is None
    assert not any("VirtualMedia" in p for dummy, p in sent(transport))
    assert not transport.calls("POST", RESET) and result["boot"]["changed"] is True


def test_failed_step_names_itself_and_what_had_changed(rf):
    transport = bmc(rf)
    transport.on("PATCH", SYSTEM, rf.ok({"error": {"message": "Boot is read-only"}}, 400))
    with pytest.raises(pv.ProvisionStepError) as exc:
        pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO)
    assert "step boot; already changed on the node: media" in exc.value.msg
    assert "Boot is read-only" in exc.value.msg
    assert exc.value.details["step"] == "boot" and exc.value.details["changed_steps"] == ["media"]
    assert not transport.calls("POST", RESET)  # a failed step stops the later ones


def test_failed_first_step_says_nothing_changed(rf):
    transport = bmc(rf)
    transport.on("POST", INSERT, rf.ok({"error": {"message": "image unreachable"}}, 400))
    with pytest.raises(pv.ProvisionStepError) as exc:
        pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO)
    assert "step media; nothing had been changed on the node" in exc.value.msg
    assert not transport.calls("PATCH")


@pytest.mark.parametrize("url", ["file:///srv/x.iso", "", "http:///x.iso"])
def test_a_bad_image_url_is_refused_before_anything_is_sent(rf, url):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
        ParameterError,
    )
    transport = bmc(rf)
    with pytest.raises(ParameterError) as err:
        pv.provision(rf.make_client(transport), "1", "cd", image_url=url)
    assert transport.sent == [] and "image_url" in err.value.msg and "fix: " in err.value.msg


EJECT = CD + "/Actions/VirtualMedia.EjectMedia"


def with_eject(rf, transport):
    def eject(call):
        transport.tree[CD].update(Image=None, Inserted=False)
        return rf.ok(None, 204)

    return transport.on("POST", EJECT, eject)


@pytest.mark.parametrize("inserted,ejects", [(None, 0), (ISO, 1), ("http://old.example.net/x.iso", 1)])
def test_media_reinsert_ejects_what_is_in_then_inserts_in_the_same_session(rf, inserted, ejects):
    transport = with_eject(rf, bmc(rf))
    if inserted:
        transport.tree[CD].update(Image=inserted, Inserted=True)
    result = pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO, media_reinsert=True)
    posts = [path for method, path in sent(transport) if method == "POST"]
    # the eject (when something was in) comes before the insert, the only insert; one login
    assert posts == [EJECT] * ejects + [INSERT, RESET]
    assert len(transport.calls("GET", "/redfish/v1/")) == 1
    assert result["media"]["changed"] is True and result["media"]["image"] == ISO
    assert result["media"]["before"] == inserted and result["media"]["ejected"] == [CD] * ejects


def test_media_reinsert_in_check_mode_only_reads(rf):
    transport = with_eject(rf, bmc(rf))
    transport.tree[CD].update(Image=ISO, Inserted=True)
    result = pv.provision(rf.make_client(transport), "1", "cd", image_url=ISO, media_reinsert=True,
                          check_mode=True)
    assert set(m for m, dummy in sent(transport)) == {"GET"}
    assert result["media"]["changed"] is True and result["media"]["ejected"] == [CD]
