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
from tests.unit.plugins.module_utils.inventory.test_rack import bomb

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


def _lab_variant(tmp_path, name, old, new, prefix="", source=os.path.join(INVENTORIES, "lab.rack.yml")):
    with open(source) as handle:
        text = handle.read()
    assert old in text
    path = tmp_path / name
    path.write_text(prefix + text.replace(old, new, 1))
    return str(path)


def test_a_node_bmc_address_wins_over_the_fleet_network(plugin, tmp_path):
    path = _lab_variant(tmp_path, "net.rack.yml", "  - {name: r1, index: 1, slots: 4, sku: lab, nodes: all}",
                        "  - {name: r1, index: 1, slots: 4, sku: lab,\n"
                        "     nodes: [{slot: 1}, {slot: 2, bmc: {address: 'https://10.99.0.2'}}]}")
    path = _lab_variant(tmp_path, "net.rack.yml", '    address: "https://127.0.20.{rack_index}:8443"\n',
                        "    network: 10.10.0.0/16\n", source=path)
    inv = parse(plugin, path)
    assert inv.get_host("lab-r1n2").vars["gpufleet_bmc_address"] == "https://10.99.0.2"
    assert inv.get_host("lab-r1n1").vars["gpufleet_bmc_address"] == "https://10.10.0.17"


@pytest.mark.parametrize("old, new, prefix, message", [
    ("  rack_stride: 16\n", "  rack_stride: 16\n  rack_stride: 8\n", "", r"line 24 is invalid: key 'rack_stride' appears twice"),
    ("  host_vars:\n", "  host_vars:\n    bomb: *l6\n", bomb(6), r"\(file\) is invalid: expands to more than 1000000 values"),
    ("plugin: gpufleet.baremetal.rack\n", "plugin: gpufleet.baremetal.rack\nrakcs: []\n", "",
     r"\(top level\) is invalid: unknown keys rakcs\. Fix: Use only: .*racks"),
    ("plugin: gpufleet.baremetal.rack\n", "plugin: gpufleet.baremetal.rack\ncompose: [x]\n", "",
     r"\(top level\) is invalid: .*compose"),
    ("plugin: gpufleet.baremetal.rack\n", "plugin: gpufleet.baremetal.rackk\n", "",
     r"plugin is invalid: 'gpufleet.baremetal.rackk' is not this plugin. Fix: Start the file with"),
])
def test_the_file_is_read_strictly_naming_the_line_and_the_fix(plugin, tmp_path, old, new, prefix, message):
    # The bomb is hung under fleet.host_vars: Ansible's loader read it and every host got it.
    path = _lab_variant(tmp_path, "strict.rack.yml", old, new, prefix)
    with pytest.raises(AnsibleParserError, match=r"strict.rack.yml: Rack description entry " + message):
        parse(plugin, path)


@pytest.mark.parametrize("content, message", [(b"", "the file is empty"), (b"# nothing\n", "the file is empty"),
                                              (b"plugin: gpufleet.baremetal.rack\nfleet: \xff\n", "not UTF-8 text")])
def test_an_empty_or_non_utf8_file_is_an_error(plugin, tmp_path, content, message):
    path = tmp_path / "e.rack.yml"
    path.write_bytes(content)
    with pytest.raises(AnsibleParserError, match=message):
        parse(plugin, str(path))


def test_compose_and_groups_options_still_apply(plugin, tmp_path):
    text = open(os.path.join(INVENTORIES, "lab.rack.yml")).read()
    path = tmp_path / "c.rack.yml"
    path.write_text(text + "compose:\n  slot_x10: gpufleet_slot * 10\ngroups:\n  first: gpufleet_slot == 1\n")
    inv = parse(plugin, str(path))
    assert inv.get_host("lab-r2n3").vars["slot_x10"] == 30
    assert sorted(h.name for h in inv.groups["first"].get_hosts()) == ["lab-r1n1", "lab-r2n1"]
