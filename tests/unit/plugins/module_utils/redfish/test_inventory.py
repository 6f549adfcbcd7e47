"""redfish_info facts from the DMTF public mockups (served by the fake transport as-is)."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import inventory


def gather(rf, mockup, **kwargs):
    transport = rf.FakeTransport(rf.load_mockup(mockup))
    return inventory.gather(rf.make_client(transport), **kwargs), transport


def mockup_system(rf, mockup):
    """The mockup's only System resource, read straight from the DMTF JSON."""
    tree = rf.load_mockup(mockup)
    members = tree["/redfish/v1/Systems"]["Members"]
    assert len(members) == 1
    return tree[members[0]["@odata.id"]]


def test_public_tower_system_and_gpus(rf):
    facts, _unused = gather(rf, "public-tower")
    system = facts["system"]
    raw = mockup_system(rf, "public-tower")
    assert (system["id"], system["manufacturer"], system["model"], system["serial_number"]) == (
        raw["Id"], "Contoso", "3500", raw["SerialNumber"])
    assert system["uuid"] == "38947555-7742-3448-3784-823347823834"
    assert (system["power_state"], system["health"], system["sku"]) == ("On", "OK", "8675309")
    assert system["boot"]["target"] == "Hdd" and system["boot"]["enabled"] == "Disabled"
    gpus = facts["gpus"]
    assert [(g["id"], g["model"], g["cores"], g["memory_mib"]) for g in gpus] == [
        ("GPU1", "Nvidia(R) TU102", 576, 11264), ("GPU2", "Nvidia(R) TU102", 576, 11264)]
    assert len(facts["processors"]) == 10
    assert sum(1 for p in facts["processors"] if p["type"] == "CPU") == 8


def test_public_tower_firmware_nics_managers(rf):
    facts, _unused = gather(rf, "public-tower")
    assert [(f["id"], f["version"], f["updateable"]) for f in facts["firmware"]] == [
        ("BIOS", "P79 v1.45", True), ("BMC", "1.45.455b66-rev4", True)]
    assert sorted(n["mac"] for n in facts["nics"]) == ["FB:AA:1D:4E:D0:7A", "FB:AA:1D:4E:D0:7C"]
    assert facts["managers"] == [dict(id="BMC", model="Joo Janta 200", manager_type="BMC",
                                      firmware_version="1.45.455b66-rev4",
                                      uuid=facts["managers"][0]["uuid"], health="OK")]
    assert facts["unsupported"] == []


def test_public_rackmount1(rf):
    facts, _unused = gather(rf, "public-rackmount1")
    assert facts["system"]["id"] == mockup_system(rf, "public-rackmount1")["Id"]
    assert facts["system"]["health"] == "Warning"  # HealthRollup wins over Health
    assert facts["system"]["boot"]["target"] == "Pxe"
    assert facts["system"]["boot"]["enabled"] == "Once"
    assert facts["gpus"] == []
    assert [p["type"] for p in facts["processors"]] == ["CPU", "CPU", "FPGA"]
    firmware = dict((f["id"], f["version"]) for f in facts["firmware"])
    # BIOS (this system), BMC (its manager), SS (part of this system); the mockup's AC-RoT0
    # folder is not a member of the collection, so it is not reported.
    assert firmware == {"BIOS": "P79 v1.45", "BMC": "1.45.455b66-rev4", "SS": "2.50"}
    assert "12:44:6A:3B:04:11" in [n["mac"] for n in facts["nics"]]


def test_subset_reads_only_what_is_asked(rf):
    facts, transport = gather(rf, "public-tower", subset=("system",))
    assert set(facts) == {"system", "unsupported"}
    assert not [c for c in transport.sent if "Processors" in c["path"]]


def test_missing_parts_are_null_and_listed(rf, generic):
    generic.tree["/redfish/v1/Systems/1"]["Processors"] = {"@odata.id": "/redfish/v1/Systems/1/Processors"}
    generic.on("GET", "/redfish/v1/Systems/1/Processors", rf.ok({"error": {}}, 501))
    facts = inventory.gather(rf.make_client(generic))
    assert facts["processors"] is None and facts["gpus"] is None and facts["firmware"] is None
    assert facts["unsupported"] == ["firmware", "gpus", "processors"]
    assert facts["nics"] == [dict(id="nic1", name="NIC 1", mac="52:54:00:aa:bb:01",
                                  link_status="LinkUp")]


@pytest.mark.parametrize("status", [{"Health": "OK"}, {"HealthRollUp": "Critical", "Health": "OK"}])
def test_health_prefers_rollup(status):
    facts = inventory.system_facts({"Id": "1", "Status": status})
    assert facts["health"] == status.get("HealthRollUp", status["Health"])
