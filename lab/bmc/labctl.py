#!/usr/bin/env python3
"""Start, stop and describe the lab's emulated BMCs (one sushy-tools process per rack).

    python lab/bmc/labctl.py gen-config --racks 4 --nodes 250 --out build/lab-bmc.yml
    python lab/bmc/labctl.py start --config build/lab-bmc.yml     # waits until all answer
    python lab/bmc/labctl.py nodes --config build/lab-bmc.yml     # YAML node list for modules
    python lab/bmc/labctl.py stop --config build/lab-bmc.yml

``start`` writes the CA, server certificate and htpasswd under state_dir first, then one
``serve.py`` per rack (pid in state_dir/pids/<rack>.pid, log in state_dir/logs/<rack>.log).
``stop`` ends exactly those pids.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

import requests
import yaml


from lab.bmc import config as labconfig
from lab.bmc import pki


def _paths(cfg, rack_name):
    state = cfg["state_dir"]
    return (os.path.join(state, "pids", rack_name + ".pid"),
            os.path.join(state, "logs", rack_name + ".log"))


def _url(rack, tls):
    return "%s://%s:%s/redfish/v1/" % ("https" if tls else "http", rack["address"], rack["port"])


def prepare(cfg):
    """CA, certificate and htpasswd, before any rack starts (so racks never race on them)."""
    os.makedirs(cfg["state_dir"], exist_ok=True)
    paths = pki.ensure_pki(os.path.join(cfg["state_dir"], "pki"),
                           [r["address"] for r in cfg["racks"]] + ["127.0.0.1"])
    pki.write_htpasswd(os.path.join(cfg["state_dir"], "htpasswd"), cfg["username"], cfg["password"])
    return paths["ca.pem"]


def start(config_path, cfg, racks, timeout=60):
    ca = prepare(cfg)
    procs = {}
    for rack in racks:
        pid_path, log_path = _paths(cfg, rack["name"])
        os.makedirs(os.path.dirname(pid_path), exist_ok=True)
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        log = open(log_path, "ab")
        proc = subprocess.Popen([sys.executable, "-m", "lab.bmc.serve", "--config",
                                 config_path, "--rack", rack["name"]], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        with open(pid_path, "w") as handle:
            handle.write(str(proc.pid))
        procs[rack["name"]] = proc
    deadline = time.time() + timeout
    for rack in racks:
        url = _url(rack, cfg.get("tls", True))
        while True:
            if procs[rack["name"]].poll() is not None:
                raise SystemExit("rack %s emulator exited (see %s)" % (rack["name"],
                                                                       _paths(cfg, rack["name"])[1]))
            try:
                requests.get(url, verify=ca if cfg.get("tls", True) else False, timeout=2)
                break
            except requests.RequestException:
                if time.time() > deadline:
                    raise SystemExit("rack %s did not answer at %s within %ss" % (
                        rack["name"], url, timeout))
                time.sleep(0.2)
        print("rack %s: %d systems at %s" % (rack["name"], len(labconfig.nodes_of(rack)), url))
    return ca


def stop(cfg, racks):
    for rack in racks:
        pid_path, _log = _paths(cfg, rack["name"])
        if not os.path.exists(pid_path):
            continue
        pid = int(open(pid_path).read().strip())
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.remove(pid_path)
        print("rack %s: stopped (pid %d)" % (rack["name"], pid))


def nodes(cfg, racks):
    """Node entries for the modules' ``nodes`` option (system_id = the emulator's UUID)."""
    result = []
    for rack in racks:
        base = "%s:%s" % (rack["address"], rack["port"])
        for node in labconfig.nodes_of(rack):
            result.append({"name": node["name"], "baseuri": base, "system_id": node["uuid"]})
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("gen-config", help="write a config with N racks of M nodes")
    gen.add_argument("--racks", type=int, default=1)
    gen.add_argument("--nodes", type=int, default=8)
    gen.add_argument("--first-address", type=int, default=1, help="127.0.10.<this> is rack 1")
    gen.add_argument("--port", type=int, default=8443)
    gen.add_argument("--state-dir", default="build/lab-bmc")
    gen.add_argument("--out", required=True)
    for name in ("start", "stop", "nodes"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--config", required=True)
        cmd.add_argument("--rack", action="append", help="only this rack (repeatable)")
    args = parser.parse_args(argv)
    if args.command == "gen-config":
        cfg = labconfig.generate(args.racks, args.nodes, args.first_address, args.port)
        cfg["state_dir"] = args.state_dir
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as handle:
            yaml.safe_dump(cfg, handle, sort_keys=False)
        print(args.out)
        return 0
    cfg = labconfig.load(args.config)
    racks = [labconfig.rack_of(cfg, r) for r in args.rack] if args.rack else cfg["racks"]
    if args.command == "start":
        start(os.path.abspath(args.config), cfg, racks)
    elif args.command == "stop":
        stop(cfg, racks)
    else:
        # The password itself is never printed: a config with password_file names the file.
        out = {"lab_bmc_nodes": nodes(cfg, racks), "lab_bmc_ca": os.path.join(cfg["state_dir"], "pki", "ca.pem"),
               "lab_bmc_username": cfg["username"]}
        if cfg.get("password_file"):
            out["lab_bmc_password_file"] = cfg["password_file"]
        else:
            out["lab_bmc_password"] = cfg["password"]
        yaml.safe_dump(out, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
