import copy

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.rack import build_hosts

BASE = {
    "fleet": {
        "hostname_pattern": "{rack}n{slot:02d}", "domain": "lab.test", "image_version": "2026.06.2",
        "bmc": {"address": "https://127.0.20.{rack_index}:8443", "system_id": "{hostname}",
                "credentials": {"username": "admin", "password": "{{ vault_bmc_password }}"}},
    },
    "fabric": {"mode": "roce", "mtu": 1500, "rack_stride": 16,
               "rails": [{"name": "rail0", "subnet": "10.200.0.0/16"}, {"name": "rail1", "subnet": "10.201.0.0/16"}]},
    "skus": {"lab": {"gpu_count": 0, "features": ["lab"]}, "h100": {"gpu_count": 8, "gpu_type": "h100", "rails": ["rail0"]}},
    "racks": [{"name": "r1", "index": 1, "slots": 4, "sku": "lab", "nodes": "all"},
              {"name": "r2", "index": 2, "slots": 4, "sku": "lab", "nodes": [{"slot": 2, "sku": "h100"}]}],
}


def desc(**changes):
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        target = data
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return data


def by_name(hosts):
    return {h["name"]: h for h in hosts}


def test_expands_all_slots_and_listed_nodes():
    hosts = by_name(build_hosts(desc()))
    assert sorted(hosts) == ["r1n01", "r1n02", "r1n03", "r1n04", "r2n02"]
    assert hosts["r2n02"]["groups"] == ["rack_r2", "sku_h100"]


def test_per_node_vars():
    hv = by_name(build_hosts(desc()))["r1n03"]["vars"]
    assert hv["gpufleet_fqdn"] == "r1n03.lab.test"
    assert hv["gpufleet_bmc_address"] == "https://127.0.20.1:8443"
    assert hv["gpufleet_bmc_system_id"] == "r1n03"
    assert hv["gpufleet_bmc_password"] == "{{ vault_bmc_password }}"
    assert [r["cidr"] for r in hv["gpufleet_rails"]] == ["10.200.0.19/16", "10.201.0.19/16"]
    assert hv["gpufleet_gate_profile"] == "lab" and hv["gpufleet_image_version"] == "2026.06.2"


def test_sku_rail_subset_and_gpus():
    hv = by_name(build_hosts(desc()))["r2n02"]["vars"]
    assert [r["name"] for r in hv["gpufleet_rails"]] == ["rail0"]
    assert (hv["gpufleet_gpu_count"], hv["gpufleet_gpu_type"]) == (8, "h100")


def test_addresses_are_deterministic_regardless_of_other_nodes():
    full = by_name(build_hosts(desc()))
    sparse = by_name(build_hosts(desc(racks__0__nodes=[{"slot": 3}])))
    assert full["r1n03"]["vars"]["gpufleet_rails"] == sparse["r1n03"]["vars"]["gpufleet_rails"]


def test_bmc_network_gives_one_address_per_node():
    data = desc(fleet__bmc__network="10.10.0.0/16", fleet__bmc__address=None)
    hv = by_name(build_hosts(data))["r1n02"]["vars"]
    assert hv["gpufleet_bmc_address"] == "https://10.10.0.18"


def test_host_vars_are_formatted_but_jinja_is_kept():
    data = desc(fleet__host_vars={"ansible_host": "gpufleet-lab-{hostname}", "x": "{{ y }}"})
    hv = by_name(build_hosts(data))["r1n01"]["vars"]
    assert hv["ansible_host"] == "gpufleet-lab-r1n01" and hv["x"] == "{{ y }}"


def test_sku_links_with_node_override():
    data = desc(skus__lab__links={"rail0": {"pci_path": "pci-0000:18:00.0"}},
                racks__0__nodes=[{"slot": 1, "rails": {"rail0": {"mac": "02:00:00:00:00:01"}}}])
    rail0 = by_name(build_hosts(data))["r1n01"]["vars"]["gpufleet_rails"][0]
    assert (rail0["pci_path"], rail0["mac"]) == ("pci-0000:18:00.0", "02:00:00:00:00:01")


@pytest.mark.parametrize("changes, entry, problem", [
    ({"racks__0__nodes": [{"slot": 5}]}, "racks[0] (r1).nodes[0]", "slot 5 is out of range 1..4"),
    ({"racks__0__nodes": [{"slot": 0}]}, "racks[0] (r1).nodes[0]", "slot 0 is out of range"),
    ({"racks__1__index": 1}, "racks[1]", "rack index 1 is also used by rack r1"),
    ({"fabric__rails__1": {"name": "rail1", "subnet": "10.200.128.0/17"}}, "rail0", "overlaps 10.200.128.0/17"),
    ({"fleet__bmc__network": "10.201.0.0/24", "fleet__bmc__address": None}, "rail1", "overlaps 10.201.0.0/24"),
    ({"fleet__image_version": None}, "fleet", "required field 'image_version' is missing"),
    ({"racks__0__slots": None}, "racks[0] (r1)", "required field 'slots' is missing"),
    ({"racks__0__sku": "nope"}, "racks[0] (r1).nodes[0]", "SKU 'nope' is not defined"),
    ({"fleet__hostname_pattern": "node{slot}"}, "racks[1] (r2).nodes[0]", "hostname node2 is also used"),
    ({"racks__0__nodes": [{"slot": 1, "rails": {"rail0": {"mac": "02:00:00:00:00:01"}}},
                          {"slot": 2, "rails": {"rail0": {"mac": "02:00:00:00:00:01"}}}]},
     "racks[0] (r1).nodes[1]", "rail MAC 02:00:00:00:00:01 is also used"),
    ({"fleet__bmc__system_id": "1"}, "racks[0] (r1).nodes[1]", "BMC ('https://127.0.20.1:8443', '1') is also used"),
    ({"fleet__bmc__credentials": {"username": "admin", "password": "hunter2"}}, "racks[0] (r1).nodes[0].bmc.credentials.password",
     "written inline in plain text"),
    ({"fleet__hostname_pattern": "{row}-{slot}"}, "fleet.hostname_pattern", "cannot be expanded"),
    ({"fabric__mode": "ethernet"}, "fabric.mode", "mode 'ethernet' is unknown"),
    ({"fabric__rack_stride": 4}, "racks[0] (r1)", "4 slots do not fit fabric.rack_stride 4"),
    ({"skus__h100__rails": ["rail9"]}, "skus.h100.rails", "rails ['rail9'] are not defined"),
    ({"racks__0__slots": "four"}, "racks[0] (r1).slots", "expected an integer"),
])
def test_invalid_descriptions_name_the_entry(changes, entry, problem):
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(**changes))
    assert err.value.entry == entry
    assert problem in err.value.msg


def test_plaintext_password_allowed_when_asked():
    data = desc(fleet__bmc__credentials={"username": "admin", "password": "hunter2"})
    assert build_hosts(data, allow_plaintext_credentials=True)[0]["vars"]["gpufleet_bmc_password"] == "hunter2"


def test_error_message_does_not_echo_password():
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(fleet__bmc__credentials={"username": "admin", "password": "hunter2"}))
    assert "hunter2" not in err.value.msg
