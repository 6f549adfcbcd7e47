import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcHTTPError, DiscoveryError,
)


def two_systems(rf):
    tree = rf.load_tree("generic")
    tree["/redfish/v1/Systems"] = {"Members": [{"@odata.id": "/redfish/v1/Systems/1"},
                                               {"@odata.id": "/redfish/v1/Systems/2"}]}
    tree["/redfish/v1/Systems/2"] = dict(tree["/redfish/v1/Systems/1"], Id="2", UUID="uuid-2",
                                         Name="gpu-07")
    return rf.FakeTransport(tree)


@pytest.mark.parametrize("system_id", ["2", "uuid-2", "gpu-07"])
def test_find_system_by_id_uuid_or_name(rf, system_id):
    client = rf.make_client(two_systems(rf))
    assert discovery.find_system(client, system_id) == "/redfish/v1/Systems/2"


def test_single_system_needs_no_id(rf, generic):
    assert discovery.find_system(rf.make_client(generic)) == "/redfish/v1/Systems/1"


def test_several_systems_need_an_id(rf):
    with pytest.raises(DiscoveryError) as err:
        discovery.find_system(rf.make_client(two_systems(rf)))
    assert "set system_id" in err.value.msg and "1, 2" in err.value.msg


def test_unknown_system_lists_what_exists(rf, generic):
    with pytest.raises(DiscoveryError) as err:
        discovery.find_system(rf.make_client(generic), "nope")
    msg = err.value.msg
    assert "'nope' not found" in msg and "node-1" in msg and "Available: 1" in msg
    assert err.value.details["available"] == ["1"]


def test_members_follow_next_link(rf, generic):
    generic.tree["/redfish/v1/Things"] = {"Members": [{"@odata.id": "/a"}],
                                          "Members@odata.nextLink": "/redfish/v1/Things?page=2"}
    generic.on("GET", "/redfish/v1/Things?page=2", rf.ok({"Members": [{"@odata.id": "/b"}]}))
    assert discovery.members(rf.make_client(generic), "/redfish/v1/Things") == ["/a", "/b"]


def test_managers_from_links_or_the_whole_service(rf, generic):
    client = rf.make_client(generic)
    assert discovery.managers_of(client, "/redfish/v1/Systems/1") == ["/redfish/v1/Managers/bmc"]
    del generic.tree["/redfish/v1/Systems/1"]["Links"]
    client = rf.make_client(generic)
    assert discovery.managers_of(client, "/redfish/v1/Systems/1") == ["/redfish/v1/Managers/bmc"]


@pytest.mark.parametrize("status", [404, 405, 501])
def test_optional_resource_absent(rf, generic, status):
    generic.on("GET", "/redfish/v1/UpdateService", rf.ok({}, status))
    assert discovery.optional(rf.make_client(generic), "/redfish/v1/UpdateService") is None


def test_optional_resource_other_errors_raise(rf, generic):
    generic.on("GET", "/redfish/v1/UpdateService", rf.ok({}, 400))
    with pytest.raises(BmcHTTPError):
        discovery.optional(rf.make_client(generic), "/redfish/v1/UpdateService")


def test_root_without_systems(rf):
    transport = rf.FakeTransport({"/redfish/v1/": {"Managers": {"@odata.id": "/m"}}})
    with pytest.raises(DiscoveryError, match="no Systems collection"):
        discovery.find_system(rf.make_client(transport))


@pytest.mark.parametrize("resource, keys, expected", [
    ({"A": {"@odata.id": "/x"}}, ("A",), "/x"),
    ({"A": {"B": {"@odata.id": "/y"}}}, ("A", "B"), "/y"),
    ({"A": {}}, ("A",), None),
    ({}, ("A",), None),
])
def test_link(resource, keys, expected):
    assert discovery.link(resource, *keys) == expected


@pytest.mark.parametrize("resource, keys, field", [
    ({"A": "text"}, ("A", "B"), "A"),
    ({"A": {"@odata.id": 5}}, ("A",), "A.@odata.id"),
])
def test_link_through_a_wrong_type_names_the_field(resource, keys, field):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
        BmcResponseError,
    )
    with pytest.raises(BmcResponseError) as err:
        discovery.link(resource, *keys, node="node-1")
    assert err.value.details["field"] == field and "node-1" in err.value.msg


def test_direct_lookup_skips_the_collection(rf, generic):
    client = rf.make_client(generic)
    assert discovery.find_system(client, "1") == "/redfish/v1/Systems/1"
    assert not generic.calls("GET", "/redfish/v1/Systems")
    client.get("/redfish/v1/Systems/1")  # cached by the lookup
    assert len(generic.calls("GET", "/redfish/v1/Systems/1")) == 1


def test_direct_lookup_follows_a_redirect_within_the_collection(rf, generic):
    generic.on("GET", "/redfish/v1/Systems/node-a",
               rf.ok({}, 307, {"Location": "https://bmc/redfish/v1/Systems/1"}))
    assert discovery.find_system(rf.make_client(generic), "node-a") == "/redfish/v1/Systems/1"
    assert not generic.calls("GET", "/redfish/v1/Systems")


def test_redirect_outside_the_collection_is_not_followed(rf, generic):
    generic.on("GET", "/redfish/v1/Systems/1",
               rf.ok({}, 307, {"Location": "https://evil/elsewhere"}))
    # Scanning the members for "x1" reads Systems/1: its redirect is an error, never a body.
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
        BmcHTTPError,
    )
    with pytest.raises(BmcHTTPError, match="a redirect to https://evil/elsewhere"):
        discovery.find_system(rf.make_client(generic), "x1")
    assert discovery.find_system(rf.make_client(generic), "1") == "/redfish/v1/Systems/1"
