import json

from ansible_collections.gpufleet.baremetal.plugins.modules import redfish_boot
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, ok
from tests.unit.plugins.module_utils.redfish.module_harness import run

SYSTEM = "/redfish/v1/Systems/1"
BASE = dict(username="admin", password="pw", auth="basic")


def bmc():
    transport = FakeTransport(load_tree("generic"))

    def patch(call):
        transport.tree[SYSTEM]["Boot"].update(call["body"]["Boot"])
        return ok(None, 204)
    transport.on("PATCH", SYSTEM, patch)
    return transport


def test_sets_once_pxe_and_reports_applied(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_boot,
                         dict(BASE, baseuri="bmc-1", target="pxe", mode="uefi"), {"bmc-1": fake},
                         diff=True)
    assert not failed and result["changed"] is True
    assert result["applied"] == {"target": "Pxe", "enabled": "Once", "mode": "UEFI"}
    assert result["diff"]["after"]["bmc-1"]["target"] == "Pxe"
    result, failed = run(monkeypatch, capsys, redfish_boot,
                         dict(BASE, baseuri="bmc-1", target="pxe", mode="uefi"), {"bmc-1": fake})
    assert result["changed"] is False and len(fake.calls("PATCH")) == 1


def test_check_mode(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_boot, dict(BASE, baseuri="bmc-1", target="cd"),
                         {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] and not fake.calls("PATCH")


def test_read_back_difference_is_a_warning(monkeypatch, capsys):
    fake = FakeTransport(load_tree("generic"))
    fake.on("PATCH", SYSTEM, lambda call: (fake.tree[SYSTEM]["Boot"].update(
        BootSourceOverrideTarget="Pxe", BootSourceOverrideEnabled="Continuous"), ok(None, 204))[1])
    result, failed = run(monkeypatch, capsys, redfish_boot,
                         dict(BASE, baseuri="bmc-1", target="pxe"), {"bmc-1": fake})
    assert not failed and result["applied"]["enabled"] == "Continuous"
    assert "requested boot enabled Once" in json.dumps(result["_warned"]), sorted(result)
