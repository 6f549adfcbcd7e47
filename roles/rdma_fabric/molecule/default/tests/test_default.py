"""Rails are found by MAC or name, addressed, and described in systemd-networkd files."""
import json


def addresses(host, dev):
    data = json.loads(host.check_output("ip -j addr show dev %s" % dev))[0]
    return data, ["%s/%s" % (a["local"], a["prefixlen"]) for a in data["addr_info"] if a["family"] == "inet"]


def test_rail0_found_by_mac_gets_its_address(host):
    data, addrs = addresses(host, "fab0")
    assert addrs == ["10.200.0.18/16"] and data["mtu"] == 1500


def test_rail1_found_by_name_gets_address_and_mtu(host):
    data, addrs = addresses(host, "rail1")
    assert addrs == ["10.201.0.18/16"] and data["mtu"] == 1400 and "UP" in data["flags"]


def test_link_file_renames_by_mac(host):
    link = host.file("/etc/systemd/network/10-gpufleet-rail0.link").content_string
    assert "MACAddress=02:00:00:00:10:01" in link and "Name=rail0" in link


def test_network_file_addresses_the_rail(host):
    net = host.file("/etc/systemd/network/10-gpufleet-rail1.network").content_string
    assert "Name=rail1" in net and "Address=10.201.0.18/16" in net and "MTUBytes=1400" in net


def test_missing_rail_left_no_files(host):
    assert not host.file("/tmp/gpufleet-mol-unused/10-gpufleet-rail7.network").exists
