"""The lab manager process: BMC event hook + artifact server + per-node workers.

    python -m twin.daemon --config build/lab/lab.yml

Started in the background by ``gpufleet lab up``; logs to ``<state_dir>/manager.log``.
Events of one node are applied in order by that node's worker; nodes proceed in
parallel. ``GET /nodes`` returns every node's record (used by ``gpufleet lab status``).
"""
import argparse
import functools
import http.server
import json
import logging
import os
import queue
import sys
import threading


import requests

from lab.twin import config as lab_config
from lab.twin import powersave
from lab.twin.docker import Docker
from lab.twin.errors import LabError
from lab.twin.media import Installer
from lab.twin.nodes import NodeManager, NodeStore

LOG = logging.getLogger("gpufleet.lab.manager")


def redfish_boot_reader(cfg, ca_path):
    """Read a node's boot override from its BMC, as firmware would at power-on."""
    session = requests.Session()
    session.auth = (cfg.bmc["username"], cfg.bmc_password)

    def read(node):
        url = "%s/redfish/v1/Systems/%s" % (cfg.node(node).bmc_url, node)
        try:
            # verify per request: requests lets REQUESTS_CA_BUNDLE override Session.verify
            rsp = session.get(url, timeout=15, verify=ca_path)
            rsp.raise_for_status()
            boot = rsp.json().get("Boot") or {}
        except (requests.RequestException, ValueError) as exc:
            raise LabError("Node manager: cannot read the boot override of %s at %s: %s" % (node, url, exc))
        return {"target": boot.get("BootSourceOverrideTarget"), "enabled": boot.get("BootSourceOverrideEnabled")}

    return read


class Workers:
    """One queue and thread per node, so a slow install never delays other nodes."""

    def __init__(self, manager):
        self.manager = manager
        self.queues = {}
        self.lock = threading.Lock()

    def submit(self, event):
        node = event.get("name") or "?"
        with self.lock:
            if node not in self.queues:
                self.queues[node] = queue.Queue()
                threading.Thread(target=self._loop, args=(self.queues[node],), daemon=True,
                                 name="node-" + node).start()
        self.queues[node].put(event)

    def _loop(self, events):
        while True:
            event = events.get()
            try:
                self.manager.handle(event)
                LOG.info("applied %s to %s", event.get("event"), event.get("name"))
            except LabError as exc:
                LOG.error("event %s for %s failed: %s", event.get("event"), event.get("name"), exc)
            except Exception:  # keep the worker alive for the next event
                LOG.exception("event %r crashed", event)


class HookHandler(http.server.BaseHTTPRequestHandler):
    workers = None
    store = None
    cfg = None

    def log_message(self, fmt, *args):
        LOG.debug(fmt, *args)

    def _reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 (http.server API)
        if self.path.rstrip("/") != "/events":
            return self._reply(404, {"error": "POST events to /events"})
        try:
            event = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError:
            return self._reply(400, {"error": "body is not JSON"})
        self.workers.submit(event)
        return self._reply(202, {"accepted": True})

    def do_GET(self):  # noqa: N802
        if self.path.rstrip("/") == "/nodes":
            return self._reply(200, {n.name: self.store.get(n.name) for n in self.cfg.nodes})
        return self._reply(404, {"error": "GET /nodes"})


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True, name=str(server.server_address)).start()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    cfg = lab_config.load(args.config)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    docker = Docker()
    store = NodeStore(cfg.path("nodes"))
    installer = Installer(docker, cfg.image_public_key, cfg.path("media"), cfg.docker["disk_repository"])
    manager = NodeManager(cfg, docker, installer, redfish_boot_reader(cfg, cfg.bmc_ca), store)
    HookHandler.workers, HookHandler.store, HookHandler.cfg = Workers(manager), store, cfg
    address = cfg.manager["address"]
    hooks = http.server.ThreadingHTTPServer((address, int(cfg.manager["hook_port"])), HookHandler)
    files = http.server.ThreadingHTTPServer(
        (address, int(cfg.manager["artifact_port"])),
        functools.partial(http.server.SimpleHTTPRequestHandler, directory=cfg.artifacts_root))
    serve(files)
    powersave.start_relay(cfg.powersave_dir, cfg.controller_spool)
    LOG.info("node manager: hooks on %s, artifacts %s from %s", cfg.hook_url, cfg.artifact_url, cfg.artifacts_root)
    hooks.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
