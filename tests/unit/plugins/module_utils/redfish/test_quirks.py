import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.quirks import (
    QUIRKS, quirk, vendor_of,
)


@pytest.mark.parametrize("manufacturer, vendor", [
    ("Supermicro", "supermicro"), ("NVIDIA", "nvidia"), ("NVIDIA Corporation", "nvidia"),
    ("Hewlett Packard Enterprise", "hpe"), ("Dell Inc.", "dell"), (None, ""), ("", "")])
def test_vendor_of(manufacturer, vendor):
    assert vendor_of({"Manufacturer": manufacturer}) == vendor


def test_quirk_lookup_and_default():
    assert quirk({"Manufacturer": "Supermicro"}, "boot_target_alias") == {"Cd": "UsbCd"}
    assert quirk({"Manufacturer": "Contoso"}, "boot_target_alias", "none") == "none"


@pytest.mark.parametrize("vendor", sorted(QUIRKS))
def test_every_quirk_has_a_vendor_fixture(rf, vendor):
    tree = rf.load_tree(vendor)
    assert vendor_of(tree["/redfish/v1/Systems/1"]) == vendor
