"""The lab layer over sushy-tools' emulator (fake driver): what the pipeline needs and the
fake driver lacks. Lab only; never shipped in the collection.

Adds, per rack process:
- SessionService (POST/DELETE Sessions, X-Auth-Token), checked against the same htpasswd
  file as basic auth: sessions spare a bcrypt check per request;
- UpdateService/FirmwareInventory with per-node versions from the config (one item per node
  and component, ``RelatedItem`` pointing at the system; ``$expand=.`` supported);
- one-time boot override that reads back as ``Once`` and clears to ``Disabled`` when the
  system powers on (the fake driver always shows ``Continuous``);
- ``PowerCycle`` reset (the fake driver answers 501), done as the driver's restart;
- events (see events.py) when a power change lands and when media is inserted/ejected, plus
  a background applier that reads systems with a due power change so the change lands
  (and its event fires) without waiting for a client to read the system;
- a system health the lab sets per node (``health_dir``: a BMC reporting Warning or Critical,
  as one does when it sees a failed PSU or fan; the fake driver always says OK);
- ``power_delay`` and ``vmedia_fetch`` (head: check the URL answers; full: download as the
  emulator does; none: accept any URL).
"""
import json
import os
import random
import re
import secrets
import threading
import time

import flask
import requests
from sushy_tools import error as emu_error
from sushy_tools.emulator import auth_basic
from sushy_tools.emulator import main as emu
from sushy_tools.emulator.resources import vmedia as emu_vmedia
from sushy_tools.emulator.resources.systems import fakedriver

from lab.bmc.events import Events

__all__ = ["build_app"]

SYSTEM_RE = re.compile(r"^/redfish/v1/Systems/([^/]+)/?$")
RESET_RE = re.compile(r"^/redfish/v1/Systems/([^/]+)/Actions/ComputerSystem\.Reset/?$")
VMEDIA_RE = re.compile(
    r"^/redfish/v1/Systems/([^/]+)/VirtualMedia/([^/]+)/Actions/VirtualMedia\.(InsertMedia|EjectMedia)/?$")
SESSIONS = "/redfish/v1/SessionService/Sessions"


class LabState:
    def __init__(self, rack, nodes, events, power_delay, power_cycle=True, health_dir=None):
        self.rack = rack
        self.health_dir = health_dir
        self.power_cycle = power_cycle
        self.nodes = dict((n["uuid"], n) for n in nodes)
        self.events = events
        self.power_delay = power_delay
        self.boot_enabled = {}
        self.sessions = {}
        self.requests = 0
        self.lock = threading.Lock()

    def name_of(self, uuid):
        return self.nodes.get(uuid, {}).get("name", uuid)


def _patch_driver(state):
    """Wrap the fake driver: power events, Once clearing, configurable power delay."""
    original_update = fakedriver.FakeDriver._update
    original_set_power = fakedriver.FakeDriver.set_power_state
    original_if_needed = fakedriver.FakeDriver._update_if_needed
    apply_lock = threading.Lock()

    def _update_if_needed(self, system):
        # The fake driver applies a due change on whichever read comes first; with the
        # applier thread and request threads reading at once it would apply (and report) it
        # twice. Re-read under a lock so each change lands exactly once.
        if not system.get("pending_power"):
            return system
        with apply_lock:
            return original_if_needed(self, self._systems[system["uuid"]])

    def _update(self, system, **changes):
        if isinstance(system, str):
            system = self._get(system)
        before = system.get("power_state")
        original_update(self, system, **changes)
        after = system.get("power_state")
        if after != before and after in ("On", "Off"):
            uuid = system["uuid"]
            if after == "On" and state.boot_enabled.get(uuid) == "Once":
                state.boot_enabled[uuid] = "Disabled"  # a one-time override is used up
            state.events.emit("power_" + after.lower(), uuid, system.get("name"), power_state=after)

    def set_power_state(self, identity, reset_type):
        before = self._get(identity).get("power_state")
        original_set_power(self, identity, reset_type)
        system = self._get(identity)
        if before == "On" and system.get("power_state") == "Off":
            # A restart drops power at once (outside _update): report it as it happens.
            state.events.emit("power_off", system["uuid"], system.get("name"), power_state="Off")
        pending = system.get("pending_power")
        if pending:
            low, high = state.power_delay
            pending["apply_time"] = time.time() + random.uniform(low, high)
            self._systems[system["uuid"]] = system

    fakedriver.FakeDriver._update = _update
    fakedriver.FakeDriver._update_if_needed = _update_if_needed
    fakedriver.FakeDriver.set_power_state = set_power_state


def _patch_vmedia(mode):
    def _get_image(self, image_url, auth, verify_media_cert, custom_cert):
        name = os.path.basename(image_url.split("?", 1)[0]) or "image"
        if mode == "head":
            try:
                rsp = requests.head(image_url, auth=auth, verify=False, timeout=10,
                                    allow_redirects=True)
            except requests.RequestException as exc:
                raise emu_error.FishyError("Cannot reach virtual media %s: %s" % (image_url, exc),
                                           code=502)
            if rsp.status_code >= 400:
                raise emu_error.FishyError("Cannot download virtual media: got error %s from "
                                           "the server" % rsp.status_code, code=400)
        return name, image_url

    if mode in ("head", "none"):
        emu_vmedia.StaticDriver._get_image = _get_image


def _firmware_items(state, system_filter=None):
    items = []
    for uuid, node in sorted(state.nodes.items(), key=lambda kv: kv[1]["name"]):
        for component, version in sorted(node["firmware"].items()):
            fid = "%s.%s" % (node["name"], component)
            items.append({
                "@odata.id": "/redfish/v1/UpdateService/FirmwareInventory/" + fid,
                "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
                "Id": fid, "Name": component, "Version": version, "Updateable": True,
                "SoftwareId": component, "Status": {"State": "Enabled", "Health": "OK"},
                "RelatedItem": [{"@odata.id": "/redfish/v1/Systems/" + uuid}],
            })
    return items


def _add_routes(app, state):
    @app.route("/redfish/v1/UpdateService/FirmwareInventory", methods=["GET"])
    def firmware_collection():
        items = _firmware_items(state)
        expand = flask.request.args.get("$expand", "")
        members = items if expand.startswith((".", "*")) else [
            {"@odata.id": i["@odata.id"]} for i in items]
        return flask.jsonify({
            "@odata.id": "/redfish/v1/UpdateService/FirmwareInventory",
            "@odata.type": "#SoftwareInventoryCollection.SoftwareInventoryCollection",
            "Name": "Firmware Collection", "Members@odata.count": len(members),
            "Members": members})

    @app.route("/redfish/v1/UpdateService/FirmwareInventory/<fid>", methods=["GET"])
    def firmware_item(fid):
        for item in _firmware_items(state):
            if item["Id"] == fid:
                return flask.jsonify(item)
        return flask.jsonify({"error": {"code": "Base.1.8.ResourceMissingAtURI",
                                        "message": "No firmware item %s" % fid}}), 404

    @app.route("/redfish/v1/SessionService", methods=["GET"])
    def session_service():
        return flask.jsonify({"@odata.id": "/redfish/v1/SessionService", "Id": "SessionService",
                              "Name": "Session Service", "ServiceEnabled": True,
                              "Sessions": {"@odata.id": SESSIONS}})


def _before(app, state):
    @app.before_request
    def intercept():
        req = flask.request
        match = RESET_RE.match(req.path)
        if match and req.method == "POST" and state.power_cycle and (
                req.get_json(silent=True) or {}).get("ResetType") == "PowerCycle":
            app.systems.set_power_state(match.group(1), "ForceRestart")
            return "", 204
        match = SYSTEM_RE.match(req.path)
        if match and req.method == "PATCH":
            enabled = ((req.get_json(silent=True) or {}).get("Boot") or {}).get(
                "BootSourceOverrideEnabled")
            if enabled:
                flask.g.lab_boot_enabled = (app.systems.uuid(match.group(1)), enabled)
        match = VMEDIA_RE.match(req.path)
        if match and match.group(3) == "EjectMedia":
            flask.g.lab_ejected = app.vmedia.get_device_image_info(
                match.group(1), match.group(2))[1]
        return None


def _after(app, state):
    @app.after_request
    def adjust(rsp):
        req = flask.request
        if rsp.status_code >= 300:
            return rsp
        if req.method == "PATCH" and getattr(flask.g, "lab_boot_enabled", None):
            uuid, enabled = flask.g.lab_boot_enabled
            state.boot_enabled[uuid] = enabled
        match = SYSTEM_RE.match(req.path)
        if match and req.method == "GET":
            _rewrite(rsp, lambda body: _system_view(app, state, body))
        elif req.path.rstrip("/") == "/redfish/v1" and req.method == "GET":
            _rewrite(rsp, lambda body: body.update(SessionService={
                "@odata.id": "/redfish/v1/SessionService"}, Links={"Sessions": {
                    "@odata.id": SESSIONS}}, ProtocolFeaturesSupported={
                        "ExpandQuery": {"ExpandAll": True, "Levels": True, "MaxLevels": 1}}))
        match = VMEDIA_RE.match(req.path)
        if match and req.method == "POST":
            uuid = app.systems.uuid(match.group(1))
            if match.group(3) == "InsertMedia":
                image = (req.get_json(silent=True) or {}).get("Image")
                state.events.emit("vmedia_inserted", uuid, state.name_of(uuid),
                                  device=match.group(2), image=image)
            else:
                state.events.emit("vmedia_ejected", uuid, state.name_of(uuid),
                                  device=match.group(2), image=getattr(flask.g, "lab_ejected", None))
        return rsp


_HEALTHS = ("OK", "Warning", "Critical")


def _health(state, name):
    """The health the lab set for this system (a file under health_dir), else None."""
    if not state.health_dir or not name:
        return None
    try:
        with open(os.path.join(state.health_dir, name)) as handle:
            value = handle.read().strip()
    except OSError:
        return None
    return value if value in _HEALTHS else None


def _system_view(app, state, body):
    health = _health(state, body.get("Name") or state.name_of(body.get("UUID")))
    if health:
        status = body.setdefault("Status", {})
        status["Health"] = status["HealthRollup"] = health
    boot = body.setdefault("Boot", {})
    enabled = state.boot_enabled.get(body.get("UUID"))
    if enabled:
        boot["BootSourceOverrideEnabled"] = enabled
    boot["BootSourceOverrideEnabled@Redfish.AllowableValues"] = ["Disabled", "Once", "Continuous"]
    reset = body.get("Actions", {}).get("#ComputerSystem.Reset", {})
    allowed = reset.get("ResetType@Redfish.AllowableValues")
    if allowed is not None and state.power_cycle and "PowerCycle" not in allowed:
        allowed.append("PowerCycle")


def _rewrite(rsp, change):
    try:
        body = json.loads(rsp.get_data(as_text=True))
    except ValueError:
        return
    change(body)
    rsp.set_data(json.dumps(body, indent=1))


class SessionMiddleware:
    """X-Auth-Token sessions in front of the emulator's basic-auth middleware."""

    def __init__(self, basic_app, raw_app, auth_file, state):
        self.basic_app = basic_app
        self.raw_app = raw_app
        self.auth_file = auth_file
        self.state = state

    def __call__(self, env, start_response):
        path = env.get("PATH_INFO", "").rstrip("/")
        token = env.get("HTTP_X_AUTH_TOKEN")
        if path == "/lab/stats":  # lab only: request count, for benchmarks
            return _json(start_response, "200 OK", {"requests": self.state.requests})
        with self.state.lock:
            self.state.requests += 1
        if path == SESSIONS and env["REQUEST_METHOD"] == "POST":
            return self._login(env, start_response)
        if token is None:
            return self.basic_app(env, start_response)
        if token not in self.state.sessions:
            return _json(start_response, "401 Unauthorized", {"error": {
                "code": "Base.1.8.NoValidSession", "message": "Session token is not valid"}})
        if path.startswith(SESSIONS + "/") and env["REQUEST_METHOD"] == "DELETE":
            sid = path.rsplit("/", 1)[-1]
            with self.state.lock:
                for tok, known in list(self.state.sessions.items()):
                    if known == sid:
                        del self.state.sessions[tok]
            start_response("204 No Content", [])
            return [b""]
        return self.raw_app(env, start_response)

    def _login(self, env, start_response):
        try:
            size = int(env.get("CONTENT_LENGTH") or 0)
            body = json.loads(env["wsgi.input"].read(size) or b"{}")
            auth_basic.authenticate(self.auth_file, body.get("UserName") or "",
                                    (body.get("Password") or "").encode())
        except (ValueError, emu_error.FishyError):
            return _json(start_response, "401 Unauthorized", {"error": {
                "code": "Base.1.8.GeneralError", "message": "Invalid credentials"}})
        token, sid = secrets.token_hex(16), secrets.token_hex(4)
        with self.state.lock:
            self.state.sessions[token] = sid
        return _json(start_response, "201 Created", {
            "@odata.id": SESSIONS + "/" + sid, "Id": sid, "UserName": body.get("UserName")},
            [("X-Auth-Token", token), ("Location", SESSIONS + "/" + sid)])


def _json(start_response, status, body, headers=()):
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data)))] + list(headers))
    return [data]


def _applier(app, state, interval):
    """Read systems whose power change is due, so it lands without a client read."""
    def loop():
        driver = app.systems
        while True:
            time.sleep(interval)
            now = time.time()
            for uuid in list(state.nodes):
                try:
                    system = driver._systems[uuid]
                    pending = system.get("pending_power")
                    if pending and now >= pending["apply_time"]:
                        driver._get(uuid)
                except Exception as exc:  # keep applying for the other systems
                    app.logger.warning("lab applier: %s: %s", uuid, exc)

    threading.Thread(target=loop, name="lab-bmc-applier", daemon=True).start()


def build_app(cfg, rack, nodes, auth_file, state_dir):
    """Configure the emulator's Flask app for one rack and add the lab layer.

    ``state_dir`` holds the emulator's SQLite state; serve.py puts it in /dev/shm because the
    fake driver commits to SQLite on every read that applies a change and on every write.
    """
    events = Events(rack["name"], cfg.get("hook_url"), cfg.get("events_file"))
    state = LabState(rack["name"], nodes, events, cfg.get("power_delay") or [1, 11],
                     rack.get("power_cycle", True), cfg.get("health_dir"))
    _patch_driver(state)
    _patch_vmedia(cfg.get("vmedia_fetch", "head"))
    app = emu.app
    app.configure(extra_config={
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_STATE_DIR": state_dir,
        "SUSHY_EMULATOR_AUTH_FILE": auth_file,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [
            {"uuid": n["uuid"], "name": n["name"], "power_state": n["power_state"],
             "external_notifier": False, "nics": [{"mac": n["mac"]}]} for n in nodes],
    })
    _add_routes(app, state)
    _before(app, state)
    _after(app, state)
    basic = app.wsgi_app
    app.wsgi_app = SessionMiddleware(basic, basic.app, auth_file, state)
    _applier(app, state, float(cfg.get("apply_interval", 1.0)))
    return app, state
