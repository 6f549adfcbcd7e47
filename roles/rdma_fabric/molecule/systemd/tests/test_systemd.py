"""systemd-networkd, started by the role, gives each rail (found by MAC) its address and MTU."""
import json

import pytest

RAILS = [("fab0", "rail0", "10.200.0.18/16", 1400), ("fab1", "rail1", "10.201.0.18/16", 1300)]


def test_networkd_is_enabled_and_running(host):
    service = host.service("systemd-networkd")
    assert service.is_enabled and service.is_running


@pytest.mark.parametrize("device,rail,cidr,mtu", RAILS)
def test_rail_has_its_address_and_mtu(host, device, rail, cidr, mtu):
    data = json.loads(host.check_output("ip -j addr show dev %s" % device))[0]
    addrs = ["%s/%s" % (a["local"], a["prefixlen"]) for a in data["addr_info"] if a["family"] == "inet"]
    assert addrs == [cidr] and data["mtu"] == mtu, (rail, data)
    assert "UP" in data["flags"]


@pytest.mark.parametrize("device,rail,cidr,mtu", RAILS)
def test_networkd_manages_the_rail(host, device, rail, cidr, mtu):
    status = host.check_output("networkctl status --no-pager %s" % device)
    assert "10-gpufleet-%s.network" % rail in status and "configured" in status, status


def test_other_links_are_left_alone(host):
    status = host.check_output("networkctl list --no-pager --no-legend")
    lines = {line.split()[1]: line for line in status.splitlines()}
    assert "unmanaged" in lines["eth0"] and "unmanaged" in lines["fab0p"], status


@pytest.mark.parametrize("device,rail,cidr,mtu", RAILS)
def test_netplan_file_generates_networkd_files(host, device, rail, cidr, mtu):
    # The real netplan (0.106) parses the role's netplan file and renders networkd files from it.
    host.check_output("netplan generate --root-dir /tmp/gpufleet-netplan")
    net = host.file("/tmp/gpufleet-netplan/run/systemd/network/10-netplan-%s.network" % rail).content_string
    mac = host.file("/sys/class/net/%s/address" % device).content_string.strip()
    assert "PermanentMACAddress=%s" % mac in net and "Address=%s" % cidr in net and "MTUBytes=%d" % mtu in net, net
