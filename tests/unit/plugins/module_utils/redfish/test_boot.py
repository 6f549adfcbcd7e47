import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    UnsupportedValueError,
)

SYSTEM = "/redfish/v1/Systems/1"


def bmc(rf, vendor="generic", keep_enabled=None):
    """A BMC applying Boot PATCHes; ``keep_enabled`` mimics one that ignores the frequency."""
    transport = rf.FakeTransport(rf.load_tree(vendor))

    def patch(call):
        applied = dict(call["body"]["Boot"])
        if keep_enabled:
            applied["BootSourceOverrideEnabled"] = keep_enabled
        transport.tree[SYSTEM]["Boot"].update(applied)
        return rf.ok(None, 204)

    transport.on("PATCH", SYSTEM, patch)
    return transport


@pytest.mark.parametrize("target, enabled, mode, body", [
    ("pxe", "once", None, {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}),
    ("cd", "continuous", "uefi", {"BootSourceOverrideTarget": "Cd",
                                  "BootSourceOverrideEnabled": "Continuous",
                                  "BootSourceOverrideMode": "UEFI"}),
    ("uefi_http", "once", None, {"BootSourceOverrideTarget": "UefiHttp",
                                 "BootSourceOverrideEnabled": "Once"}),
])
def test_sets_and_reads_back(rf, target, enabled, mode, body):
    transport = bmc(rf)
    result = boot.set_boot(rf.make_client(transport), "1", target, enabled, mode)
    assert transport.calls("PATCH", SYSTEM)[0]["body"] == {"Boot": body}
    assert result["changed"] is True and result["warnings"] == []
    assert result["applied"]["target"] == body["BootSourceOverrideTarget"]
    assert result["before"] == {"target": "Hdd", "enabled": "Disabled", "mode": "UEFI"}


def test_idempotent(rf):
    transport = bmc(rf)
    boot.set_boot(rf.make_client(transport), "1", "pxe", "once")
    result = boot.set_boot(rf.make_client(transport), "1", "pxe", "once")
    assert result["changed"] is False and len(transport.calls("PATCH")) == 1


def test_check_mode_sends_nothing(rf):
    transport = bmc(rf)
    result = boot.set_boot(rf.make_client(transport), "1", "pxe", "once", check_mode=True)
    assert result["changed"] is True and result["applied"]["target"] == "Pxe"
    assert transport.calls("PATCH") == []


def test_target_not_allowed_lists_allowed(rf):
    transport = bmc(rf, "nvidia")
    with pytest.raises(UnsupportedValueError) as err:
        boot.set_boot(rf.make_client(transport), "1", "uefi_http", "once")
    assert err.value.msg.startswith("Boot target 'UefiHttp' is not allowed by the BMC of node node-1")
    assert "Allowed: Pxe, Cd, Hdd" in err.value.msg and transport.calls("PATCH") == []


def test_supermicro_cd_becomes_usbcd(rf):
    transport = bmc(rf, "supermicro")
    result = boot.set_boot(rf.make_client(transport), "1", "cd", "once")
    assert transport.calls("PATCH")[0]["body"]["Boot"]["BootSourceOverrideTarget"] == "UsbCd"
    assert result["applied"]["target"] == "UsbCd"


def test_what_the_bmc_applied_is_reported_with_a_warning(rf):
    transport = bmc(rf, keep_enabled="Continuous")
    result = boot.set_boot(rf.make_client(transport), "1", "pxe", "once")
    assert result["applied"]["enabled"] == "Continuous"
    assert result["warnings"] == [
        "Node node-1: requested boot enabled Once but the BMC reports Continuous."]


def test_sushy_once_read_back_as_continuous_check_and_real_run_agree(rf):
    """sushy-tools reads a one-time override back as Continuous (fixtures/sushy, captured)."""
    transport = bmc(rf, "sushy", keep_enabled="Continuous")
    first = boot.set_boot(rf.make_client(transport), "1", "cd", "once")
    assert first["changed"] is True and first["warnings"] == []
    predicted = boot.set_boot(rf.make_client(transport), "1", "cd", "once", check_mode=True)
    second = boot.set_boot(rf.make_client(transport), "1", "cd", "once")
    assert predicted["changed"] is False and second["changed"] is False
    assert len(transport.calls("PATCH")) == 1  # the second run sent nothing


def test_sushy_quirk_still_changes_a_different_target(rf):
    transport = bmc(rf, "sushy", keep_enabled="Continuous")
    boot.set_boot(rf.make_client(transport), "1", "cd", "once")
    predicted = boot.set_boot(rf.make_client(transport), "1", "pxe", "once", check_mode=True)
    result = boot.set_boot(rf.make_client(transport), "1", "pxe", "once")
    assert predicted["changed"] is True and result["changed"] is True
    assert len(transport.calls("PATCH")) == 2


def test_without_the_quirk_continuous_is_not_once(rf):
    transport = bmc(rf, keep_enabled="Continuous")  # generic vendor: no quirk
    boot.set_boot(rf.make_client(transport), "1", "cd", "once")
    predicted = boot.set_boot(rf.make_client(transport), "1", "cd", "once", check_mode=True)
    assert predicted["changed"] is True


def _lost_patch(rf, transport, applies):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
        TransportError,
    )

    def patch(call):
        if applies:
            transport.tree[SYSTEM]["Boot"].update(call["body"]["Boot"])
        raise TransportError("no answer within the read timeout", kind="read_timeout")
    transport.on("PATCH", SYSTEM, patch)


@pytest.mark.parametrize("applies", [True, False])
def test_lost_patch_answer_is_judged_by_reading_back(rf, clock, applies):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
        OutcomeUnknownError,
    )
    transport = bmc(rf)
    _lost_patch(rf, transport, applies)
    client = rf.make_client(transport, clock)
    if applies:
        result = boot.set_boot(client, "1", "pxe", "once")
        assert result["changed"] is True and "took effect" in result["warnings"][0]
    else:
        with pytest.raises(OutcomeUnknownError) as err:
            boot.set_boot(client, "1", "pxe", "once")
        assert "outcome is unknown" in err.value.msg and "target Hdd" in err.value.msg
    # Not applied: the re-read shows the fields as before, so one more copy is safe (it is
    # lost too here); applied: the re-read shows it in place, nothing is sent again.
    assert len(transport.calls("PATCH", SYSTEM)) == (1 if applies else 2)


def test_a_line_break_in_the_bmc_allowed_values_keeps_the_error_on_one_line(rf):
    transport = bmc(rf)
    transport.tree[SYSTEM]["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"] = [
        "Hdd\nCd", "Usb\x85"]
    with pytest.raises(UnsupportedValueError) as err:
        boot.set_boot(rf.make_client(transport), "1", "pxe", "once")
    assert "\n" not in err.value.msg and "\x85" not in err.value.msg
    assert "Allowed: Hdd Cd, Usb" in err.value.msg
