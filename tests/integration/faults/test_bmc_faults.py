"""Fault matrix, BMC part: faults between the controller and an emulated BMC.

Each case runs one node through the same fan-out the redfish_* modules use (real HTTP, the
sushy-tools rack of lab/bmc, the fault proxy of tests/integration/redfish in front of it) and
checks three things:
- no action ran twice: the proxy counts the action requests that reached the BMC, and the
  lab's event log counts the power changes and media inserts the BMC carried out;
- the node ends with a recorded result: ``failed`` false, or an error on one line naming the
  node and saying what happened;
- the expected outcome: survived (with a warning when an answer was lost), or failed closed.
docs/reliability.md ("BMC") has the table of these cases.
"""
import importlib.util

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import fanout
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.inventory import gather
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.power import set_power
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.provision import provision
from tests.helpers import need
from tests.integration.redfish.faultproxy import rack_proxy
from tests.integration.redfish.lab_fixture import Lab, MediaServer

pytestmark = pytest.mark.integration


# Fixtures live here, not in a conftest.py: the other fault suites of this folder start
# their own labs.
@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    need(importlib.util.find_spec("sushy_tools") is not None,
         "sushy-tools is not installed in the venv (make venv)")
    lab = Lab(tmp_path_factory.mktemp("faults-lab")).start()
    yield lab
    lab.stop()


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    server = MediaServer(tmp_path_factory.mktemp("faults-media"), address="127.0.11.251")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy(lab):
    proxy = rack_proxy(lab, "127.0.11.4")
    yield proxy
    proxy.stop()

SYSTEM = r"^/redfish/v1/Systems/[^/?]+$"
RESET = r"/Actions/ComputerSystem\.Reset$"
INSERT = r"/Actions/VirtualMedia\.InsertMedia$"

# id: (node index, rules, operation, auth, read timeout, outcome)
# outcome: "ok", "ok+warning" (an answer was lost; the state read back proved the action) or
# "fail:<text the reason must contain>"
CASES = {
    "503-storm-on-reads": (20, [("GET", SYSTEM, "503", 10)], "info", "basic", 5,
                           "fail:HTTP 503"),
    "503-storm-on-an-action": (21, [("POST", RESET, "503", 3)], "on", "session", 5, "ok"),
    "503-storm-beyond-retries": (22, [("POST", RESET, "503", 10)], "on", "session", 5,
                                 "fail:stayed busy"),
    "429-on-an-action": (23, [("POST", RESET, "429", 1)], "on", "session", 5, "ok"),
    "reset-on-reads": (24, [("GET", SYSTEM, "reset", 2)], "on", "session", 5, "ok"),
    "reset-after-the-action-ran": (25, [("POST", RESET, "lost", 1)], "on", "session", 5,
                                   "ok+warning"),
    "reset-before-the-action-ran": (26, [("POST", RESET, "reset", 1)], "on", "session", 5,
                                    "fail:outcome is unknown"),
    "timeout-on-reads": (27, [("GET", SYSTEM, "slow", 1)], "on", "session", 1, "ok"),
    "timeout-on-an-action": (28, [("POST", RESET, "late", 1)], "on", "session", 1, "ok+warning"),
    "timeout-then-503-on-force-restart": (29, [("POST", RESET, "late", 1),
                                               ("POST", RESET, "503", 1)],
                                          "force_restart", "session", 1, "ok+warning"),
    "session-expires-mid-run": (30, [("GET", SYSTEM, "401", 1), ("POST", RESET, "401", 1)], "on",
                                "session", 5, "ok"),
    "malformed-json": (31, [("GET", SYSTEM, "badjson", 1)], "on", "session", 5,
                       "fail:malformed JSON"),
    "redirect-loop": (32, [("GET", SYSTEM, "redirect", 100)], "on", "session", 5,
                      "fail:a redirect to"),
    "insert-media-answer-lost": (33, [("POST", INSERT, "lost", 1)], "provision", "session", 5,
                                 "ok+warning"),
}


def _operation(kind, media):
    def run(client, node):
        sid = node["system_id"]
        if kind == "info":
            return dict(facts=gather(client, sid, subset=("system",)))
        if kind == "provision":
            return provision(client, sid, "cd", image_url=media.url("boot.iso"), power="on",
                             wait=True, timeout=30, poll=0.5)
        return set_power(client, sid, kind, wait=True, timeout=12, poll=0.5)
    return run


def _node(lab, proxy, index, auth, timeout):
    node = lab.nodes[index]
    return dict(name=node["name"], baseuri=proxy.base, system_id=node["system_id"],
                username=lab.cfg["username"], password=lab.cfg["password"], auth=auth,
                validate_certs=True, ca_path=None, timeout=timeout, retries=3)


def _events(lab, name, kind):
    return sum(1 for e in lab.events() if e.get("name") == name and e["event"] == kind)


def _run(node, operation):
    """The node's recorded entry, whatever the failure policy says."""
    try:
        result = fanout.run_fleet([node], operation, workers=1)
    except fanout.FleetFailed as exc:
        result = exc.details
    return result["nodes"][0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bmc_fault(lab, proxy, media, case):
    index, rules, kind, auth, timeout, outcome = CASES[case]
    node = _node(lab, proxy, index, auth, timeout)
    if kind == "force_restart":  # the node must be running first (no faults for this step)
        proxy.set_rules()
        assert not _run(node, _operation("on", media))["failed"]
    before = dict((k, _events(lab, node["name"], k)) for k in ("power_on", "power_off",
                                                                "vmedia_inserted"))
    proxy.set_rules(*rules)
    entry = _run(node, _operation(kind, media))

    # the node's result is recorded, with a one-line reason when it failed
    assert isinstance(entry["failed"], bool) and entry["name"] == node["name"]
    if outcome.startswith("fail:"):
        assert entry["failed"], entry
        assert outcome[5:] in entry["error"] and "\n" not in entry["error"], entry["error"]
        assert node["name"] in entry["error"]
    else:
        assert not entry["failed"], entry["error"]
        assert bool(entry.get("warnings")) == (outcome == "ok+warning"), entry.get("warnings")

    # no action ran twice, counted at the proxy and at the BMC
    action = INSERT if kind == "provision" else RESET
    reached = proxy.forwarded("POST", action)
    assert reached <= 1, proxy.log
    ran = dict((k, _events(lab, node["name"], k) - v) for k, v in before.items())
    assert ran["power_on"] <= 1 and ran["vmedia_inserted"] <= 1, ran
    if outcome.startswith("ok"):
        assert reached == 1
        assert ran["power_on"] == 1 and ran["vmedia_inserted"] == (kind == "provision"), ran
    if kind == "force_restart":
        assert ran["power_off"] == 1, ran  # restarted once, not three times
    assert lab.cfg["password"] not in repr(entry)
