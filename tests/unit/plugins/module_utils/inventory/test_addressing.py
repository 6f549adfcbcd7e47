import ipaddress

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import (
    check_overlaps, offset_address, parse_network, rail_offset)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError


@pytest.mark.parametrize("rack, slot, stride, expected", [
    (1, 1, 64, "10.200.0.65"), (42, 7, 64, "10.200.10.135"), (0, 1, 16, "10.200.0.1"), (2, 4, 16, "10.200.0.36"),
])
def test_offset_address_is_rack_times_stride_plus_slot(rack, slot, stride, expected):
    net = parse_network("10.200.0.0/16", "rail0")
    assert str(offset_address(net, rail_offset(rack, slot, stride), "n")) == expected


@pytest.mark.parametrize("offset", [0, 254, 1000])
def test_offset_outside_usable_hosts_fails(offset):
    net = parse_network("10.0.0.0/24", "rail0")
    with pytest.raises(RackDescriptionError, match="outside the usable hosts of 10.0.0.0/24"):
        offset_address(net, offset + (0 if offset == 0 else 1), "racks[0]")


@pytest.mark.parametrize("text", ["10.0.0.1/16", "not-a-net", "10.0.0.0/33"])
def test_parse_network_rejects_bad_cidr(text):
    with pytest.raises(RackDescriptionError, match="fabric.rails\\[0\\].subnet"):
        parse_network(text, "fabric.rails[0].subnet")


def test_overlapping_networks_name_both():
    nets = [("rail0", ipaddress.ip_network(u"10.0.0.0/16")), ("rail1", ipaddress.ip_network(u"10.1.0.0/16")),
            ("bmc", ipaddress.ip_network(u"10.0.128.0/24"))]
    with pytest.raises(RackDescriptionError) as err:
        check_overlaps(nets)
    assert err.value.entry == "rail0" and "of bmc" in err.value.msg


def test_disjoint_networks_pass():
    check_overlaps([("a", ipaddress.ip_network(u"10.0.0.0/16")), ("b", ipaddress.ip_network(u"10.1.0.0/16"))])
