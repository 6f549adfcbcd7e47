from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.firmware import (
    firmware_inventory,
)

INV = "/redfish/v1/UpdateService/FirmwareInventory"


def rack_bmc(rf, expand=True):
    """One BMC serving two systems, items tied to each by RelatedItem (the lab's shape)."""
    tree = rf.load_tree("generic")
    tree["/redfish/v1/"]["UpdateService"] = {"@odata.id": "/redfish/v1/UpdateService"}
    if expand:
        tree["/redfish/v1/"]["ProtocolFeaturesSupported"] = {"ExpandQuery": {"ExpandAll": True}}
    tree["/redfish/v1/UpdateService"] = {"FirmwareInventory": {"@odata.id": INV}}
    items = []
    for sid, version in (("1", "2.1.0"), ("2", "2.0.9")):
        item = {"@odata.id": INV + "/n%s.BIOS" % sid, "Id": "n%s.BIOS" % sid, "Name": "BIOS",
                "Version": version, "Updateable": True, "SoftwareId": "BIOS",
                "RelatedItem": [{"@odata.id": "/redfish/v1/Systems/" + sid}]}
        tree[item["@odata.id"]] = item
        items.append(item)
    tree[INV] = {"Members": [{"@odata.id": i["@odata.id"]} for i in items]}
    transport = rf.FakeTransport(tree)
    transport.on("GET", INV + "?$expand=.($levels=1)", rf.ok({"Members": items}))
    return transport


def test_expanded_collection_costs_one_get(rf):
    transport = rack_bmc(rf)
    result = firmware_inventory(rf.make_client(transport), "/redfish/v1/Systems/2")
    assert [(i["id"], i["version"]) for i in result] == [("n2.BIOS", "2.0.9")]
    assert not [c for c in transport.sent if c["path"].startswith(INV + "/")]


def test_without_expand_reads_each_member(rf):
    transport = rack_bmc(rf, expand=False)
    result = firmware_inventory(rf.make_client(transport), "/redfish/v1/Systems/1")
    assert [(i["id"], i["version"]) for i in result] == [("n1.BIOS", "2.1.0")]
    assert len([c for c in transport.sent if c["path"].startswith(INV + "/")]) == 2


def test_no_update_service_is_none(rf, generic):
    assert firmware_inventory(rf.make_client(generic)) is None
