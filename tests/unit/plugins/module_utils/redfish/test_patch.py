"""A PATCH whose answer is lost is settled by reading the resource, never re-sent blindly.

``Resource`` is a fake BMC resource with ETags: GET answers the current ETag; a PATCH is
checked against If-Match (when the BMC enforces it), applied, and its answer then dropped
or delivered as the test's faults say. ``ran`` counts the PATCHes the BMC applied, so a
PATCH applied twice is seen even on a BMC that ignores If-Match.
"""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import (
    boot, virtual_media as vm,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
    TransportError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcConflictError, OutcomeUnknownError,
)

SYSTEM = "/redfish/v1/Systems/1"
WANT = {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}
OTHER = {"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Continuous"}}


class Resource:
    """``faults``, one per PATCH received: ok, lost (applied, answer dropped), reset_before
    (dropped before the BMC took it), elsewhere (another client changes it, then dropped)."""

    def __init__(self, rf, transport, path, faults, etags=True, enforce=True):
        self.rf, self.transport, self.path = rf, transport, path
        self.faults, self.etags, self.enforce = list(faults), etags, enforce
        self.version = 1
        self.ran = 0
        transport.on("GET", path, self.get)
        transport.on("PATCH", path, self.patch)

    def etag(self):
        return '"v%d"' % self.version

    def get(self, call):
        return self.rf.ok(self.transport.tree[self.path], 200,
                          {"ETag": self.etag()} if self.etags else {})

    def change(self, body):
        for key, value in body.items():
            self.transport.tree[self.path][key].update(value)
        self.version += 1

    def patch(self, call):
        fault = self.faults.pop(0) if self.faults else "ok"
        if fault == "reset_before":
            raise TransportError("connection reset before an answer", kind="reset")
        if fault == "elsewhere":
            self.change(OTHER)
            raise TransportError("no answer within the read timeout", kind="read_timeout")
        if_match = call["headers"].get("If-Match")
        if self.enforce and if_match not in (None, "*", self.etag()):
            return self.rf.ok({"error": {"message": "ETag mismatch"}}, 412)
        self.change(call["body"])
        self.ran += 1
        if fault == "lost":
            raise TransportError("no answer within the read timeout", kind="read_timeout")
        return self.rf.ok(None, 204)


def setup(rf, clock, faults, read_first=True, **kw):
    transport = rf.FakeTransport(rf.load_tree("generic"))
    resource = Resource(rf, transport, SYSTEM, faults, **kw)
    client = rf.make_client(transport, clock)
    if read_first:
        client.get(SYSTEM)
    return client, resource, transport


@pytest.mark.parametrize("etags, enforce", [(True, True), (True, False), (False, False)])
def test_applied_then_answer_lost_is_not_sent_again(rf, clock, etags, enforce):
    client, resource, transport = setup(rf, clock, ["lost"], etags=etags, enforce=enforce)
    rsp = client.patch(SYSTEM, WANT)
    assert resource.ran == 1 and len(transport.calls("PATCH", SYSTEM)) == 1
    assert isinstance(rsp.lost, OutcomeUnknownError)  # the caller can say how it learned
    assert transport.tree[SYSTEM]["Boot"]["BootSourceOverrideTarget"] == "Pxe"


@pytest.mark.parametrize("etags", [True, False])
def test_not_applied_is_sent_once_more(rf, clock, etags):
    client, resource, transport = setup(rf, clock, ["reset_before"], etags=etags)
    rsp = client.patch(SYSTEM, WANT)
    patches = transport.calls("PATCH", SYSTEM)
    assert resource.ran == 1 and len(patches) == 2 and rsp.status == 204 and rsp.lost is None
    if etags:  # the copy is guarded by the ETag the re-read showed (unchanged: v1)
        assert [p["headers"].get("If-Match") for p in patches] == ['"v1"', '"v1"']


@pytest.mark.parametrize("etags", [True, False])
def test_changed_by_someone_else_fails_and_is_not_sent_again(rf, clock, etags):
    client, resource, transport = setup(rf, clock, ["elsewhere"], etags=etags)
    with pytest.raises(BmcConflictError) as err:
        client.patch(SYSTEM, WANT)
    msg = err.value.msg
    assert len(transport.calls("PATCH", SYSTEM)) == 1 and resource.ran == 0
    assert "node-1" in msg and SYSTEM in msg and "not sent again" in msg
    assert "something else changed it" in msg and "\n" not in msg
    assert ('(ETag "v1", now "v2")' in msg) == etags
    assert err.value.details["cause"].startswith("no answer within the read timeout")


def test_second_copy_lost_too_is_an_unknown_outcome(rf, clock):
    client, resource, transport = setup(rf, clock, ["reset_before", "reset_before"])
    with pytest.raises(OutcomeUnknownError):
        client.patch(SYSTEM, WANT)
    assert len(transport.calls("PATCH", SYSTEM)) == 2  # never a third


def test_nothing_to_compare_with_stays_unknown(rf, clock):
    """No ETag and no read before the PATCH: it cannot be told whether it landed."""
    client, resource, transport = setup(rf, clock, ["reset_before"], etags=False,
                                        read_first=False)
    with pytest.raises(OutcomeUnknownError):
        client.patch(SYSTEM, WANT)
    assert len(transport.calls("PATCH", SYSTEM)) == 1


def test_412_with_the_values_already_in_place_sends_nothing_more(rf, clock):
    client, resource, transport = setup(rf, clock, [])
    resource.change(WANT)  # another run set them after our read: our ETag is stale
    client.patch(SYSTEM, WANT)
    assert len(transport.calls("PATCH", SYSTEM)) == 1 and resource.ran == 0


def test_412_with_other_values_is_sent_with_the_fresh_etag(rf, clock):
    client, resource, transport = setup(rf, clock, [])
    resource.change(OTHER)
    client.patch(SYSTEM, WANT)
    patches = transport.calls("PATCH", SYSTEM)
    assert [p["headers"]["If-Match"] for p in patches] == ['"v1"', '"v2"'] and resource.ran == 1


def test_the_cache_is_dropped_after_a_settled_patch(rf, clock):
    client, resource, transport = setup(rf, clock, ["lost"])
    client.patch(SYSTEM, WANT)
    assert client.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"] == "Pxe"


def test_boot_override_answer_lost_after_applying_succeeds_with_a_warning(rf, clock):
    transport = rf.FakeTransport(rf.load_tree("generic"))
    resource = Resource(rf, transport, SYSTEM, ["lost"])
    result = boot.set_boot(rf.make_client(transport, clock), "1", "pxe", "once")
    assert resource.ran == 1 and len(transport.calls("PATCH", SYSTEM)) == 1
    assert result["changed"] is True and "took effect" in result["warnings"][0]


def test_boot_override_judged_with_the_vendor_quirk(rf, clock):
    """sushy-tools reads Once back as Continuous: still "in place", not someone else's change."""
    transport = rf.FakeTransport(rf.load_tree("sushy"))

    class Sushy(Resource):
        def change(self, body):
            Resource.change(self, body)
            self.transport.tree[self.path]["Boot"]["BootSourceOverrideEnabled"] = "Continuous"
    resource = Sushy(rf, transport, SYSTEM, ["lost"])
    result = boot.set_boot(rf.make_client(transport, clock), "1", "cd", "once")
    assert resource.ran == 1 and len(transport.calls("PATCH", SYSTEM)) == 1
    assert result["changed"] is True and "took effect" in result["warnings"][0]


def test_media_patch_answer_lost_after_applying_is_not_sent_again(rf, clock):
    """A BMC without InsertMedia (Lenovo SD530) gets a PATCH of the device."""
    transport = rf.FakeTransport(rf.load_tree("lenovo"))
    device = "/redfish/v1/Managers/bmc/VirtualMedia/EXT1"
    runs = []

    def patch(call):
        transport.tree[device].update(call["body"])
        runs.append(1)
        raise TransportError("connection reset before an answer", kind="reset")
    transport.on("PATCH", device, patch)
    iso = "http://images.example.net/gpufleet.iso"
    result = vm.insert_media(rf.make_client(transport, clock), "1", iso)
    assert len(runs) == 1 and result["image"] == iso and "took effect" in result["warnings"][0]
