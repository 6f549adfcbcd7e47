import json

from ansible_collections.gpufleet.baremetal.plugins.modules import redfish_provision
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, ok
from tests.unit.plugins.module_utils.redfish.module_harness import run

SYSTEM = "/redfish/v1/Systems/1"
CD = SYSTEM + "/VirtualMedia/Cd"
ISO = "http://images.example.net/gpufleet-2026.09.1.iso"
BASE = dict(username="admin", password="s3cret-pw", auth="basic", poll_interval=0.0)


def bmc():
    transport = FakeTransport(load_tree("generic"))
    system = transport.tree[SYSTEM]

    def insert(call):
        transport.tree[CD].update(Image=call["body"]["Image"], Inserted=True)
        return ok(None, 204)

    def patch(call):
        system["Boot"].update(call["body"]["Boot"])
        return ok(None, 204)

    def reset(call):
        system["PowerState"] = "On"
        return ok(None, 204)
    transport.on("POST", CD + "/Actions/VirtualMedia.InsertMedia", insert)
    transport.on("PATCH", SYSTEM, patch)
    transport.on("POST", SYSTEM + "/Actions/ComputerSystem.Reset", reset)
    return transport


def test_single_node_result_and_diff(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_provision,
                         dict(BASE, baseuri="bmc-1", image_url=ISO, boot_target="cd"),
                         {"bmc-1": bmc()}, diff=True)
    assert not failed and result["changed"] is True
    assert result["media"]["image"] == ISO and result["power"]["reset_type"] == "On"
    assert result["diff"]["before"]["bmc-1"] == dict(
        image=None, boot={"target": "Hdd", "enabled": "Disabled", "mode": "UEFI"}, power="Off")
    assert result["diff"]["after"]["bmc-1"]["boot"]["target"] == "Cd"
    assert "s3cret-pw" not in json.dumps(result)


def test_fleet_one_bad_node_fails_only_itself_within_policy(monkeypatch, capsys):
    fakes = {"bmc-%d" % i: bmc() for i in range(4)}
    fakes["bmc-2"].on("PATCH", SYSTEM, ok({"error": {"message": "locked"}}, 409))
    nodes = [dict(name="n%d" % i, baseuri="bmc-%d" % i, system_id="1") for i in range(4)]
    result, failed = run(monkeypatch, capsys, redfish_provision,
                         dict(BASE, nodes=nodes, image_url=ISO, boot_target="cd",
                              max_failed_percent=30), fakes)
    assert not failed and result["failed_nodes"] == ["n2"]
    bad = result["nodes"][2]
    assert "step boot; already changed on the node: media" in bad["error"]
    assert [n["changed"] for n in result["nodes"]] == [True, True, False, True]
    assert result["summary"] == {"total": 4, "changed": 3, "failed": 1}


def test_running_node_warning_reaches_the_user(monkeypatch, capsys):
    fake = bmc()
    fake.tree[SYSTEM]["PowerState"] = "On"
    result, failed = run(monkeypatch, capsys, redfish_provision,
                         dict(BASE, baseuri="bmc-1", boot_target="pxe"), {"bmc-1": fake})
    assert not failed and any("already On" in w for w in result["_warned"])


def test_check_mode_sends_only_reads(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_provision,
                         dict(BASE, baseuri="bmc-1", image_url=ISO, boot_target="cd"),
                         {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] is True
    assert set(c["method"] for c in fake.sent) == {"GET"}


def test_a_bad_image_url_fails_the_task_before_any_bmc_is_contacted(monkeypatch, capsys):
    fakes = {"bmc-1": bmc(), "bmc-2": bmc()}
    nodes = [dict(baseuri="bmc-1"), dict(baseuri="bmc-2")]
    result, failed = run(monkeypatch, capsys, redfish_provision,
                         dict(BASE, nodes=nodes, image_url="file:///srv/x.iso", boot_target="cd"),
                         fakes)
    assert failed and result["msg"].startswith("image_url 'file:///srv/x.iso' is not an http://")
    assert "fix: " in result["msg"] and all(f.sent == [] for f in fakes.values())
