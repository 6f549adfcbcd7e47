"""Property tests: the rack description loader on generated garbage (hypothesis).

Three properties over the valid description of test_rack.BASE:
- any value anywhere replaced by any JSON value: a RackDescriptionError or hosts, nothing else;
- a typed field given a value of another type: a RackDescriptionError naming that field;
- counts and indexes drawn from all integers: accepted only when they make sense (one host
  per slot, slots at least 1), else an error naming the field.
"""
import copy

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import (
    RackDescriptionError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.rack import build_hosts
from tests.unit.json_strategies import JSON, PROPERTY, is_kind
from tests.unit.plugins.module_utils.inventory.test_rack import BASE


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
