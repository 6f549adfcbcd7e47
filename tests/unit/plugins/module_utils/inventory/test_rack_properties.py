"""Property tests: the rack description loader on generated garbage (hypothesis).

Three properties over the valid description of test_rack.BASE:
- any value anywhere replaced by any JSON value: a RackDescriptionError or hosts, nothing else;
- a typed field given a value of another type: a RackDescriptionError naming that field;
- counts and indexes drawn from all integers: accepted only when they make sense (one host
  per slot, slots at least 1), else an error naming the field.

And over the files a user writes (read as the plugin reads them, with the strict YAML reader):
- the shipped descriptions in inventories/ with one value replaced, deleted or a key added
  anywhere in the tree; arbitrary texts; a shipped text with arbitrary text spliced in;
  arbitrary bytes; patterns (host name, BMC address, system id) from pattern-like text.
  Each gives hosts with valid host names, or a RackDescriptionError naming a field (or the
  YAML line) with a fix; never another exception. The counts go to docs/reliability.md.
"""
import copy
import ipaddress
import os
import re

from urllib.parse import urlsplit

import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import (
    RackDescriptionError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.rack import build_hosts, parse_description
from tests.helpers import ROOT
from tests.unit.json_strategies import EXAMPLES, JSON, PROPERTY, is_kind
from tests.unit.plugins.module_utils.inventory.test_rack import BASE
from tests.yaml_mutations import VALUES, key_paths, mutate


def _paths(data, prefix=()):
    """Every path into BASE (dict keys and list indexes), inner nodes included."""
    out = [prefix] if prefix else []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        out.extend(_paths(value, prefix + (key,)))
    return out


PATHS = _paths(BASE)

# path -> kind of the value the loader must insist on
TYPED = {
    ("fleet", "hostname_pattern"): "text", ("fleet", "domain"): "text",
    ("fleet", "image_version"): "text", ("fleet", "bmc"): "object",
    ("fabric", "mtu"): "integer", ("fabric", "rack_stride"): "integer", ("fabric", "rails"): "list",
    ("fabric", "rails", 0, "subnet"): "text", ("skus", "lab", "gpu_count"): "integer",
    ("skus", "lab", "features"): "list", ("skus", "h100", "rails"): "list",
    ("racks", 0, "name"): "text", ("racks", 0, "index"): "integer", ("racks", 0, "slots"): "integer",
    ("racks", 1, "nodes", 0, "slot"): "integer", ("racks", 1, "nodes"): "list",
}


def replaced(path, value):
    data = copy.deepcopy(BASE)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@PROPERTY
@given(st.sampled_from(PATHS), JSON)
def test_any_value_anywhere_is_hosts_or_a_named_error(path, value):
    try:
        hosts = build_hosts(replaced(path, value))
    except RackDescriptionError as exc:
        assert exc.entry and exc.msg.startswith("Rack description entry ")
    else:
        assert all(isinstance(h["name"], str) and h["name"] for h in hosts)


@PROPERTY
@given(st.sampled_from(sorted(TYPED, key=str)), JSON)
def test_a_wrong_type_is_refused_naming_the_field(path, value):
    kind = TYPED[path]
    if value is None or is_kind(value, kind) or (path[-1] == "nodes" and value == "all"):
        return  # not a wrong type (None means absent: covered by the defaults)
    try:
        build_hosts(replaced(path, value))
    except RackDescriptionError as exc:
        assert str(path[-1]) in exc.entry or str(path[-1]) in exc.msg, exc.msg
    else:
        raise AssertionError("accepted %r at %s" % (value, ".".join(map(str, path))))


@PROPERTY
@given(st.sampled_from([("racks", 0, "slots"), ("racks", 0, "index"), ("fabric", "rack_stride"),
                        ("skus", "lab", "gpu_count"), ("fabric", "mtu")]),
       st.integers(-2 ** 31, 2 ** 31))
def test_counts_make_sense_or_are_refused(path, number):
    data = replaced(path, number)
    try:
        hosts = build_hosts(data)
    except RackDescriptionError as exc:
        assert str(path[-1]) in exc.msg or path[0] in exc.entry, exc.msg
        return
    r1 = [h for h in hosts if h["vars"]["gpufleet_rack"] == "r1"]
    slots = data["racks"][0]["slots"]
    assert slots >= 1 and len(r1) == slots
    assert data["racks"][0]["index"] >= 0 and data["skus"]["lab"]["gpu_count"] >= 0
    assert 256 <= data["fabric"]["mtu"] <= 9216


INVENTORIES = os.path.join(ROOT, "inventories")
SHIPPED = dict((name, open(os.path.join(INVENTORIES, name)).read())
               for name in sorted(os.listdir(INVENTORIES)) if name.endswith(".rack.yml"))
TREES = dict((name, yaml.safe_load(text)) for name, text in SHIPPED.items())
TRIED = {"tree": 0, "text": 0, "spliced": 0, "bytes": 0, "pattern": 0}
OUTCOMES = {"hosts": 0, "RackDescriptionError": 0}
# What an error may name: a field path under a section, the YAML line, the file or the top level.
FIELD = re.compile(r"^(fleet|fabric|skus|racks)\b|^line \d+$|^\(file\)$|^\(top level\)$")
HOST_NAME = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


def _hosts_or_named_error(text):
    """Read ``text`` as the plugin does: hosts, or an error naming a field or line and a fix."""
    try:
        hosts = build_hosts(parse_description(text))
    except RackDescriptionError as exc:
        # An overlap names the rail (or BMC network) by name, and the other network.
        assert FIELD.search(exc.entry) or " overlaps " in exc.msg, exc.msg
        assert exc.msg.startswith("Rack description entry %s is invalid: " % exc.entry), exc.msg
        assert re.search(r"\. Fix: \S", exc.msg), exc.msg
        OUTCOMES["RackDescriptionError"] += 1
        return None
    OUTCOMES["hosts"] += 1
    assert hosts and all(HOST_NAME.match(h["name"]) for h in hosts), [h["name"] for h in hosts]
    for host in hosts:
        _assert_bmc_address(host["vars"]["gpufleet_bmc_address"])
    return hosts


def _assert_bmc_address(address):
    """The oracle for an accepted BMC address: a host, and an IP address where it looks like one."""
    host = urlsplit(address if "://" in address else "https://" + address).hostname
    assert host, address
    if ":" in host or host.rstrip(".").rsplit(".", 1)[-1].isdigit():
        ipaddress.ip_address(host)  # raises for 999.1.1.1


@PROPERTY
@given(st.data())
def test_a_shipped_description_with_one_change_anywhere_is_hosts_or_a_named_error(data):
    name = data.draw(st.sampled_from(sorted(TREES)))
    path = data.draw(st.sampled_from(key_paths(TREES[name])))
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    mutated = mutate(TREES[name], path, action, data.draw(VALUES))
    TRIED["tree"] += 1
    _hosts_or_named_error(yaml.safe_dump(mutated, sort_keys=False))


@PROPERTY
@given(st.text(max_size=300))
def test_arbitrary_text_is_a_named_error(text):
    TRIED["text"] += 1
    _hosts_or_named_error(text)


@PROPERTY
@given(st.sampled_from(sorted(SHIPPED)), st.integers(0, 10 ** 6), st.text(max_size=40))
def test_a_shipped_text_with_text_spliced_in_is_hosts_or_a_named_error(name, where, junk):
    text = SHIPPED[name]
    where %= len(text) + 1
    TRIED["spliced"] += 1
    _hosts_or_named_error(text[:where] + junk + text[where:])


@PROPERTY
@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_a_named_error(raw):
    TRIED["bytes"] += 1
    _hosts_or_named_error(raw)


PATTERN_TEXT = st.text(alphabet="{}[]().:!<>^0123456789dxs_-/@ abrckindeslothmfqzu", max_size=30)
PATTERN_FIELDS = [("fleet", "hostname_pattern"), ("fleet", "bmc", "address"), ("fleet", "bmc", "system_id"),
                  ("fleet", "host_vars", "ansible_host")]


@PROPERTY
@given(st.sampled_from(PATTERN_FIELDS), PATTERN_TEXT)
def test_patterns_expand_to_valid_names_or_are_refused_naming_the_field(path, pattern):
    TRIED["pattern"] += 1
    hosts = _hosts_or_named_error(yaml.safe_dump(mutate(TREES["lab.rack.yml"], path, "replace", pattern)))
    for host in hosts or ():  # no Python object ever reaches a value ({rack.__class__} and the like)
        assert "<class" not in host["vars"]["gpufleet_bmc_system_id"] + host["vars"]["ansible_host"]


def test_report_how_many_inputs_were_tried():
    """Runs last in this file: the counts quoted in docs/reliability.md."""
    print("rack description inputs tried: %s (total %d); outcomes: %s" % (TRIED, sum(TRIED.values()), OUTCOMES))
    assert sum(TRIED.values()) >= EXAMPLES  # the property tests above really ran
