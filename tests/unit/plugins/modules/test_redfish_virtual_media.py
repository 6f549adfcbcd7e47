from ansible_collections.gpufleet.baremetal.plugins.modules import redfish_virtual_media
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, ok
from tests.unit.plugins.module_utils.redfish.module_harness import run

CD = "/redfish/v1/Systems/1/VirtualMedia/Cd"
ISO = "http://images/x.iso"
BASE = dict(username="admin", password="pw", auth="basic")


def bmc():
    transport = FakeTransport(load_tree("generic"))
    dev = transport.tree[CD]
    transport.on("POST", CD + "/Actions/VirtualMedia.InsertMedia",
                 lambda call: (dev.update(Image=call["body"]["Image"], Inserted=True), ok(None, 204))[1])
    transport.on("POST", CD + "/Actions/VirtualMedia.EjectMedia",
                 lambda call: (dev.update(Image=None, Inserted=False), ok(None, 204))[1])
    return transport


def test_insert_then_eject(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_virtual_media,
                         dict(BASE, baseuri="bmc-1", image_url=ISO), {"bmc-1": fake}, diff=True)
    assert not failed and result["changed"] and result["device"] == CD and result["inserted"]
    assert result["diff"] == {"before": {"bmc-1": {"image": None}}, "after": {"bmc-1": {"image": ISO}}}
    result, failed = run(monkeypatch, capsys, redfish_virtual_media,
                         dict(BASE, baseuri="bmc-1", state="absent"), {"bmc-1": fake})
    assert not failed and result["changed"] and result["ejected"] == [CD]


def test_present_needs_image_url(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_virtual_media, dict(BASE, baseuri="bmc-1"))
    assert failed and "image_url" in result["msg"]


def test_check_mode(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_virtual_media,
                         dict(BASE, baseuri="bmc-1", image_url=ISO), {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] and not fake.calls("POST")


def test_a_bad_image_url_fails_the_task_before_any_bmc_is_contacted(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_virtual_media,
                         dict(BASE, baseuri="bmc-1", image_url="http:///x.iso"), {"bmc-1": fake})
    assert failed and result["msg"].startswith("image_url 'http:///x.iso' names no host")
    assert fake.sent == [] and "nodes" not in result


def test_eject_does_not_judge_the_image_url(monkeypatch, capsys):
    """absent only compares it with what the BMC reports: any text is a fine filter."""
    result, failed = run(monkeypatch, capsys, redfish_virtual_media,
                         dict(BASE, baseuri="bmc-1", state="absent", image_url="nfs://x/y.iso"),
                         {"bmc-1": bmc()})
    assert not failed and result["changed"] is False
