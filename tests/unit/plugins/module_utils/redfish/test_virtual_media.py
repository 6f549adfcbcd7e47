import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import virtual_media as vm
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    DiscoveryError, ParameterError, UnsupportedValueError,
)

ISO = "http://images.example.net/gpufleet-2026.06.2.iso"
IMG = "http://images.example.net/tools.img"


def bmc(rf, vendor="generic"):
    """A BMC whose InsertMedia/EjectMedia actions and PATCHes update the device."""
    transport = rf.FakeTransport(rf.load_tree(vendor))
    for path, res in list(transport.tree.items()):
        if "MediaTypes" not in res:
            continue
        actions = res.get("Actions", {})
        if actions:
            transport.on("POST", actions["#VirtualMedia.InsertMedia"]["target"], _insert(rf, res))
            transport.on("POST", actions["#VirtualMedia.EjectMedia"]["target"], _eject(rf, res))
        else:
            transport.on("PATCH", path, _patch(rf, res))
    return transport


def _insert(rf, res):
    def handler(call):
        res.update(Image=call["body"]["Image"], Inserted=True)
        return rf.ok(None, 204)
    return handler


def _eject(rf, res):
    def handler(call):
        res.update(Image=None, Inserted=False)
        return rf.ok(None, 204)
    return handler


def _patch(rf, res):
    def handler(call):
        res.update(call["body"])
        return rf.ok(None, 204)
    return handler


@pytest.mark.parametrize("url, media_type, device", [
    (ISO, None, "Cd"), (IMG, None, "Floppy"), (ISO, "usb", "Floppy")])
def test_insert_chooses_a_device_by_media_type(rf, url, media_type, device):
    transport = bmc(rf)
    result = vm.insert_media(rf.make_client(transport), "1", url, media_type)
    assert result == dict(changed=True, device="/redfish/v1/Systems/1/VirtualMedia/" + device,
                          before=None, image=url, inserted=True, warnings=[])
    body = transport.calls("POST")[0]["body"]
    assert body == {"Image": url, "Inserted": True, "WriteProtected": True}


def test_insert_is_idempotent(rf):
    transport = bmc(rf)
    vm.insert_media(rf.make_client(transport), "1", ISO)
    result = vm.insert_media(rf.make_client(transport), "1", ISO)
    assert result["changed"] is False and len(transport.calls("POST")) == 1


def test_other_image_is_ejected_first(rf):
    transport = bmc(rf, "nvidia")
    vm.insert_media(rf.make_client(transport), "1", ISO)
    other = "http://images.example.net/other.iso"
    result = vm.insert_media(rf.make_client(transport), "1", other)
    assert result["before"] == ISO and result["image"] == other
    assert [c["path"].rsplit(".", 1)[-1] for c in transport.calls("POST")] == [
        "InsertMedia", "EjectMedia", "InsertMedia"]


def test_check_mode_sends_nothing(rf):
    transport = bmc(rf)
    assert vm.insert_media(rf.make_client(transport), "1", ISO, check_mode=True)["changed"]
    assert transport.calls("POST") == []


def test_under_managers_without_action_uses_patch(rf):
    transport = bmc(rf, "lenovo")
    result = vm.insert_media(rf.make_client(transport), "1", ISO)
    assert result["device"] == "/redfish/v1/Managers/bmc/VirtualMedia/EXT1"
    patch = transport.calls("PATCH")[0]
    assert patch["body"] == {"Image": ISO, "Inserted": True, "WriteProtected": True}
    ejected = vm.eject_media(rf.make_client(transport), "1")
    assert ejected["changed"] and transport.calls("PATCH")[1]["body"] == {
        "Image": None, "Inserted": False}


def test_supermicro_omits_default_flags(rf):
    transport = bmc(rf, "supermicro")
    vm.insert_media(rf.make_client(transport), "1", ISO)
    assert transport.calls("POST")[0]["body"] == {"Image": ISO}


def test_nvidia_sends_placeholder_credentials(rf):
    transport = bmc(rf, "nvidia")
    vm.insert_media(rf.make_client(transport), "1", ISO)
    body = transport.calls("POST")[0]["body"]
    assert body["UserName"] == "none" and body["Password"] == "none"


def test_no_device_for_the_media_type(rf):
    transport = bmc(rf, "nvidia")
    with pytest.raises(UnsupportedValueError) as err:
        vm.insert_media(rf.make_client(transport), "1", IMG)
    assert "accepts media type usb" in err.value.msg and "Devices accept: CD" in err.value.msg


def test_no_virtual_media_at_all(rf, generic):
    del generic.tree["/redfish/v1/Systems/1"]["VirtualMedia"]
    with pytest.raises(DiscoveryError, match="has no VirtualMedia"):
        vm.insert_media(rf.make_client(generic), "1", ISO)


def test_eject_only_the_named_image_and_always_with_a_body(rf):
    transport = bmc(rf)
    vm.insert_media(rf.make_client(transport), "1", ISO)
    vm.insert_media(rf.make_client(transport), "1", IMG)
    result = vm.eject_media(rf.make_client(transport), "1", IMG)
    assert result["ejected"] == ["/redfish/v1/Systems/1/VirtualMedia/Floppy"]
    eject = [c for c in transport.calls("POST") if c["path"].endswith("EjectMedia")]
    assert len(eject) == 1 and eject[0]["body"] == {}
    assert vm.eject_media(rf.make_client(transport), "1", IMG)["changed"] is False


@pytest.mark.parametrize("url, expected", [
    ("http://x/a.iso", "cd"), ("http://x/a.IMG", "usb"), ("http://x/a.raw?sig=1", "usb"),
    ("http://x/boot", "cd")])
def test_media_type_from_url(url, expected):
    assert vm.media_type_for(url) == expected


BAD_IMAGE_URLS = [
    ("file:///srv/images/x.iso", "scheme file:"), ("ftp://images/x.iso", "scheme ftp:"),
    ("nfs://images/export/x.iso", "scheme nfs:"), ("", "is empty"), ("   ", "is empty"),
    ("http:///x.iso", "names no host"), ("https://", "names no host"),
    ("images.example.net/x.iso", "no scheme"), ("http://images/x y.iso", "space"),
    ("http://images:port/x.iso", "not a valid URL"), (None, "not a string"),
]


@pytest.mark.parametrize("url, problem", BAD_IMAGE_URLS)
def test_an_image_url_the_bmc_cannot_fetch_is_refused_before_anything_is_sent(rf, url, problem):
    transport = bmc(rf)
    with pytest.raises(ParameterError) as err:
        vm.insert_media(rf.make_client(transport), "1", url)
    assert transport.sent == []
    assert err.value.msg.startswith("image_url ") and problem in err.value.msg
    assert "fix: " in err.value.msg and err.value.details["option"] == "image_url"


@pytest.mark.parametrize("url", ["http://images/x.iso", "HTTPS://images.example.net:8443/a/x.iso?t=1",
                                 "http://[fd00::1]/x.iso"])
def test_http_and_https_image_urls_are_accepted(url):
    assert vm.check_image_url(url) == url


def test_a_password_in_a_refused_image_url_is_not_shown():
    with pytest.raises(ParameterError) as err:
        vm.check_image_url("ftp://deploy:hunter2@images/x.iso")
    assert "hunter2" not in err.value.msg and "deploy:***@images" in err.value.msg
