"""Faults injected between the modules and a BMC: 503s, slow answers, connection resets,
a 401 in the middle of a session, malformed JSON."""
import pytest

from tests.integration.redfish.faultproxy import rack_proxy
from tests.integration.redfish.lab_fixture import run_playbook

pytestmark = pytest.mark.integration

SYSTEM = r"^/redfish/v1/Systems/[^/]+$"
RESET = r"/Actions/ComputerSystem\.Reset$"


@pytest.fixture(scope="module")
def proxy(lab):
    proxy = rack_proxy(lab, "127.0.11.3")
    yield proxy
    proxy.stop()


def run(proxy, lab, conn, node, auth="session"):
    extra = dict(conn, rf_proxy=proxy.base, rf_node=node, rf_auth=auth)
    rc, tasks, out = run_playbook("proxy.yml", extra)
    assert lab.cfg["password"] not in out
    return tasks["Read facts"], tasks["Power on"]


@pytest.mark.parametrize("index, rules", [
    (10, [("GET", SYSTEM, "503", 2), ("POST", RESET, "503", 1)]),
    (11, [("GET", SYSTEM, "slow", 1)]),
    # the reset's connection drops after the BMC took it: never re-sent, judged by reading
    # the power state (a drop before the BMC took it is in tests/integration/faults)
    (12, [("GET", SYSTEM, "reset", 2), ("POST", RESET, "lost", 1)]),
    (13, [("GET", SYSTEM, "401", 1), ("POST", RESET, "401", 1)]),
], ids=["503", "slow", "reset", "401-mid-session"])
def test_transient_faults_are_survived(proxy, lab, conn, index, rules):
    node = lab.nodes[index]
    proxy.set_rules(*rules)
    info, power = run(proxy, lab, conn, node)
    assert not info.get("failed_nodes") and "msg" not in info, info.get("msg")
    assert not power.get("failed_nodes") and "msg" not in power, power.get("msg")
    assert info["nodes"][0]["facts"]["system"]["uuid"] == node["system_id"]
    assert power["nodes"][0]["state"] == "On"
    injected = sum(n for _m, _p, _a, n in rules)
    assert len(proxy.faults()) == injected, proxy.faults()
    if rules[0][2] == "401":
        logins = [e for e in proxy.log if e[0] == "POST" and e[1].endswith("/Sessions")]
        assert len(logins) >= 2  # each module logged in, and logged in again after the 401
        logouts = [e for e in proxy.log if e[0] == "DELETE"]
        assert logouts, "sessions are logged out"


def test_malformed_json_fails_closed_with_one_line(proxy, lab, conn):
    node = lab.nodes[14]
    proxy.set_rules(("GET", SYSTEM, "badjson", 1))
    info, _power = run(proxy, lab, conn, node)
    assert info["failed_nodes"] == [node["name"]]
    assert "\n" not in info["msg"]
    assert "BMC of node %s answered" % node["name"] in info["msg"]
    assert "malformed JSON" in info["msg"]


def test_bmc_busy_beyond_retries_names_node_and_status(proxy, lab, conn):
    node = lab.nodes[15]
    proxy.set_rules(("GET", SYSTEM, "503", 10))
    info, _power = run(proxy, lab, conn, node, auth="basic")
    assert info["failed_nodes"] == [node["name"]] and "\n" not in info["msg"]
    assert "BMC of node %s" % node["name"] in info["msg"] and "HTTP 503" in info["msg"]
    assert info["nodes"][0]["error"] == info["msg"]
