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
