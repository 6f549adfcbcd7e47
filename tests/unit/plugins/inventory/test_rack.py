import os

import pytest
import yaml
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible import constants as C
from ansible.plugins.loader import fragment_loader
from ansible.utils.plugin_docs import add_fragments
from ansible.template import Templar

from ansible_collections.gpufleet.baremetal.plugins.inventory import rack
from tests.helpers import ROOT

INVENTORIES = os.path.join(ROOT, "inventories")


@pytest.fixture
def plugin():
    """The plugin with its documented options registered, as the plugin loader would do.

    Loaded directly (not through the FQCN loader) so this test does not depend on which
    collection finder earlier tests installed.
    """
    doc = yaml.safe_load(rack.DOCUMENTATION)
    # ansible-core's own fragment by its short name: resolving ansible.builtin.* needs the
    # collection finder, which this direct load avoids.
    doc["extends_documentation_fragment"] = ["constructed"]
    add_fragments(doc, rack.__file__, fragment_loader=fragment_loader)
    C.config.initialize_plugin_configuration_definitions("inventory", rack.InventoryModule.NAME, doc["options"])
    found = rack.InventoryModule()
    found._load_name = rack.InventoryModule.NAME
    return found


def parse(plugin, path):
    inventory = InventoryData()
    plugin.templar = Templar(loader=DataLoader())
    plugin.parse(inventory, DataLoader(), path, cache=False)
    return inventory


@pytest.mark.parametrize("name, ok", [
    ("lab.rack.yml", True), ("x.rack.yaml", True), ("lab.yml", False), ("rack.yml.bak", False)])
def test_verify_file_wants_rack_suffix(plugin, tmp_path, name, ok):
    path = tmp_path / name
    path.write_text("plugin: gpufleet.baremetal.rack\n")
    assert plugin.verify_file(str(path)) is ok


def test_lab_inventory_has_two_racks_of_four(plugin):
    inv = parse(plugin, os.path.join(INVENTORIES, "lab.rack.yml"))
    assert sorted(h.name for h in inv.groups["rack_r1"].get_hosts()) == ["lab-r1n1", "lab-r1n2", "lab-r1n3", "lab-r1n4"]
    assert len(inv.groups["sku_lab"].get_hosts()) == 8
    hv = inv.get_host("lab-r2n3").vars
    assert hv["gpufleet_bmc_address"] == "https://127.0.20.2:8443"
    assert hv["ansible_host"] == "gpufleet-lab-lab-r2n3"
    assert hv["gpufleet_bmc_password"] == "{{ vault_gpufleet_bmc_password }}"


def test_production_rack_has_32_nodes_with_8_rails(plugin):
    inv = parse(plugin, os.path.join(INVENTORIES, "prod-rack42.rack.yml"))
    hosts = inv.groups["rack_r42"].get_hosts()
    assert len(hosts) == 32
    assert "sku_h100_sxm_8x400" in inv.groups
    addresses = [r["address"] for h in hosts for r in h.vars["gpufleet_rails"]]
    assert len(addresses) == 32 * 8 == len(set(addresses))


def test_keyed_groups_from_constructable(plugin, tmp_path):
    text = open(os.path.join(INVENTORIES, "lab.rack.yml")).read()
    path = tmp_path / "k.rack.yml"
    path.write_text(text + "keyed_groups:\n  - key: gpufleet_image_version\n    prefix: image\n")
    inv = parse(plugin, str(path))
    assert len(inv.groups["image_lab"].get_hosts()) == 8


def test_invalid_description_is_a_parser_error_naming_the_file_and_entry(plugin, tmp_path):
    text = open(os.path.join(INVENTORIES, "lab.rack.yml")).read().replace("index: 2", "index: 1")
    path = tmp_path / "bad.rack.yml"
    path.write_text(text)
    with pytest.raises(AnsibleParserError, match=r"bad.rack.yml: .*racks\[1\].*rack index 1 is also used by rack r1"):
        parse(plugin, str(path))
