from ansible_collections.gpufleet.baremetal.plugins.modules import redfish_power
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, ok
from tests.unit.plugins.module_utils.redfish.module_harness import run

SYSTEM = "/redfish/v1/Systems/1"
RESET = SYSTEM + "/Actions/ComputerSystem.Reset"
BASE = dict(username="admin", password="s3cret-pw", auth="basic", poll_interval=0.0)


def bmc(state="Off"):
    transport = FakeTransport(load_tree("generic"))
    transport.tree[SYSTEM]["PowerState"] = state

    def reset(call):
        transport.tree[SYSTEM]["PowerState"] = "On" if call["body"]["ResetType"] == "On" else "Off"
        return ok(None, 204)
    transport.on("POST", RESET, reset)
    return transport


def test_single_node_result_shape_and_diff(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="on"), {"bmc-1": fake}, diff=True)
    assert not failed
    assert (result["changed"], result["state"], result["before"], result["reset_type"]) == (
        True, "On", "Off", "On")
    assert result["diff"] == {"before": {"bmc-1": "Off"}, "after": {"bmc-1": "On"}}
    assert result["summary"] == {"total": 1, "changed": 1, "failed": 0}
    assert "s3cret-pw" not in str(result)


def test_idempotent_second_run(monkeypatch, capsys):
    fake = bmc("On")
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="on"), {"bmc-1": fake})
    assert not failed and result["changed"] is False and not fake.calls("POST", RESET)


def test_check_mode_changes_nothing(monkeypatch, capsys):
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="on"), {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] is True and not fake.calls("POST")


def test_nodes_with_one_unknown_system_id(monkeypatch, capsys):
    fakes = {"bmc-%d" % i: bmc() for i in range(3)}
    nodes = [dict(name="n%d" % i, baseuri="bmc-%d" % i, system_id="1") for i in range(3)]
    nodes[1]["system_id"] = "99"
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, nodes=nodes, state="on"), fakes)
    assert failed and result["failed_nodes"] == ["n1"]
    assert result["msg"].startswith("1 of 3 nodes failed")
    assert "System '99' not found on the BMC of node n1" in result["msg"]
    assert [n["changed"] for n in result["nodes"]] == [True, False, True]


def test_unsupported_reset_type_single_node(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="power_cycle"), {"bmc-1": bmc("On")})
    assert failed and "needs reset type PowerCycle" in result["msg"] and "\n" not in result["msg"]


def test_baseuri_and_nodes_are_exclusive(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", nodes=[dict(baseuri="x")], state="on"))
    assert failed and "mutually exclusive" in result["msg"]


def test_password_is_no_log(monkeypatch, capsys):
    fake = bmc()
    fake.on("GET", SYSTEM, ok({"error": {"message": "bad"}}, 401))
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="on"), {"bmc-1": fake})
    assert failed and "refused the credentials" in result["msg"]
    assert "s3cret-pw" not in json_dump(result)


def json_dump(result):
    import json
    return json.dumps(result)


def test_missing_requests_library_fails_with_the_install_hint(monkeypatch, capsys):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import fanout
    monkeypatch.setattr(fanout, "HAS_REQUESTS", False)
    fake = bmc()
    result, failed = run(monkeypatch, capsys, redfish_power,
                         dict(BASE, baseuri="bmc-1", state="on"), {"bmc-1": fake})
    assert failed and "requests" in result["msg"] and not fake.sent
