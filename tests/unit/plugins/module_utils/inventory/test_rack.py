import copy
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.rack import (
    build_hosts, load_description, parse_description)

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


# BMC address precedence: the most specific level that sets address or network decides.

def _bmc_network(**changes):
    return desc(fleet__bmc__network="10.10.0.0/16", fleet__bmc__address=None, **changes)


def test_a_node_address_wins_over_the_fleet_network():
    data = _bmc_network(racks__0__nodes=[{"slot": 1, "bmc": {"address": "https://10.99.0.1:8443"}}, {"slot": 2}])
    hosts = by_name(build_hosts(data))
    assert hosts["r1n01"]["vars"]["gpufleet_bmc_address"] == "https://10.99.0.1:8443"
    assert hosts["r1n02"]["vars"]["gpufleet_bmc_address"] == "https://10.10.0.18"  # still derived


def test_a_rack_address_wins_over_the_fleet_network_and_a_node_network_over_the_rack_address():
    data = _bmc_network(racks__0__bmc={"address": "https://bmc-{hostname}"},
                        racks__0__nodes=[{"slot": 1}, {"slot": 2, "bmc": {"network": "10.11.0.0/16"}}])
    hosts = by_name(build_hosts(data))
    assert hosts["r1n01"]["vars"]["gpufleet_bmc_address"] == "https://bmc-r1n01"
    assert hosts["r1n02"]["vars"]["gpufleet_bmc_address"] == "https://10.11.0.18"
    assert hosts["r2n02"]["vars"]["gpufleet_bmc_address"] == "https://10.10.0.34"


def test_one_level_with_both_address_and_network_is_refused():
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(fleet__bmc__network="10.10.0.0/16"))
    assert err.value.entry == "fleet.bmc" and "sets both address and network" in err.value.msg


def test_an_explicit_address_on_another_nodes_derived_address_is_a_duplicate():
    # https://10.10.0.18:443/ is the BMC derived for r1n02 (rack 1, slot 2, stride 16), written another way.
    data = _bmc_network(racks__0__nodes=[{"slot": 1, "bmc": {"address": "https://10.10.0.18:443/"}}, {"slot": 2}],
                        fleet__bmc__system_id="1")
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(data)
    assert err.value.entry == "racks[0] (r1).nodes[1]" and "is also used by racks[0] (r1).nodes[0]" in err.value.msg


def test_an_ipv6_bmc_network_gives_a_bracketed_url():
    data = desc(fleet__bmc__network="fd00:10::/64", fleet__bmc__address=None, fleet__bmc__port=8443)
    assert by_name(build_hosts(data))["r1n02"]["vars"]["gpufleet_bmc_address"] == "https://[fd00:10::12]:8443"


@pytest.mark.parametrize("pattern, problem", [
    ("{rack.__class__}{slot}", "{rack.__class__} is not a placeholder"),
    ("{rack[0]}{slot}", "{rack[0]} is not a placeholder"),
    ("{rack}{slot:999999999}", "only a width of at most 2 digits"),
    ("{rack}{slot:100}", "only a width of at most 2 digits"),
    ("{rack}{slot!r}", "takes no conversion"),
    ("{rack}{slot:{rack_index}}", "only a width of at most 2 digits"),
    ("{0}{slot}", "{0} is not a placeholder"),
    ("{rack}{slot", "cannot be expanded"),
    ("{rack:d}{slot}", "Unknown format code"),
    ("{rack} {slot}", "not a host name"),
    ("{rack}.{slot}", "not a host name"),
])
def test_hostname_patterns_allow_only_the_placeholders_with_a_width(pattern, problem):
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(fleet__hostname_pattern=pattern))
    assert err.value.entry == "fleet.hostname_pattern"
    assert problem in err.value.msg and "Fix: " in err.value.msg


@pytest.mark.parametrize("pattern, name", [
    ("{rack}n{slot:02d}", "r1n03"), ("{rack}-{slot:0>3}", "r1-003"), ("x{rack_index:x}-{slot:2d}", None)])
def test_simple_format_specs_still_work(pattern, name):
    try:
        hosts = by_name(build_hosts(desc(fleet__hostname_pattern=pattern)))
    except RackDescriptionError as exc:
        assert name is None and "not a host name" in exc.msg  # "{slot:2d}" pads with a space
    else:
        assert name in hosts


@pytest.mark.parametrize("changes, entry, problem", [
    ({"fleet__bmc__address": "https://999.1.1.{slot}"}, "racks[0] (r1).nodes[0].bmc.address (from fleet.bmc)",
     "invalid IPv4 address"),
    ({"racks__0__nodes": [{"slot": 1, "bmc": {"address": "999.1.1.1"}}]}, "racks[0] (r1).nodes[0].bmc.address",
     "invalid IPv4 address"),
    ({"racks__0__bmc": {"address": "https://10.0.0.{slot}.5"}}, "racks[0] (r1).nodes[0].bmc.address (from racks[0] (r1).bmc)",
     "invalid IPv4 address"),
    ({"fleet__bmc__address": "https://[fd00::{slot}zz]"}, "racks[0] (r1).nodes[0].bmc.address (from fleet.bmc)",
     "does not appear to be an IPv4 or IPv6 address"),
    ({"fleet__bmc__address": "https://bmc-{slot}:99999"}, "racks[0] (r1).nodes[0].bmc.address (from fleet.bmc)",
     "Port out of range"),
    ({"fleet__bmc__address": "ftp://bmc-{hostname}"}, "racks[0] (r1).nodes[0].bmc.address (from fleet.bmc)",
     "has scheme 'ftp'"),
    ({"fleet__bmc__address": "https://bmc_{hostname}!"}, "racks[0] (r1).nodes[0].bmc.address (from fleet.bmc)",
     "invalid host name"),
    ({"fleet__bmc__network": "999.10.0.0/16", "fleet__bmc__address": None}, "racks[0] (r1).nodes[0].bmc.network",
     "is not a network in CIDR form"),
    ({"fabric__rails__0": {"name": "rail0", "subnet": "10.999.0.0/16"}}, "fabric.rails[0].subnet",
     "is not a network in CIDR form"),
])
def test_addresses_are_validated_naming_the_field(changes, entry, problem):
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(**changes))
    assert err.value.entry == entry and problem in err.value.msg, err.value.msg


@pytest.mark.parametrize("address", ["https://127.0.20.1{rack_index}:8443", "http://bmc-{hostname}.oob.example.com",
                                     "bmc-{hostname}", "https://[fd00::{slot}]:8443", "https://10.0.0.{slot}/redfish-proxy"])
def test_valid_addresses_pass(address):
    assert len(build_hosts(desc(fleet__bmc__address=address))) == 5


def test_a_password_in_the_bmc_url_is_refused_and_not_echoed():
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(fleet__bmc__address="https://admin:hunter2@bmc-{hostname}:99999"))
    assert "carries credentials" in err.value.msg and "hunter2" not in err.value.msg


@pytest.mark.parametrize("changes, entry, problem", [
    ({"racks__0__nodes": [{"slot": 1, "rails": {"rail0": {"mac": 2248757699}}}]},
     "racks[0] (r1).nodes[0].rails.rail0.mac", "expected a string"),  # YAML 1.1: 10:20:30:40:50:59 unquoted
    ({"racks__0__nodes": [{"slot": 1, "rails": {"rail0": {"mac": "02:00:00:00:00"}}}]},
     "racks[0] (r1).nodes[0].rails.rail0.mac", "is not a MAC address"),
    ({"skus__lab__links": {"rail0": "pci-0000:18:00.0"}}, "racks[0] (r1).nodes[0].rails.rail0", "expected a mapping"),
    ({"fleet__bmc__validate_certs": "false"}, "racks[0] (r1).nodes[0].bmc.validate_certs", "expected true or false"),
    ({"fleet__bmc__system_id": ["1"]}, "racks[0] (r1).nodes[0].bmc.system_id", "expected a string"),
    ({"fleet__host_vars": {"ansible host": "x"}}, "fleet.host_vars", "'ansible host' is not a variable name"),
    ({"racks__0__image_version": 2026.1}, "racks[0] (r1).image_version", "expected a string"),
    ({"fleet__domain": "lab..test"}, "fleet.domain", "is not a DNS domain"),
])
def test_typed_fields_that_were_coerced_are_refused(changes, entry, problem):
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(**changes))
    assert err.value.entry == entry and problem in err.value.msg, err.value.msg


def test_every_message_carries_a_fix():
    with pytest.raises(RackDescriptionError) as err:
        build_hosts(desc(fleet__image_version=None))
    assert err.value.msg.endswith("is invalid: required field 'image_version' is missing. Fix: Add fleet.image_version.")


# Reading the file: the strict YAML reader, errors naming the line and the fix.

LAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "inventories", "lab.rack.yml")


def _lab_text():
    with open(LAB) as handle:
        return handle.read()


def bomb(levels, width=10):
    """A "billion laughs" YAML: ``levels`` of ``width`` aliases to the level below."""
    lines = ["l0: &l0 [%s]" % ", ".join(["lol"] * width)]
    lines += ["l%d: &l%d [%s]" % (i, i, ", ".join(["*l%d" % (i - 1)] * width)) for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_the_lab_description_reads_as_before():
    assert len(build_hosts(load_description(LAB))) == 8


@pytest.mark.parametrize("text, entry, problem", [
    ("", "(file)", "the file is empty"),
    ("# only a comment\n---\n", "(file)", "the file is empty"),
    ("- plugin: gpufleet.baremetal.rack\n", "(top level)", "the description is list, not a mapping"),
    ("fleet: {}\nfleet: {}\n", "line 2", "key 'fleet' appears twice (first on line 1)"),
    ("fleet: [" * 100 + "]" * 100, "line 1", "nested deeper than 64 levels"),
    ("fleet: {a: 1\n", "line 2", "not valid YAML"),
    (b"fleet: \xff\n", "(file)", "not UTF-8 text"),
])
def test_bad_yaml_is_refused_naming_the_line_and_the_fix(text, entry, problem):
    with pytest.raises(RackDescriptionError) as err:
        parse_description(text)
    assert err.value.entry == entry and problem in err.value.msg and ". Fix: " in err.value.msg, err.value.msg


def test_a_duplicate_key_in_the_lab_description_is_refused():
    text = _lab_text().replace("  rack_stride: 16\n", "  rack_stride: 16\n  rack_stride: 8\n")
    with pytest.raises(RackDescriptionError) as err:
        parse_description(text)
    assert err.value.entry.startswith("line ") and "'rack_stride' appears twice" in err.value.msg


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    text = bomb(6) + _lab_text().replace("  host_vars:\n", "  host_vars:\n    bomb: *l6\n")
    with pytest.raises(RackDescriptionError) as err:
        parse_description(text)
    assert "expands to more than" in err.value.msg and "Fix: Write the values out" in err.value.msg


@pytest.mark.parametrize("path, problem", [("/dev/zero", "not a regular file"), ("/nonexistent/x.rack.yml", "cannot read it")])
def test_a_path_that_is_no_file_is_refused(path, problem):
    with pytest.raises(RackDescriptionError) as err:
        load_description(path)
    assert problem in err.value.msg
