"""Every redfish module through ansible-playbook on a 50-system emulated rack (TLS, auth)."""
import collections

import pytest

from tests.integration.redfish.lab_fixture import run_playbook

pytestmark = pytest.mark.integration


def test_every_module_on_fifty_systems(lab, media, conn):
    extra = dict(conn, rf_nodes=lab.nodes, rf_image=media.url("boot.iso"))
    seen = len(lab.events())
    rc, tasks, out = run_playbook("fleet.yml", extra)
    failed = [name for name, res in tasks.items() if res.get("failed")]
    assert rc == 0, "failed tasks: %s\n%s" % (failed, out[-4000:])
    assert lab.cfg["password"] not in out
    # The lab's event hook saw every change land.
    per_node = collections.defaultdict(list)
    for event in lab.events()[seen:]:
        per_node[event["name"]].append(event["event"])
    for node in lab.nodes:
        events = per_node[node["name"]]
        assert events.count("vmedia_inserted") == 1 and events.count("vmedia_ejected") == 1
        power = [e for e in events if e.startswith("power_")]
        # power on (unless a fault test left it on), power cycle, power off. The emulator may
        # not report the cycle's short "off" (it lands between two reads), so the cycle is
        # proven by a power_on after the first power event; the last one must be power_off.
        assert power and power[-1] == "power_off", (node["name"], events)
        assert "power_on" in power[1:-1], (node["name"], events)


def test_check_mode_changes_nothing(lab, media, conn):
    nodes = lab.nodes[:5]
    extra = dict(conn, rf_nodes=nodes, rf_image=media.url("tools.img"))
    before = len(lab.events())
    rc, tasks, out = run_playbook("check_mode.yml", extra, check=True)
    assert rc == 0, out[-3000:]
    assert tasks["Power on"]["changed"] is True
    assert tasks["Insert the tools image"]["changed"] is True
    assert tasks["Read power state"]["nodes"][0]["facts"]["system"]["power_state"] == "Off"
    assert len(lab.events()) == before
