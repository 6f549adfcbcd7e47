"""redfish_provision through ansible-playbook on the emulated rack (TLS, sessions, 20 nodes)."""
import collections

import pytest

from tests.integration.redfish.lab_fixture import run_playbook

pytestmark = pytest.mark.integration


def test_provision_media_boot_power_in_one_task(lab, media, conn):
    nodes = lab.nodes[20:40]
    image = media.url("boot.iso")
    seen = len(lab.events())
    rc, tasks, out = run_playbook("provision.yml", dict(conn, rf_nodes=nodes, rf_image=image))
    assert rc == 0, out[-4000:]
    assert lab.cfg["password"] not in out

    staged = tasks["Stage media and boot"]
    assert staged["summary"] == {"total": 20, "changed": 20, "failed": 0}
    for entry in staged["nodes"]:
        assert entry["media"]["image"] == image and entry["media"]["inserted"] is True
        assert entry["boot"]["applied"] == {"target": "Cd", "enabled": "Once", "mode": "UEFI"}
        assert entry["power"] is None
    assert tasks["Stage media and boot again"]["changed"] is False

    powered = tasks["Provision"]
    for entry in powered["nodes"]:
        assert (entry["media"]["changed"], entry["boot"]["changed"]) == (False, False)
        assert (entry["power"]["before"], entry["power"]["state"]) == ("Off", "On")

    # The boot consumed the one-time override (the lab BMC clears it, as real BMCs do): a
    # re-run arms it again for the next boot, leaves the running node alone and says so.
    after_boot = tasks["Provision after the node booted"]
    for entry in after_boot["nodes"]:
        assert entry["boot"]["before"]["enabled"] != "Once" and entry["boot"]["changed"] is True
        assert (entry["media"]["changed"], entry["power"]["changed"]) == (False, False)
    assert len([w for w in after_boot.get("warnings", []) if "already On" in w]) == 20

    restart = tasks["Provision again, rebooting into it"]
    assert [e["power"]["reset_type"] for e in restart["nodes"]] == ["ForceRestart"] * 20
    assert all(e["media"]["changed"] is False for e in restart["nodes"])

    # The lab's event hook saw the media land once and the node power on, per node.
    per_node = collections.defaultdict(list)
    for event in lab.events()[seen:]:
        per_node[event["name"]].append(event["event"])
    for node in nodes:
        events = per_node[node["name"]]
        assert events.count("vmedia_inserted") == 1, (node["name"], events)
        assert "power_on" in events, (node["name"], events)
