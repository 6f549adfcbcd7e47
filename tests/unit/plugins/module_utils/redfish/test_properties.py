"""Property tests: the Redfish readers on generated garbage (hypothesis).

For each reader a SPEC says which fields it reads and their kinds. Resources are generated
with every field valid, absent, or any JSON value; an oracle written here (not the code
under test) lists the fields that are wrong. The property: wrong fields -> a
BmcResponseError naming one of them; no wrong field -> success with the input's values.
Nothing else may escape (no KeyError, AttributeError, TypeError).
"""
import copy

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import (
    boot, firmware, inventory, power, virtual_media,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import Response
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError, RedfishError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import POWER_STATES
from tests.unit.json_strategies import JSON, PROPERTY, is_kind, maybe_wrong
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, make_client

# field -> kind, (kind, required), (kind, required, choices), {nested spec}, ("objects", spec)
STATUS = {"State": "text", "Health": "text", "HealthRollup": "text", "HealthRollUp": "text"}
OVERRIDE = {"BootSourceOverrideTarget": "text", "BootSourceOverrideEnabled": "text",
            "BootSourceOverrideMode": "text"}
BOOT = dict(OVERRIDE, **{"BootSourceOverrideTarget@Redfish.AllowableValues": "texts"})
SYSTEM = {
    "Id": ("text", True), "Name": "text", "Manufacturer": "text", "Model": "text",
    "SerialNumber": "text", "SKU": "text", "UUID": "text", "BiosVersion": "text",
    "PowerState": ("text", False, POWER_STATES), "Status": STATUS, "Boot": BOOT,
    "MemorySummary": {"TotalSystemMemoryGiB": "number"}, "ProcessorSummary": {"Count": "integer"},
}
TARGET = {"target": ("text", True)}
DEVICE = {"Inserted": "flag", "Image": "text", "MediaTypes": "texts",
          "Actions": {"#VirtualMedia.InsertMedia": TARGET, "#VirtualMedia.EjectMedia": TARGET}}
FIRMWARE_ITEM = {"Id": ("text", True), "Name": "text", "Version": "text", "SoftwareId": "text",
                 "Updateable": "flag", "Status": {"Health": "text"},
                 "RelatedItem": ("objects", {"@odata.id": ("text", True)})}


def _rule(rule):
    if isinstance(rule, str):
        return rule, False, None
    return (tuple(rule) + (False, None))[:3]


def resource(spec):
    """A dict with each spec field valid, absent or garbage, plus unknown extra keys."""
    fields = {}
    for key, rule in spec.items():
        if isinstance(rule, dict):
            fields[key] = st.one_of(resource(rule), JSON)
        elif isinstance(rule, tuple) and rule[0] == "objects":
            fields[key] = st.one_of(st.lists(st.one_of(resource(rule[1]), JSON), max_size=3), JSON)
        elif _rule(rule)[0] == "texts":
            fields[key] = st.one_of(st.lists(st.text(max_size=8), max_size=3), JSON)
        else:
            kind, dummy, choices = _rule(rule)
            fields[key] = st.sampled_from(choices) | JSON if choices else maybe_wrong(kind)
    extra = st.dictionaries(st.text(max_size=8), JSON, max_size=2)
    return st.builds(lambda e, f: dict(e, **f), extra, st.fixed_dictionaries({}, optional=fields))


def wrong_fields(spec, data, prefix=""):
    """The oracle: names of the fields of ``data`` that break ``spec``."""
    if not isinstance(data, dict):
        return [prefix.rstrip(".") or "(the resource)"]
    bad = []
    for key, rule in spec.items():
        value, name = data.get(key), prefix + key
        if isinstance(rule, dict):
            bad += [] if value is None else wrong_fields(rule, value, name + ".")
        elif isinstance(rule, tuple) and rule[0] == "objects":
            if value is not None and not isinstance(value, list):
                bad.append(name)
            for index, item in enumerate(value if isinstance(value, list) else []):
                bad += wrong_fields(rule[1], item, "%s[%d]." % (name, index))
        elif _rule(rule)[0] == "texts":
            if value is not None and not isinstance(value, list):
                bad.append(name)
            bad += ["%s[%d]" % (name, i) for i, v in enumerate(value if isinstance(value, list)
                                                               else []) if not isinstance(v, str)]
        else:
            kind, required, choices = _rule(rule)
            if value is None:
                bad += [name] if required else []
            elif not is_kind(value, kind) or (choices and value not in choices):
                bad.append(name)
    return bad


def judged(call, spec, data):
    """Run ``call``; assert the error/success the oracle predicts; return the result."""
    bad = wrong_fields(spec, data)
    try:
        result = call()
    except BmcResponseError as exc:
        assert bad, "refused a valid resource: %s" % exc.msg
        assert exc.details["field"] in bad and exc.details["field"] in exc.msg
        return None
    assert not bad, "accepted garbage in %s" % bad
    return result


def client(tree=None):
    return make_client(FakeTransport(tree or {}))


@PROPERTY
@given(resource(SYSTEM))
def test_system_facts(system):
    facts = judged(lambda: inventory.system_facts(system, "node-1"), SYSTEM, system)
    if facts is not None:
        assert facts["id"] == system["Id"] and facts["power_state"] == system.get("PowerState")
        assert facts["boot"]["target"] == (system.get("Boot") or {}).get("BootSourceOverrideTarget")


@PROPERTY
@given(resource({"PowerState": ("text", True, POWER_STATES)}))
def test_power_state(system):
    state = judged(lambda: power.state_of(client(), system), {"PowerState": (
        "text", True, POWER_STATES)}, system)
    assert state is None or state == system["PowerState"]


@PROPERTY
@given(resource({"Boot": OVERRIDE}))
def test_boot_override(system):
    spec = {"Boot": OVERRIDE}
    current = judged(lambda: boot.current_boot(system, "node-1"), spec, system)
    if current is not None:
        assert current["enabled"] == (system.get("Boot") or {}).get("BootSourceOverrideEnabled")


@PROPERTY
@given(resource(DEVICE))
def test_virtual_media_device(dev):
    path = "/redfish/v1/Systems/1/VirtualMedia/Cd"
    judged(lambda: virtual_media.checked_device(client(), path, dev), DEVICE, dev)


FW = "/redfish/v1/UpdateService/FirmwareInventory"


@PROPERTY
@given(resource(FIRMWARE_ITEM))
def test_firmware_item(item):
    tree = {"/redfish/v1/": {"UpdateService": {"@odata.id": "/redfish/v1/UpdateService"}},
            "/redfish/v1/UpdateService": {"FirmwareInventory": {"@odata.id": FW}},
            FW: {"Members": [{"@odata.id": FW + "/bmc"}]}, FW + "/bmc": item}
    items = judged(lambda: firmware.firmware_inventory(client(tree), "/redfish/v1/Systems/1"),
                   FIRMWARE_ITEM, item)
    if items:
        assert items[0]["id"] == item["Id"] and items[0]["version"] == item.get("Version")


def _generic_with(system):
    tree = load_tree("generic")
    base = tree["/redfish/v1/Systems/1"]
    links = dict((k, base[k]) for k in ("@odata.id", "Actions", "VirtualMedia", "Links"))
    tree["/redfish/v1/Systems/1"] = dict(system, **links)
    return tree


@PROPERTY
@given(resource(SYSTEM), st.sampled_from(["power", "boot", "media", "facts"]))
def test_whole_operations_fail_only_with_redfish_errors(system, operation):
    """The module-level functions on a garbage system: a RedfishError or a result."""
    run = {
        "power": lambda c: power.set_power(c, "1", "on", wait=False),
        "boot": lambda c: boot.set_boot(c, "1", "pxe", "once"),
        "media": lambda c: virtual_media.insert_media(c, "1", "http://x/boot.iso"),
        "facts": lambda c: inventory.gather(c, "1"),
    }[operation]
    try:
        run(client(_generic_with(copy.deepcopy(system))))
    except RedfishError as exc:
        assert exc.msg and "\n" not in exc.msg


@PROPERTY
@given(st.binary(max_size=64) | JSON.map(lambda v: repr(v).encode()))
def test_response_body(body):
    try:
        data = Response(200, {}, body).json("node-1", "/redfish/v1/Systems/1")
    except BmcResponseError as exc:
        assert "node-1" in exc.msg and "/redfish/v1/Systems/1" in exc.msg
    else:
        assert isinstance(data, dict)
