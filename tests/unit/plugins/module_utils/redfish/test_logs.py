import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import logs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import BmcResponseError

RACK = "/redfish/v1/Systems/437XR1138R2"
SEL = RACK + "/LogServices/Log1/Entries"
BMC_LOG = "/redfish/v1/Managers/BMC/LogServices/Log/Entries"


def test_rackmount_mockup_gives_the_sel_and_bmc_log_newest_first(rf):
    # the expected entries come from the shared DMTF mockup itself (../shared/fixtures)
    tree = rf.load_mockup("public-rackmount1")
    client = rf.make_client(rf.FakeTransport(tree))
    got = logs.log_entries(client, RACK)
    assert got["services"] == ["system:Log1", "manager:BMC/Log"]
    mockup = [("system:Log1", m) for m in tree[SEL]["Members"]] + \
             [("manager:BMC/Log", m) for m in tree[BMC_LOG]["Members"]]
    assert sorted((e["service"], e["id"], e["created"]) for e in got["entries"]) == sorted(
        (service, m["Id"], m["Created"]) for service, m in mockup)
    # newest first; the same time keeps the services' order (the system's log first)
    order = [(e["created"], -got["services"].index(e["service"])) for e in got["entries"]]
    assert order == sorted(order, reverse=True) and len({e["created"] for e in got["entries"]}) > 1
    first = got["entries"][0]
    newest = max(tree[SEL]["Members"], key=lambda m: m["Created"])
    assert (first["service"], first["severity"], first["message"], first["message_id"], first["sensor_type"],
            first["entry_type"]) == ("system:Log1", newest["Severity"], newest["Message"], newest["MessageId"],
                                     newest["SensorType"], newest["EntryType"])
    assert got["notes"] == []


def test_tower_mockup_and_the_limit_keeps_the_newest(rf):
    tree = rf.load_mockup("public-tower")
    system = next(p for p in tree if p.startswith("/redfish/v1/Systems/") and p.count("/") == 4)
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), system, limit=1)
    assert len(got["entries"]) == 1
    assert got["entries"][0]["created_epoch"] == max(
        e["created_epoch"] for e in logs.log_entries(rf.make_client(rf.FakeTransport(tree)), system)["entries"])


def test_a_bmc_without_log_services_gives_no_entries_and_says_so(rf, generic):
    got = logs.log_entries(rf.make_client(generic), "/redfish/v1/Systems/1")
    assert got["entries"] == [] and got["services"] == []
    assert any("offers no LogServices" in n for n in got["notes"])
    assert any("no log entries could be read" in n for n in got["notes"])


def test_a_listed_but_missing_log_services_collection_is_a_note(rf):
    tree = rf.load_mockup("public-rackmount1")
    del tree[RACK + "/LogServices"]          # linked from the system, answers 404
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), RACK)
    assert got["services"] == ["manager:BMC/Log"]
    assert "system %s offers no LogServices" % RACK in got["notes"]


@pytest.mark.parametrize("field,value,named", [
    ("Created", "yesterday", "Created"),
    ("Severity", 3, "Severity"),
    ("Id", None, "Id"),
])
def test_an_entry_outside_the_schema_fails_closed_naming_the_field(rf, field, value, named):
    tree = rf.load_mockup("public-rackmount1")
    tree[SEL]["Members"][0][field] = value
    if value is None:       # a bare link whose entry has no Id
        del tree[SEL]["Members"][0][field]
        tree[SEL]["Members"][0]["@odata.id"] = SEL + "/no-id"
        tree[SEL + "/no-id"] = {"Created": tree[SEL]["Members"][1]["Created"], "Message": "x"}
    with pytest.raises(BmcResponseError) as err:
        logs.log_entries(rf.make_client(rf.FakeTransport(tree)), RACK)
    assert named in err.value.msg or named in str(err.value.details)


def test_bare_links_are_read_one_by_one_and_pages_are_followed(rf):
    tree = rf.load_mockup("public-rackmount1")
    full = tree[SEL]["Members"]
    for entry in full:
        tree[entry["@odata.id"]] = entry
    tree[SEL] = {"Members": [{"@odata.id": full[0]["@odata.id"]}],
                 "Members@odata.nextLink": SEL + "/page2"}
    tree[SEL + "/page2"] = {"Members": [{"@odata.id": full[1]["@odata.id"]}]}
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), RACK)
    assert [e["id"] for e in got["entries"] if e["service"] == "system:Log1"] == ["2", "1"]


def test_a_log_longer_than_the_pages_read_is_cut_with_a_note(rf, monkeypatch):
    tree = rf.load_mockup("public-rackmount1")
    tree[SEL]["Members@odata.nextLink"] = SEL      # a BMC paging in a circle
    monkeypatch.setattr(logs, "MAX_PAGES", 3)
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), RACK)
    assert any("more than 3 pages" in n for n in got["notes"])
    assert len([e for e in got["entries"] if e["service"] == "system:Log1"]) == 6
