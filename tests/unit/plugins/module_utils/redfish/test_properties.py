"""Property tests: the Redfish readers on generated garbage (hypothesis).

For each reader a SPEC says which fields it reads and their kinds. Resources are generated
with every field valid, absent, or any JSON value; an oracle written here (not the code
under test) lists the fields that are wrong. The property: wrong fields -> a
BmcResponseError naming one of them; no wrong field -> success with the input's values.
Nothing else may escape (no KeyError, AttributeError, TypeError).

Also: error answers of any shape (the error keeps status, method and URL), and image URLs
for virtual media (only http(s) with a host is accepted). ``TRIED`` counts the inputs per
family; the last test prints it (the counts quoted in docs/reliability.md).
"""
import copy
import json
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import (
    boot, firmware, inventory, power, virtual_media,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import Response
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcAuthError, BmcHTTPError, BmcResponseError, OutcomeUnknownError, ParameterError, RedfishError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import POWER_STATES
from tests.unit.json_strategies import EXAMPLES, JSON, PROPERTY, is_kind, maybe_wrong
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree, make_client

TRIED = dict((family, 0) for family in (
    "system", "power", "boot", "media_device", "firmware", "operations", "body", "error_body",
    "image_url"))
OUTCOMES = {}  # "family: outcome" -> count, for the new families


def outcome(family, what):
    key = "%s: %s" % (family, what)
    OUTCOMES[key] = OUTCOMES.get(key, 0) + 1

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
    TRIED["system"] += 1
    facts = judged(lambda: inventory.system_facts(system, "node-1"), SYSTEM, system)
    if facts is not None:
        assert facts["id"] == system["Id"] and facts["power_state"] == system.get("PowerState")
        assert facts["boot"]["target"] == (system.get("Boot") or {}).get("BootSourceOverrideTarget")


@PROPERTY
@given(resource({"PowerState": ("text", True, POWER_STATES)}))
def test_power_state(system):
    TRIED["power"] += 1
    state = judged(lambda: power.state_of(client(), system), {"PowerState": (
        "text", True, POWER_STATES)}, system)
    assert state is None or state == system["PowerState"]


@PROPERTY
@given(resource({"Boot": OVERRIDE}))
def test_boot_override(system):
    TRIED["boot"] += 1
    spec = {"Boot": OVERRIDE}
    current = judged(lambda: boot.current_boot(system, "node-1"), spec, system)
    if current is not None:
        assert current["enabled"] == (system.get("Boot") or {}).get("BootSourceOverrideEnabled")


@PROPERTY
@given(resource(DEVICE))
def test_virtual_media_device(dev):
    TRIED["media_device"] += 1
    path = "/redfish/v1/Systems/1/VirtualMedia/Cd"
    judged(lambda: virtual_media.checked_device(client(), path, dev), DEVICE, dev)


FW = "/redfish/v1/UpdateService/FirmwareInventory"


@PROPERTY
@given(resource(FIRMWARE_ITEM))
def test_firmware_item(item):
    TRIED["firmware"] += 1
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
    TRIED["operations"] += 1
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
    TRIED["body"] += 1
    try:
        data = Response(200, {}, body).json("node-1", "/redfish/v1/Systems/1")
    except BmcResponseError as exc:
        assert "node-1" in exc.msg and "/redfish/v1/Systems/1" in exc.msg
    else:
        assert isinstance(data, dict)


SAFE_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .-", min_size=1, max_size=30)
INFO = st.fixed_dictionaries({}, optional={"Message": JSON | SAFE_TEXT, "MessageId": JSON})
ERROR = st.fixed_dictionaries({}, optional={
    "code": JSON, "message": JSON | SAFE_TEXT,
    "@Message.ExtendedInfo": st.one_of(JSON, INFO, st.lists(st.one_of(INFO, JSON), max_size=3))})
STANDARD = st.builds(lambda m, rest: {"error": dict(rest, **{"@Message.ExtendedInfo": [
    {"Message": m, "MessageId": "Base.1.8.GeneralError"}]})}, SAFE_TEXT, ERROR)
ERROR_BODY = st.one_of(
    STANDARD, STANDARD, ERROR.map(lambda e: {"error": e}), JSON.map(lambda e: {"error": e}), JSON,
).map(lambda v: json.dumps(v).encode()) | st.one_of(
    st.binary(max_size=80),
    st.text(max_size=60).map(lambda t: ("<html><body><h1>%s</h1></body></html>\n" % t).encode()),
)
STATUSES = st.sampled_from([301, 307, 400, 401, 403, 404, 405, 409, 412, 415, 429, 500, 501, 502,
                            503, 504]) | st.integers(300, 599)


def standard_message(body):
    """The oracle: the Message of a well-formed Redfish error body, else None."""
    try:
        infos = json.loads(body.decode("utf-8"))["error"]["@Message.ExtendedInfo"]
        message = infos[0]["Message"]
    except (ValueError, UnicodeDecodeError, KeyError, IndexError, TypeError):
        return None
    return " ".join(message.split()) if isinstance(message, str) and message.strip() else None


@PROPERTY
@given(ERROR_BODY, STATUSES, st.sampled_from(["GET", "POST", "PATCH", "DELETE"]))
def test_error_bodies_of_any_shape_keep_status_method_and_url(body, status, method):
    TRIED["error_body"] += 1
    path = "/redfish/v1/Systems/1"
    transport = FakeTransport().on(method, path, Response(status, {}, body))
    try:
        make_client(transport).request(method, path, {} if method in ("POST", "PATCH") else None)
    except (BmcHTTPError, OutcomeUnknownError) as exc:  # unknown: an action's 502/504
        error = exc
    else:
        raise AssertionError("HTTP %d was not an error" % status)
    msg = error.msg
    assert "HTTP %d" % status in msg and method in msg and path in msg and "node-1" in msg
    assert "\n" not in msg and len(msg) < 800
    outcome("error_body", type(error).__name__)
    if isinstance(error, OutcomeUnknownError):
        assert method != "GET" and status in (502, 504)
        return
    exc = error
    if not isinstance(exc, BmcAuthError):
        assert (exc.details["status"], exc.details["method"], exc.details["url"]) == (
            status, method, path)
        assert exc.details["message_id"] is None or isinstance(exc.details["message_id"], str)
    expected = standard_message(body)
    if expected and not 300 <= status < 400 and not isinstance(exc, BmcAuthError):
        assert expected[:150] in msg
        outcome("error_body", "standard Message shown")


HOSTS = st.sampled_from(["images", "images.example.net", "10.0.0.5", "[fd00::1]", "", "@",
                         "images:8080", "images:99999", "images:x", "u:p@images", "u:p@", "[::1"])
PATHS = st.sampled_from(["", "/", "/x.iso", "/a b.iso", "/x.iso?t=1", "/\tx.iso", "/x\x00.iso"])
URLS = st.builds(
    lambda scheme, sep, host, path: scheme + sep + host + path,
    st.sampled_from(["http", "https", "HTTPS", "file", "ftp", "nfs", "cifs", "smb", ""]),
    st.sampled_from(["://", ":", ":/", ""]), HOSTS, PATHS)
# Mostly right: http(s):// and a host, each part sometimes wrong.
NEAR_URLS = st.builds(
    lambda scheme, host, path: scheme + "://" + host + path,
    st.sampled_from(["http", "https", "HTTP"]) | st.sampled_from(["file", "ftp", "nfs"]),
    st.sampled_from(["images", "images.example.net", "[fd00::1]", "u:p@images:8080"]) | HOSTS,
    st.sampled_from(["/x.iso", "/a/b.img?t=1"]) | PATHS)


def usable_url(url):
    """The oracle: http(s)://[user@]host[:port]/... with no space or control character."""
    if not isinstance(url, str) or re.search(r"[\s\x00-\x1f\x7f]", url):
        return False
    match = re.match(r"(?i)https?://([^/?#]*)", url)
    if not match:
        return False
    hostport = match.group(1).rsplit("@", 1)[-1]
    if hostport.startswith("["):
        host, dummy, port = hostport[1:].partition("]")
        return bool(dummy) and bool(host) and (not port or re.match(r":\d{0,5}$", port) and
                                               int(port[1:] or 0) <= 65535)
    host, dummy, port = hostport.partition(":")
    return bool(host) and (not port or (port.isdigit() and port.isascii() and int(port) <= 65535))


@PROPERTY
@given(NEAR_URLS | NEAR_URLS | URLS | st.text(max_size=40) | JSON)
def test_image_urls_only_http_or_https_with_a_host_are_accepted(url):
    TRIED["image_url"] += 1
    transport = FakeTransport(load_tree("generic"))
    try:
        virtual_media.insert_media(make_client(transport), "1", url, check_mode=True)
    except ParameterError as exc:
        assert not usable_url(url), "refused a usable URL %r: %s" % (url, exc.msg)
        assert exc.msg.startswith("image_url ") and "fix: " in exc.msg and "\n" not in exc.msg
        assert transport.sent == []  # refused before anything was sent
        outcome("image_url", "refused")
    else:
        assert usable_url(url), "accepted %r" % (url,)
        outcome("image_url", "accepted")


def test_report_how_many_inputs_were_tried():
    """Runs last in this file: the counts quoted in docs/reliability.md."""
    print("redfish bad inputs tried: %s (total %d); outcomes: %s"
          % (TRIED, sum(TRIED.values()), dict(sorted(OUTCOMES.items()))))
    ran = dict((family, count) for family, count in TRIED.items() if count)
    if not ran:
        pytest.skip("no property test of this file ran before this one (-k?)")
    assert min(ran.values()) >= min(EXAMPLES, 100), ran  # each one that ran really generated
