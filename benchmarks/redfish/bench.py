#!/usr/bin/env python3
"""Redfish fan-out benchmark: power on + one-time PXE boot + virtual media insert.

    .venv/bin/python benchmarks/redfish/bench.py                      # 4 racks x 250 = 1,000
    .venv/bin/python benchmarks/redfish/bench.py --racks 4 --nodes-per-rack 10 --subset 8  # smoke

Methods (each starts from freshly started emulators, so every node really changes):
  a     one task with the whole node list: redfish_provision (one session per node, workers=W)
  a3    one task per operation with the whole node list (redfish_virtual_media, redfish_boot,
        redfish_power: a session per node per task)
  b     one task per host, delegated to localhost, forks 50 (redfish_provision, baseuri)
  b3    three tasks per host, delegated to localhost, forks 50 (the three modules)
  c     community.general.redfish_command per host, forks 50 (commands VirtualMediaInsert,
        SetOneTimeBoot, PowerOn in one task), on the first --subset nodes
  d     bare thread pool (W threads) issuing the same HTTP calls as (a)
  d3    bare thread pool issuing the same HTTP calls as (a3)
  d-min bare thread pool issuing only the three state-changing calls (basic auth, keep-alive)
Every run is verified afterwards (events: media inserted and power on landed for every node;
every system reads back boot target Pxe) and the emulators' request counts are recorded.
"""
import argparse
import functools
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

import bare_pool  # this folder (the script's own directory is first on sys.path)
from lab.bmc import config as labconfig
from lab.bmc import labctl

VENV_BIN = os.path.join(ROOT, ".venv", "bin")
PLAYBOOKS = os.path.join(HERE, "playbooks")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def media_server(directory, address="127.0.10.250"):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "boot.iso"), "wb") as handle:
        handle.write(b"gpufleet benchmark media\n")
    server = http.server.ThreadingHTTPServer((address, 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://%s:%d/boot.iso" % (address, server.server_address[1])


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.workdir)
        os.makedirs(self.work, exist_ok=True)
        cfg = labconfig.generate(args.racks, args.nodes_per_rack, first_address=args.first_address,
                                 port=args.port, network=args.network)
        cfg.update(state_dir=os.path.join(self.work, "lab"), power_delay=[1, 2],
                   username="admin", password="bench-pw-1")
        self.config_path = os.path.join(self.work, "lab-bmc.yml")
        with open(self.config_path, "w") as handle:
            yaml.safe_dump(cfg, handle)
        self.cfg = labconfig.load(self.config_path)
        # Interleave racks (r1-n001, r2-n001, ...) so a pool spreads over every emulator
        # process, as a fleet spreads over separate BMCs.
        per_rack = [labctl.nodes(self.cfg, [rack]) for rack in self.cfg["racks"]]
        self.nodes = [n for group in zip(*per_rack) for n in group]
        self.server, self.image = media_server(os.path.join(self.work, "media"),
                                               args.network + "250")

    # -- lab --------------------------------------------------------------
    def restart(self):
        labctl.stop(self.cfg, self.cfg["racks"])
        if os.path.exists(self.cfg["events_file"]):
            os.remove(self.cfg["events_file"])
        self.ca = labctl.start(self.config_path, self.cfg, self.cfg["racks"])

    def request_count(self):
        total = 0
        for rack in self.cfg["racks"]:
            url = "https://%s:%s/lab/stats" % (rack["address"], rack["port"])
            total += requests.get(url, verify=self.ca, timeout=10).json()["requests"]
        return total

    def verify(self, nodes):
        """Media inserted and power on landed for every node (events), boot target Pxe."""
        names = set(n["name"] for n in nodes)
        deadline = time.time() + 30
        while True:
            events = [json.loads(line) for line in open(self.cfg["events_file"])]
            inserted = set(e["name"] for e in events if e["event"] == "vmedia_inserted")
            powered = set(e["name"] for e in events if e["event"] == "power_on")
            if (names <= inserted and names <= powered) or time.time() > deadline:
                break
            time.sleep(1)

        def target(node):
            url = "https://%s/redfish/v1/Systems/%s" % (node["baseuri"], node["system_id"])
            rsp = requests.get(url, auth=(self.cfg["username"], self.cfg["password"]),
                               verify=self.ca, timeout=30)
            return rsp.json()["Boot"]["BootSourceOverrideTarget"]

        with ThreadPoolExecutor(max_workers=16) as pool:
            targets = list(pool.map(target, nodes))
        return dict(media=len(names & inserted), power_on=len(names & powered),
                    boot_pxe=targets.count("Pxe"), expected=len(names))

    # -- methods ----------------------------------------------------------
    def playbook(self, name, extra, inventory=None, forks=50):
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
                   ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_HOST_KEY_CHECKING="False")
        extra_path = os.path.join(self.work, "extra.json")
        with open(extra_path, "w") as handle:
            json.dump(extra, handle)
        cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-f", str(forks), "-i",
               inventory or "localhost,", os.path.join(PLAYBOOKS, name), "-e", "@" + extra_path]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit("%s failed:\n%s" % (name, proc.stdout[-4000:]))

    def common(self):
        return dict(rf_user=self.cfg["username"], rf_password=self.cfg["password"],
                    rf_ca=self.ca, rf_image=self.image,
                    ansible_connection="local",
                    ansible_python_interpreter=os.path.join(VENV_BIN, "python"))

    def inventory(self, nodes):
        hosts = dict((n["name"], dict(bmc_baseuri=n["baseuri"], bmc_system_id=n["system_id"]))
                     for n in nodes)
        inv = {"all": {"children": {"bmcs": {"hosts": hosts}}, "hosts": {"localhost": {
            "ansible_connection": "local",
            "ansible_python_interpreter": os.path.join(VENV_BIN, "python")}}}}
        path = os.path.join(self.work, "inventory-%d.yml" % len(nodes))
        with open(path, "w") as handle:
            yaml.safe_dump(inv, handle)
        return path

    def method_a(self, nodes):
        self.playbook("provision_node_list.yml", dict(self.common(), rf_nodes=nodes,
                                                      rf_workers=self.args.workers))

    def method_a3(self, nodes):
        self.playbook("three_tasks_node_list.yml", dict(self.common(), rf_nodes=nodes,
                                                        rf_workers=self.args.workers))

    def method_b(self, nodes):
        self.playbook("provision_per_host.yml", self.common(), inventory=self.inventory(nodes))

    def method_b3(self, nodes):
        self.playbook("three_tasks_per_host.yml", self.common(), inventory=self.inventory(nodes))

    def method_c(self, nodes):
        self.playbook("community_general.yml", self.common(), inventory=self.inventory(nodes))

    def method_d(self, nodes):
        bare_pool.run_provision_calls(nodes, self.cfg["username"], self.cfg["password"], self.ca,
                                      self.image, self.args.workers)

    def method_d3(self, nodes):
        bare_pool.run_same_calls(nodes, self.cfg["username"], self.cfg["password"], self.ca,
                                 self.image, self.args.workers)

    def method_dmin(self, nodes):
        bare_pool.run_minimal(nodes, self.cfg["username"], self.cfg["password"], self.ca,
                              self.image, self.args.workers)

    def run(self, method):
        nodes = self.nodes[:self.args.subset] if method in self.args.subset_methods else self.nodes
        self.restart()
        before = self.request_count()
        start = time.monotonic()
        getattr(self, "method_" + method.replace("-", ""))(nodes)
        wall = time.monotonic() - start
        requests_made = self.request_count() - before
        check = self.verify(nodes)
        result = dict(method=method, nodes=len(nodes), wall_s=round(wall, 2),
                      per_node_ms=round(1000 * wall / len(nodes), 1),
                      requests=requests_made, requests_per_node=round(requests_made / len(nodes), 1),
                      verified=check)
        print(json.dumps(result), flush=True)
        return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racks", type=int, default=4)
    parser.add_argument("--nodes-per-rack", type=int, default=250)
    parser.add_argument("--subset", type=int, default=200, help="nodes for the subset methods")
    parser.add_argument("--subset-methods", default="c", help="methods run on --subset nodes")
    parser.add_argument("--methods", default="a,a3,b,c,d,d3")
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--network", default="127.0.10.", help="racks on <network><n>")
    parser.add_argument("--first-address", type=int, default=11)
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--workdir", default=os.path.join(ROOT, "build", "redfish-bench"))
    parser.add_argument("--out", help="write all results as JSON here")
    args = parser.parse_args(argv)
    args.subset_methods = args.subset_methods.split(",")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the racks are stopped
    bench = Bench(args)
    results = []
    try:
        for method in args.methods.split(","):
            results.append(bench.run(method))
    finally:
        labctl.stop(bench.cfg, bench.cfg["racks"])
        bench.server.shutdown()
    by = dict((r["method"], r) for r in results)
    if "a" in by and "c" in by:
        print("per node: (c)/(a) = %.1fx" % (by["c"]["per_node_ms"] / by["a"]["per_node_ms"]))
    if "a" in by and "d" in by:
        print("per node: (a)/(d) = %.2fx" % (by["a"]["per_node_ms"] / by["d"]["per_node_ms"]))
    if "a3" in by and "c" in by:
        print("per node: (c)/(a3) = %.1fx" % (by["c"]["per_node_ms"] / by["a3"]["per_node_ms"]))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(dict(args=vars(args), results=results), handle, indent=1)
    bad = [r for r in results if r["verified"]["media"] != r["nodes"]
           or r["verified"]["power_on"] != r["nodes"] or r["verified"]["boot_pxe"] != r["nodes"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
