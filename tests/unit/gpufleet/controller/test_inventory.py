"""The inventory reader: hosts, groups, SKU, and where each host sits on the fabric."""
import json

import pytest

from gpufleet.controller.errors import ControllerError
from gpufleet.controller.inventory import fabric_places, parse_inventory


def listing(**hostvars):
    return json.dumps({"_meta": {"hostvars": hostvars},
                       "sku_lab": {"hosts": sorted(hostvars)}, "all": {"children": ["sku_lab"]}})


def test_rack_and_fabric_set_are_read_per_host_and_default_to_empty():
    hosts = parse_inventory(listing(
        n1={"gpufleet_sku": "lab", "gpufleet_rack": "r1", "gpufleet_fabric_set": "su1"},
        n2={"gpufleet_sku": "lab", "gpufleet_rack": {"__ansible_unsafe": "r2"}, "gpufleet_fabric_set": 7},
        n3={"gpufleet_sku": "lab"}))
    assert (hosts["n1"].rack, hosts["n1"].fabric_set, hosts["n1"].groups) == ("r1", "su1", ("sku_lab",))
    assert (hosts["n2"].rack, hosts["n2"].fabric_set) == ("r2", "7")
    assert fabric_places(hosts) == {"n1": ("su1", "r1"), "n2": ("7", "r2"), "n3": ("", "")}


@pytest.mark.parametrize("value", [["su1"], {"name": "su1"}, True])
def test_a_fabric_set_that_is_not_a_name_is_refused_naming_the_host_and_variable(value):
    with pytest.raises(ControllerError) as err:
        parse_inventory(listing(n1={"gpufleet_fabric_set": value}))
    assert "Host n1: gpufleet_fabric_set" in str(err.value) and "Fix the inventory" in str(err.value)
