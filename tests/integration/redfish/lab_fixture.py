"""Start emulated racks (lab/bmc) and a media server for the Redfish integration tests.

Everything listens on 127.0.11.x (this area's loopback range) on free ports, lives in a
pytest temp dir, and is stopped at the end of the session.
"""
import functools
import http.server
import importlib
import json
import os
import socket
import subprocess
import threading

import yaml

from tests.helpers import ROOT, VENV_BIN



def load_lab_module(name):
    """A module of the lab's BMC package (lab/bmc)."""
    return importlib.import_module("lab.bmc." + name)


def free_port(address):
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


class Lab:
    """Racks r1 (50 systems, full lab layer) and raw (2 systems, PowerCycle not offered)."""

    def __init__(self, tmp):
        self.tmp = str(tmp)
        self.config_path = os.path.join(self.tmp, "lab-bmc.yml")
        self.cfg = {
            "state_dir": os.path.join(self.tmp, "state"), "username": "admin",
            "password": "lab-pw-123", "tls": True, "power_delay": [1, 2], "vmedia_fetch": "head",
            "events_file": os.path.join(self.tmp, "events.jsonl"),
            "racks": [
                {"name": "r1", "address": "127.0.11.1", "port": free_port("127.0.11.1"),
                 "node_count": 50, "firmware": {"BIOS": "2.1.0", "BMC": "1.4.2"},
                 "nodes": [{"name": "r1-n07", "firmware": {"BIOS": "2.0.9"}}]},
                {"name": "raw", "address": "127.0.11.2", "port": free_port("127.0.11.2"),
                 "node_count": 2, "power_cycle": False},
            ],
        }
        with open(self.config_path, "w") as handle:
            yaml.safe_dump(self.cfg, handle)
        self.ctl = load_lab_module("labctl")
        self.labconfig = load_lab_module("config")

    def start(self):
        cfg = self.labconfig.load(self.config_path)
        self.ca = self.ctl.start(self.config_path, cfg, cfg["racks"])
        self.nodes = self.ctl.nodes(cfg, cfg["racks"][:1])
        self.raw_nodes = self.ctl.nodes(cfg, cfg["racks"][1:])
        return self

    def stop(self):
        cfg = self.labconfig.load(self.config_path)
        self.ctl.stop(cfg, cfg["racks"])

    def events(self):
        path = self.cfg["events_file"]
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle]


class MediaServer:
    """Plain HTTP file server for virtual media images (the BMC checks the URL with HEAD)."""

    def __init__(self, tmp, address="127.0.11.250"):
        self.dir = os.path.join(str(tmp), "media")
        os.makedirs(self.dir, exist_ok=True)
        for name in ("boot.iso", "tools.img"):
            with open(os.path.join(self.dir, name), "wb") as handle:
                handle.write(b"gpufleet test media\n")
        handler = functools.partial(_QuietHandler, directory=self.dir)
        self.server = http.server.ThreadingHTTPServer((address, 0), handler)
        self.base = "http://%s:%d" % (address, self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name):
        return "%s/%s" % (self.base, name)

    def stop(self):
        self.server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def run_playbook(playbook, extra_vars, check=False, timeout=600):
    """Run ansible-playbook with the JSON callback; return (rc, tasks results, raw output)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
    extra_vars = dict(extra_vars, ansible_python_interpreter=os.path.join(VENV_BIN, "python"))
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "playbooks", playbook),
           "-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible-playbook output is not JSON:\n%s\n%s"
                             % (proc.stdout[-3000:], proc.stderr[-3000:]))
    tasks = {}
    for play in data["plays"]:
        for task in play["tasks"]:
            tasks[task["task"]["name"]] = task["hosts"].get("localhost", {})
    return proc.returncode, tasks, proc.stdout
