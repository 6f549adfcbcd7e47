import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import fanout
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import node_list
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    DiscoveryError,
)


def nodes(count):
    return [dict(name="n%02d" % i, baseuri="10.0.0.%d" % i, username="u", password="p",
                 system_id="1", auth="basic") for i in range(count)]


def operation_failing(names):
    def operation(client, node):
        if node["name"] in names:
            raise DiscoveryError("System '1' not found on the BMC of node %s" % node["name"])
        return dict(changed=True, state="On")
    return operation


def factory(rf):
    return lambda node: rf.FakeTransport(rf.load_tree("generic"))


def test_every_node_gets_an_entry_in_order(rf):
    result = fanout.run_fleet(nodes(12), operation_failing(()), workers=4,
                              transport_factory=factory(rf))
    assert [e["name"] for e in result["nodes"]] == ["n%02d" % i for i in range(12)]
    assert result["summary"] == dict(total=12, failed=0, changed=12)
    assert all(e["state"] == "On" and e["error"] is None for e in result["nodes"])


def test_any_failure_fails_by_default_and_names_the_nodes(rf):
    with pytest.raises(fanout.FleetFailed) as err:
        fanout.run_fleet(nodes(10), operation_failing({"n03", "n07"}), transport_factory=factory(rf))
    msg = err.value.msg
    assert msg.startswith("2 of 10 nodes failed (20.0% > max_failed_percent 0.0)")
    assert "node n03" in msg and "node n07" in msg
    details = err.value.details
    assert details["failed_nodes"] == ["n03", "n07"] and len(details["nodes"]) == 10
    assert sum(1 for e in details["nodes"] if e["changed"]) == 8


def test_percentage_policy_tolerates_a_few(rf):
    result = fanout.run_fleet(nodes(10), operation_failing({"n03"}), max_failed_percent=10,
                              transport_factory=factory(rf))
    assert result["failed_nodes"] == ["n03"] and result["changed"] is True


def test_single_node_failure_is_the_node_error_itself(rf):
    with pytest.raises(fanout.FleetFailed) as err:
        fanout.run_fleet(nodes(1), operation_failing({"n00"}), max_failed_percent=100,
                         transport_factory=factory(rf))
    assert err.value.msg == "System '1' not found on the BMC of node n00"


def test_unexpected_exception_fails_only_that_node(rf):
    def operation(client, node):
        if node["name"] == "n01":
            raise KeyError("Boot")
        return dict(changed=False)
    with pytest.raises(fanout.FleetFailed) as err:
        fanout.run_fleet(nodes(3), operation, transport_factory=factory(rf))
    entry = err.value.details["nodes"][1]
    assert entry["failed"] and entry["error"] == "Node n01: unexpected KeyError: 'Boot'"


def test_each_node_has_its_own_client_and_is_closed(rf):
    transports = []

    def make(node):
        transports.append(rf.FakeTransport(rf.load_tree("generic")))
        return transports[-1]

    fanout.run_fleet(nodes(5), lambda client, node: dict(id=client.get("/redfish/v1/Systems/1")["Id"]),
                     transport_factory=make)
    assert len(transports) == 5 and all(t.closed and len(t.sent) == 1 for t in transports)


def test_node_list_inherits_top_level_options():
    params = dict(baseuri=None, username="admin", password="pw", auth="auto", validate_certs=True,
                  ca_path="/ca.pem", timeout=10, retries=3, system_id="1",
                  nodes=[dict(baseuri="10.0.0.1", name=None, username=None, password=None,
                              system_id=None),
                         dict(baseuri="10.0.0.2", name="b", username="other", password=None,
                              system_id="7")])
    first, second = node_list(params)
    assert (first["name"], first["username"], first["system_id"], first["ca_path"]) == (
        "10.0.0.1", "admin", "1", "/ca.pem")
    assert (second["name"], second["username"], second["password"], second["system_id"]) == (
        "b", "other", "pw", "7")


def test_a_node_entry_may_name_its_own_ca_and_turn_off_verification():
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import _NODE_SPEC
    assert _NODE_SPEC["ca_path"]["type"] == "path" and _NODE_SPEC["validate_certs"]["type"] == "bool"
    params = dict(baseuri=None, username="admin", password="pw", auth="auto", validate_certs=True,
                  ca_path="/ca.pem", timeout=10, retries=3, system_id="1",
                  nodes=[dict(baseuri="10.0.0.1", ca_path="/rack2-ca.pem", validate_certs=None),
                         dict(baseuri="10.0.0.2", ca_path=None, validate_certs=False)])
    first, second = node_list(params)
    assert (first["ca_path"], first["validate_certs"]) == ("/rack2-ca.pem", True)
    assert (second["ca_path"], second["validate_certs"]) == ("/ca.pem", False)   # False is kept, not the default


def test_module_result_flattens_single_node_and_builds_diff(rf):
    params = dict(baseuri="10.0.0.1", username="u", password="p", auth="basic",
                  validate_certs=True, ca_path=None, timeout=10, retries=3, system_id="1",
                  nodes=None, workers=50, max_failed_percent=0.0)
    result, notes = fanout.module_result(
        params, lambda c, n: dict(changed=True, before="Off", state="On", warnings=["w1"]),
        diff_of=lambda e: (e["before"], e["state"]), transport_factory=factory(rf))
    assert result["state"] == "On" and result["before"] == "Off" and notes == ["w1"]
    assert result["diff"] == dict(before={"10.0.0.1": "Off"}, after={"10.0.0.1": "On"})
    assert "warnings" not in result["nodes"][0]
