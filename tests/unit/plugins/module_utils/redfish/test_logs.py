"""redfish.logs.log_entries against the DMTF mockups in ../shared/fixtures: every path, id and
service name the tests expect is read from the mockup itself, none is copied in here."""
from types import SimpleNamespace

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import logs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import BmcResponseError


def _link(tree, path, key):
    return tree[path][key]["@odata.id"]


def _first(tree, collection):
    return tree[collection]["Members"][0]["@odata.id"]


def _rackmount(rf):
    """The rackmount mockup, its system, the entry collections of the system's SEL and of the
    BMC's log, and the service names log_entries gives those two logs."""
    tree = rf.load_mockup("public-rackmount1")
    system, manager = _first(tree, "/redfish/v1/Systems"), _first(tree, "/redfish/v1/Managers")
    sel_service = _first(tree, _link(tree, system, "LogServices"))
    bmc_service = _first(tree, _link(tree, manager, "LogServices"))
    return SimpleNamespace(tree=tree, system=system, sel=_link(tree, sel_service, "Entries"),
                           bmc_log=_link(tree, bmc_service, "Entries"),
                           sel_name="system:%s" % tree[sel_service]["Id"],
                           bmc_name="manager:%s/%s" % (tree[manager]["Id"], tree[bmc_service]["Id"]))


def test_rackmount_mockup_gives_the_sel_and_bmc_log_newest_first(rf):
    m = _rackmount(rf)
    tree = m.tree
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), m.system)
    assert got["services"] == [m.sel_name, m.bmc_name]
    mockup = [(m.sel_name, e) for e in tree[m.sel]["Members"]] + \
             [(m.bmc_name, e) for e in tree[m.bmc_log]["Members"]]
    assert sorted((e["service"], e["id"], e["created"]) for e in got["entries"]) == sorted(
        (service, e["Id"], e["Created"]) for service, e in mockup)
    # newest first; the same time keeps the services' order (the system's log first)
    order = [(e["created"], -got["services"].index(e["service"])) for e in got["entries"]]
    assert order == sorted(order, reverse=True) and len({e["created"] for e in got["entries"]}) > 1
    first = got["entries"][0]
    newest = max(tree[m.sel]["Members"], key=lambda e: e["Created"])
    assert (first["service"], first["severity"], first["message"], first["message_id"], first["sensor_type"],
            first["entry_type"]) == (m.sel_name, newest["Severity"], newest["Message"], newest["MessageId"],
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
    m = _rackmount(rf)
    del m.tree[_link(m.tree, m.system, "LogServices")]          # linked from the system, answers 404
    got = logs.log_entries(rf.make_client(rf.FakeTransport(m.tree)), m.system)
    assert got["services"] == [m.bmc_name]
    assert "system %s offers no LogServices" % m.system in got["notes"]


@pytest.mark.parametrize("field,value,named", [
    ("Created", "yesterday", "Created"),
    ("Severity", 3, "Severity"),
    ("Id", None, "Id"),
])
def test_an_entry_outside_the_schema_fails_closed_naming_the_field(rf, field, value, named):
    m = _rackmount(rf)
    tree, sel = m.tree, m.sel
    tree[sel]["Members"][0][field] = value
    if value is None:       # a bare link whose entry has no Id
        del tree[sel]["Members"][0][field]
        tree[sel]["Members"][0]["@odata.id"] = sel + "/no-id"
        tree[sel + "/no-id"] = {"Created": tree[sel]["Members"][1]["Created"], "Message": "x"}
    with pytest.raises(BmcResponseError) as err:
        logs.log_entries(rf.make_client(rf.FakeTransport(tree)), m.system)
    assert named in err.value.msg or named in str(err.value.details)


def test_bare_links_are_read_one_by_one_and_pages_are_followed(rf):
    m = _rackmount(rf)
    tree, sel = m.tree, m.sel
    full = tree[sel]["Members"]
    assert len({e["Created"] for e in full[:2]}) == 2       # two distinct times: one newest-first order
    for entry in full:
        tree[entry["@odata.id"]] = entry
    tree[sel] = {"Members": [{"@odata.id": full[0]["@odata.id"]}],
                 "Members@odata.nextLink": sel + "/page2"}
    tree[sel + "/page2"] = {"Members": [{"@odata.id": full[1]["@odata.id"]}]}
    got = logs.log_entries(rf.make_client(rf.FakeTransport(tree)), m.system)
    newest_first = [e["Id"] for e in sorted(full[:2], key=lambda e: e["Created"], reverse=True)]
    assert [e["id"] for e in got["entries"] if e["service"] == m.sel_name] == newest_first


def test_a_log_longer_than_the_pages_read_is_cut_with_a_note(rf, monkeypatch):
    m = _rackmount(rf)
    m.tree[m.sel]["Members@odata.nextLink"] = m.sel      # a BMC paging in a circle
    monkeypatch.setattr(logs, "MAX_PAGES", 3)
    got = logs.log_entries(rf.make_client(rf.FakeTransport(m.tree)), m.system)
    assert any("more than 3 pages" in n for n in got["notes"])
    # each of the 3 pages read gives the page's entries again
    assert len([e for e in got["entries"] if e["service"] == m.sel_name]) == 3 * len(m.tree[m.sel]["Members"])
